"""The cascade's decisions and reasons, and the LLM layer's prompt and parsing (pure logic; the real parts are in
tests/integration/test_classifier.py and test_routing_scenarios.py)."""

from __future__ import annotations

import pytest

from assist.classify.cascade import Cascade
from assist.classify.llm import LLMClassifierFailed, LLMDecision, build_messages, history_lines, parse_label
from assist.classify.model import Prediction
from assist.contracts import IntentEntry, QueryType
from assist.settings import Settings

S = Settings()


class FixedLayer:
    def __init__(self, label: str, p: float, inherited: float = 0.0, similarity: float | None = None) -> None:
        novel = similarity is not None and similarity < 0.4
        self.pred = Prediction(
            label=label, p=p, probs={label: p}, inherited=inherited, similarity=similarity, novel=novel
        )
        self.calls = 0
        self.embedded: list[str] = []

    def embed(self, message):
        self.embedded.append(message)

    def predict(self, message, history):
        self.calls += 1
        return self.pred


class FixedLLM:
    def __init__(self, outcome) -> None:
        self.outcome = outcome
        self.calls = 0

    def classify(self, message, history):
        self.calls += 1
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


def cascade(layer=None, llm=None) -> Cascade:
    return Cascade(S, embedding=(lambda: layer) if layer else None, llm=(lambda: llm) if llm else None)


def test_declared_and_rules_decide_before_any_model():
    layer, llm = FixedLayer("RETRIEVAL", 0.99), FixedLLM(LLMDecision(QueryType.RETRIEVAL, 1, "m"))
    c = cascade(layer, llm)
    declared = c.classify("anything", [], declared=QueryType.CODE_GENERATION)
    assert (declared.layer, declared.type, declared.confidence) == ("declared", QueryType.CODE_GENERATION, 1.0)
    ruled = c.classify("You are a direct and concise assistant. Usage 20%.", [])
    assert (ruled.layer, ruled.type) == ("rules", QueryType.PLATFORM)
    assert layer.calls == llm.calls == 0


def test_work_ahead_of_the_history_is_the_embedding_only_when_a_model_will_judge():
    layer = FixedLayer("RETRIEVAL", 0.99)
    c = cascade(layer)
    assert c.ahead("anything", declared=QueryType.CODE_GENERATION) is None
    assert c.ahead("You are a direct and concise assistant. Usage 20%.") is None
    assert cascade().ahead("how do rate limits work?") is None  # no embedding layer
    work = c.ahead("how do rate limits work?")
    assert work is not None
    assert layer.embedded == []  # prepared, not yet run
    work()
    assert layer.embedded == ["how do rate limits work?"]


def test_a_cascade_without_models_falls_back_to_retrieval_and_says_why():
    route = Cascade(S).classify("how do rate limits work?", [])
    assert (route.layer, route.type, route.confidence) == ("fallback", QueryType.RETRIEVAL, 0.25)
    assert route.reason == "fallback: llm off (OLLAMA_HOST unset); no embedding model; documentation by default"


def test_the_embedding_layer_decides_at_or_above_the_threshold():
    route = cascade(FixedLayer("PLATFORM", 0.85)).classify("am I near my limit?", [])
    assert (route.layer, route.type, route.confidence) == ("embedding", QueryType.PLATFORM, 0.85)
    assert route.reason == "embedding p=0.85 ≥ 0.85"
    ref = cascade(FixedLayer("CODE_GENERATION", 0.93, inherited=0.8)).classify("explain this", [])
    assert ref.reason == "embedding p=0.93 ≥ 0.85; a reference to the previous CODE_GENERATION turn"


def test_below_the_threshold_the_llm_decides_with_the_history_named():
    llm = FixedLLM(LLMDecision(QueryType.PLATFORM, 1, "m"))
    history = [IntentEntry(QueryType.RETRIEVAL, "what is a connector")] * 3
    route = cascade(FixedLayer("RETRIEVAL", 0.61), llm).classify("cuántas llamadas llevo?", history)
    assert (route.layer, route.type) == ("llm", QueryType.PLATFORM)
    assert route.reason == "llm: PLATFORM (history 3 entries); embedding best RETRIEVAL p=0.61 < 0.85"


