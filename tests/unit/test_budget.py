"""A prompt that fits its window, keeping what matters most (ADR 0079); counted here with the character rule,
so the test needs no tokenizer file; the exact counts a counter keeps (ADR 0097)."""

from __future__ import annotations

from typing import Any

from tokenizers import Tokenizer, models, pre_tokenizers

from assist.answer.budget import (
    PER_MESSAGE,
    KeptCounts,
    Material,
    TokenCounter,
    fit,
    fit_bounded,
    prompt_tokenizer_file,
)
from assist.contracts import Chunk, QueryType
from assist.doctor import embedder_state
from assist.llm.window import Window
from assist.settings import Settings

COUNT = TokenCounter("chars")  # ceil(chars / 1.8)


def chunk(i: int, chars: int, doc: str = "d") -> Chunk:
    return Chunk(
        id=f"{doc}#s:{i}", doc_id=doc, title=f"T{i}", heading="H", text=f"passage {i} " + "x" * chars, score=1.0
    )


def window_for(limit: int) -> Window:
    w = Window(num_ctx=limit, num_predict=0)
    return Window(num_ctx=limit + (limit - w.limit()), num_predict=0)


def test_the_limit_leaves_the_output_the_template_and_a_margin() -> None:
    w = Window(8192, 1024)
    assert w.limit() == 8192 - 1024 - 12 - 246


def test_everything_fits_nothing_is_dropped() -> None:
    m = Material(QueryType.RETRIEVAL, "Q?", passages=[chunk(1, 100), chunk(2, 100)])
    p = fit(m, Window(8192, 1024), COUNT)

    assert p.dropped == {}
    assert [c.id for c in p.chunks] == ["d#s:1", "d#s:2"]
    assert p.tokens == sum(COUNT.count(x["content"]) + PER_MESSAGE for x in p.messages)


def test_passages_go_by_rank_then_the_documents_then_the_corpus_lines() -> None:
    corpus = (
        "<corpus>\nThe index holds 40 documents.\n" + "\n".join(f"- ADR.{i} a title" for i in range(40)) + "\n</corpus>"
    )
    m = Material(
        QueryType.RETRIEVAL,
        "List the ADRs?",
        passages=[chunk(i, 400) for i in range(1, 4)],
        documents=[chunk(i, 400, doc="adr") for i in range(1, 4)],
        corpus=corpus,
    )
    p = fit(m, window_for(1600), COUNT)

    assert [c.id for c in p.chunks if c.doc_id == "d"] == ["d#s:1", "d#s:2", "d#s:3"]  # every passage kept
    assert 0 < p.dropped["document_chunks"] < 3
    assert p.dropped["corpus_lines"] > 0
    assert p.tokens <= p.window.limit()
    body = p.messages[-1]["content"]
    assert "more lines not shown" in body
    assert body.count("</corpus>") == 1
    assert next(c.id for c in p.chunks).startswith("adr#")  # documents first in the prompt's numbering


def test_the_system_prompt_and_the_question_stay_whatever_else_goes() -> None:
    m = Material(QueryType.RETRIEVAL, "What is the burst limit?", passages=[chunk(i, 3000) for i in range(5)])
    p = fit(m, window_for(400), COUNT)

    assert p.chunks == []
    assert len(p.dropped["passages"]) == 5
    assert p.messages[0]["role"] == "system"
    assert p.messages[-1]["content"].endswith("Question: What is the burst limit?")


def test_the_newest_turns_of_the_conversation_are_kept() -> None:
    turns = []
    for i in range(6):
        turns += [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"answer {i} " + "y" * 600},
        ]
    p = fit(Material(QueryType.CONVERSATIONAL, "Shorter?", conversation=turns), window_for(900), COUNT)

    kept = [x["content"][:8] for x in p.messages if x["role"] == "assistant"]
    assert p.dropped["history_turns"] == 6 - len(kept) > 0
    assert kept == [f"answer {i}" for i in range(6 - len(kept), 6)]
    assert p.messages[-1] == {"role": "user", "content": "Shorter?"}


