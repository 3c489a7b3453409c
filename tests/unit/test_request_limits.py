"""Every request limit, decided before any work: characters for the texts, encoded bytes for user_info and
the whole request (check_ask), and size and JSON nesting for any body (the API's body limits)."""

from __future__ import annotations

import json
import random

import msgspec
import pytest

from assist.api.body_limits import MAX_JSON_DEPTH, nesting_exceeds
from assist.contracts import REQUEST_BYTES, AskRequest, InvalidRequest, check_ask
from assist.settings import Settings

S = Settings()


def ask(**fields) -> AskRequest:
    return AskRequest(**{"session_id": "s", "message": "hello", **fields})


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"message": "é" * 100_000}, "message is 100000 characters; the limit is 8000"),
        ({"message": "😀" * 8001}, "message is 8001 characters; the limit is 8000"),
        ({"message": " \n\t "}, "message is blank"),
        ({"message": "\u200b\ufeff\u2060\u200d"}, "message is blank (no visible character)"),
        ({"message": "\u3164 \u2800\u0301"}, "message is blank (no visible character)"),
        ({"extra_context": "x" * 16_001}, "extra_context is 16001 characters; the limit is 16000"),
        ({"editor_content": "ß" * 32_001}, "editor_content is 32001 characters; the limit is 32000"),
        ({"user_info": {"name": "é" * 5000}}, "user_info is 10011 bytes as JSON; the limit is 8192"),
    ],
)
def test_each_field_over_its_limit_is_refused_saying_which_and_by_how_much(fields, detail):
    with pytest.raises(InvalidRequest) as err:
        check_ask(ask(**fields), S)
    assert detail in str(err.value)


def test_characters_are_counted_as_characters_and_bytes_are_bounded_by_the_request_budget():
    # every field at its character limit in 4-byte characters: accepted, and encodes under the budget
    full = ask(message="😀" * 8000, extra_context="😀" * 16_000, user_info={"n": "é" * 4000})
    check_ask(full, S)
    assert len(msgspec.json.encode(full)) <= REQUEST_BYTES
    # fields within their own limits whose sum is over the budget (characters JSON escapes six-fold)
    over = ask(extra_context="\x01" * 16_000, editor_content="\x01" * 10_000)
    with pytest.raises(InvalidRequest, match="limit is 128 KB: shorten editor_content"):
        check_ask(over, S)


def test_limits_follow_the_settings():
    loose = S.with_(api={"max_message_chars": 200_000, "max_editor_content_chars": 10**6})
    check_ask(ask(message="é" * 20_000), loose)
    with pytest.raises(InvalidRequest, match="the request is 195 KB encoded"):
        check_ask(ask(message="é" * 100_000), loose)


def nested(depth: int, inner: object = 1) -> object:
    for i in range(depth):
        inner = [inner] if i % 2 else {"k": inner}
    return inner


@pytest.mark.parametrize("depth", [0, 1, MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH])
def test_nesting_up_to_the_limit_passes(depth):
    assert not nesting_exceeds(json.dumps({"user_info": nested(depth - 1)} if depth else 1).encode())


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(nested(MAX_JSON_DEPTH + 1)).encode(),
        b'{"session_id":"s","message":"hi","zz":' + b"[" * 5000 + b"]" * 5000 + b"}",
        b"[" * 100_000,  # never closed: still a level each for the decoder
        b'{"a":"x"}' + b"{" * (MAX_JSON_DEPTH + 1),
    ],
)
def test_deeper_nesting_is_found(body):
    assert nesting_exceeds(body)


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"message": "[" * 10_000 + "{" * 10_000}).encode(),  # brackets in a string are text
        json.dumps({'a\\"[[': '\\"' + "[" * 100}).encode(),  # escaped quotes do not end the string
        json.dumps([[] for _ in range(50_000)]).encode(),  # wide, not deep
    ],
)
def test_brackets_inside_strings_and_wide_bodies_are_not_depth(body):
    assert not nesting_exceeds(body)


def test_nesting_matches_the_decoded_depth_on_random_documents():
    rng = random.Random(19)
    leaves = ['a[\\"{\\\\', 1, None, "[" * 40, "}]" * 40, '\\\\]"\\\\"[[']

    def doc(depth: int) -> object:
        if depth == 0 or rng.random() < 0.1:
            return rng.choice(leaves)
        if rng.random() < 0.5:
            return [doc(depth - 1) for _ in range(rng.randint(0, 2))]
        return {'k[\\"': doc(depth - 1), "z": rng.choice(["{", 3])}

    def depth(value: object) -> int:
        if isinstance(value, dict | list):
            return 1 + max(map(depth, value.values() if isinstance(value, dict) else value), default=0)
        return 0

    for _ in range(1000):
        value = doc(rng.randint(0, 40))
        body = json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()
        for limit in (5, MAX_JSON_DEPTH):
            assert nesting_exceeds(body, limit) == (depth(value) > limit), (body[:200], limit)


def test_a_message_with_one_visible_character_among_invisible_ones_passes():
    check_ask(ask(message="\u200b¿\ufeff"), Settings())