@pytest.mark.parametrize(
    ("llm", "why"),
    [
        (None, "llm off (OLLAMA_HOST unset)"),
        (FixedLLM(LLMClassifierFailed("llm unavailable (ConnectError)")), "llm unavailable (ConnectError)"),
        (FixedLLM(LLMClassifierFailed("llm over its 5 s budget")), "llm over its 5 s budget"),
    ],
)
def test_without_an_llm_decision_the_embedding_best_class_decides_as_fallback(llm, why):
    route = cascade(FixedLayer("CONVERSATIONAL", 0.61), llm).classify("en menos palabras", [])
    assert (route.layer, route.type, route.confidence) == ("fallback", QueryType.CONVERSATIONAL, 0.61)
    assert route.reason == f"fallback: {why}; embedding best p=0.61"


def test_a_confident_prediction_on_a_message_unlike_the_training_rows_is_not_decided_by_the_embedding_layer():
    assert (
        cascade(FixedLayer("PLATFORM", 0.97, similarity=0.6)).classify("am I near my quota?", []).layer == "embedding"
    )
    route = cascade(FixedLayer("PLATFORM", 0.97, similarity=0.2)).classify("play some jazz", [])
    assert (route.layer, route.type, route.confidence) == ("fallback", QueryType.PLATFORM, 0.97)
    assert (
        route.reason
        == "fallback: llm off (OLLAMA_HOST unset); embedding best p=0.97, unlike its training (similarity 0.20)"
    )
    llm = FixedLLM(LLMDecision(QueryType.CONVERSATIONAL, 1, "m"))
    asked = cascade(FixedLayer("PLATFORM", 0.97, similarity=0.2), llm).classify("play some jazz", [])
    assert (asked.layer, llm.calls) == ("llm", 1)
    assert asked.reason.endswith("embedding best PLATFORM p=0.97 but unlike its training (similarity 0.20)")


def test_history_lines_are_type_and_60_char_topic_of_the_last_six_turns():
    history = [IntentEntry(QueryType.RETRIEVAL, f"question {i}") for i in range(8)]
    history.append(IntentEntry(QueryType.CODE_GENERATION, 'write "a" handler ' + "x" * 80))
    lines = history_lines(history).splitlines()
    assert len(lines) == 6
    assert lines[0] == '[RETRIEVAL] "question 3"'
    assert lines[-1].startswith("[CODE_GENERATION] \"write 'a' handler xxx")
    assert len(lines[-1]) == len('[CODE_GENERATION] ""') + 60
    assert history_lines([]) == "(no earlier turns)"


def test_the_prompt_carries_both_rules_the_history_and_the_message():
    system, user = build_messages("¿y cuánto me queda?", [IntentEntry(QueryType.PLATFORM, "mi cuota")])
    assert "<history_rule>" in system["content"]
    assert "Never use the history to predict the label" in system["content"]
    assert "<platform_priority_rule>" in system["content"]
    assert "usage percentages, account metrics, quota data or billing information" in system["content"]
    assert '[PLATFORM] "mi cuota"' in user["content"]
    assert "<message>\n¿y cuánto me queda?\n</message>" in user["content"]


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("PLATFORM", QueryType.PLATFORM),
        ("  code_generation\n", QueryType.CODE_GENERATION),
        ("`RETRIEVAL`.", QueryType.RETRIEVAL),
        ("<think>the user asks for a summary</think>\nCONVERSATIONAL", QueryType.CONVERSATIONAL),
        ("PLATFORM because it is about usage", None),
        ("The label is RETRIEVAL", None),
        ("RETRIEVAL or PLATFORM", None),
        ("CLARIFY", None),
        ("", None),
    ],
)
def test_replies_are_parsed_strictly(reply, label):
    assert parse_label(reply) == label
