"""The chat completions body as the engine's request: message, session, refusals (pure translation)."""

from __future__ import annotations

import msgspec
import pytest

from assist.api.openai import ChatRequest, OpenAIError, to_ask


def chat(**body) -> ChatRequest:
    return msgspec.convert({"model": "assist", **body}, ChatRequest)


CONVERSATION = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is a model slot?"},
    {"role": "assistant", "content": "A model per kind of answer [1]."},
    {"role": "user", "content": [{"type": "text", "text": "And the light one?"}]},
]


def test_the_last_user_message_is_the_message_and_the_first_names_the_session():
    whole = to_ask(chat(messages=CONVERSATION), None, "local:me")
    first = to_ask(chat(messages=CONVERSATION[:2]), None, "local:me")
    assert whole.message == "And the light one?"
    assert whole.session_id == first.session_id  # the resent conversation continues its session
    assert whole.session_id.startswith("chat-")
    assert to_ask(chat(messages=CONVERSATION), None, "local:you").session_id != whole.session_id


def test_header_then_user_then_hash():
    assert to_ask(chat(messages=CONVERSATION, user="u-1"), "h-1", "local:me").session_id == "h-1"
    assert to_ask(chat(messages=CONVERSATION, user="u-1"), None, "local:me").session_id == "u-1"


def test_engine_fields_travel_in_the_body():
    req = to_ask(chat(messages=CONVERSATION, extra_context="plan=pro", query_type="PLATFORM"), None, "local:me")
    assert (req.extra_context, req.query_type.value) == ("plan=pro", "PLATFORM")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"n": 2}, "n"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"logprobs": True}, "logprobs"),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        ({"user": "me@example.com"}, "user"),
        ({"messages": [*CONVERSATION, {"role": "assistant", "content": "x"}]}, "messages"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content",
        ),
    ],
)
def test_what_cannot_be_honoured_is_a_400_naming_the_parameter(body, param):
    with pytest.raises(OpenAIError) as err:
        to_ask(chat(**{"messages": CONVERSATION, **body}), None, "local:me")
    assert (err.value.status, err.value.param) == (400, param)


def test_sampling_knobs_are_ignored():
    body = {"messages": CONVERSATION, "temperature": 0.2, "max_tokens": 10, "stop": ["\n"], "seed": 1}
    assert to_ask(msgspec.convert({"model": "assist", **body}, ChatRequest), None, "local:me").message


def test_an_unknown_model_is_a_404():
    with pytest.raises(OpenAIError) as err:
        to_ask(msgspec.convert({"model": "gpt-4o", "messages": CONVERSATION}, ChatRequest), None, "local:me")
    assert (err.value.status, err.value.code) == (404, "model_not_found")