def test_account_data_and_editor_content_get_the_rest_cut_with_a_marker() -> None:
    data = "day,calls\n" + "\n".join(f"2026-01-{d:02d},{1000 + d}" for d in range(1, 29)) * 20
    p = fit(Material(QueryType.PLATFORM, "How much?", extra_context=data), window_for(1200), COUNT)
    code = fit(
        Material(
            QueryType.CODE_GENERATION, "Split it.", passages=[chunk(1, 200)], editor_content="def f(): pass\n" * 900
        ),
        window_for(1200),
        COUNT,
    )

    assert 0 < p.dropped["extra_context_chars"] < len(data)
    assert "more characters not shown: the prompt's token budget]" in p.messages[-1]["content"]
    assert p.tokens <= p.window.limit()
    assert code.chunks
    assert code.dropped["editor_chars"] > 0
    assert "passages" not in code.dropped
    assert code.tokens <= code.window.limit()


def test_the_prompt_tokenizer_named_by_its_setting_is_the_one_counted_with_and_the_one_doctor_reports(tmp_path):
    named = tmp_path / "qwen3-tokenizer.json"
    named.write_text("{}")
    s = Settings.from_env({}).with_(ollama={"prompt_tokenizer": str(named)}, embed={"model_dir": str(tmp_path / "m")})
    assert prompt_tokenizer_file(s) == named
    assert embedder_state(s).prompt_tokenizer is True  # not beside the embedding model, yet the one in use


class Exact(TokenCounter):
    """Stands for the exact tokenizer: a tighter count than the bound (chars / 4), and it says when it is asked."""

    def __init__(self) -> None:
        super().__init__("exact")
        self.loads = 0

    def count(self, text: str) -> int:
        return -(-len(text) // 4)

    def prefix(self, text: str, tokens: int) -> str:
        return text[: max(tokens, 0) * 4]

    def __call__(self) -> TokenCounter:
        self.loads += 1
        return self


def test_the_exact_tokenizer_is_loaded_only_when_the_upper_bound_says_the_prompt_may_not_fit() -> None:
    exact = Exact()
    small = Material(QueryType.RETRIEVAL, "Q?", passages=[chunk(1, 100), chunk(2, 100)])
    p = fit_bounded(small, Window(8192, 1024), exact)
    assert exact.loads == 0  # the bound fits: no file read
    assert p.dropped == {}
    assert p.tokenizer.startswith("chars/1.8")
    assert [c.id for c in p.chunks] == ["d#s:1", "d#s:2"]

    passages = [chunk(i, 400) for i in range(6)]
    near = Material(QueryType.RETRIEVAL, "Q?", passages=passages)
    window = window_for(1200)  # the bound keeps fewer than six passages; the exact count keeps them all
    assert fit(near, window, COUNT).dropped
    p = fit_bounded(near, window, exact)
    assert exact.loads == 1
    assert p.tokenizer == "exact"
    assert p.dropped == {}
    assert len(p.chunks) == 6


class Counted:
    """A real tokenizer (whitespace words), with the number of texts it was asked to encode."""

    def __init__(self) -> None:
        self.tok = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
        self.tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
        self.encoded = 0

    def encode(self, text: str, add_special_tokens: bool = True) -> Any:
        self.encoded += 1
        return self.tok.encode(text, add_special_tokens=add_special_tokens)


def test_an_exact_count_is_kept_so_a_text_fitted_again_is_not_encoded_again() -> None:
    tok = Counted()
    counter = TokenCounter("words", tok)
    turn = "the answer of an earlier turn " * 50
    assert counter.count(turn) == 300
    assert counter.count(turn) == 300  # the next turn's prompt carries it again
    assert tok.encoded == 1
    assert counter.count(turn + "and more") == 302  # another text is counted, not looked up
    assert tok.encoded == 2


def test_kept_counts_hold_at_most_their_characters_the_least_recently_used_go_first() -> None:
    kept = KeptCounts(10)
    kept.put("aaaa", 1)
    kept.put("bbbb", 2)
    assert kept.get("aaaa") == 1  # now the most recently used
    kept.put("cccc", 3)  # 12 characters: "bbbb" goes
    assert (kept.get("aaaa"), kept.get("bbbb"), kept.get("cccc")) == (1, None, 3)
    kept.put("x" * 11, 4)  # longer than all it may hold: not kept, nothing else goes
    assert (kept.get("x" * 11), kept.get("aaaa"), kept.get("cccc")) == (None, 1, 3)
