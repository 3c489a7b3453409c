from assist.contracts import IntentEntry, QueryType
from assist.query.rewrite import deterministic_rewrite, leans_on_history, subject

HISTORY = [
    IntentEntry(QueryType.RETRIEVAL, "how do I paginate results in the Python SDK"),
    IntentEntry(QueryType.CONVERSATIONAL, "en menos palabras"),
]


def test_only_referential_follow_ups_are_rewritten():
    assert leans_on_history("and how do I do that in the other SDK?", HISTORY)
    assert leans_on_history("¿y eso cómo se configura?", HISTORY)
    assert not leans_on_history("What about rate limits?", HISTORY)
    assert not leans_on_history("How does the engine decide that a message is about billing?", HISTORY)
    assert leans_on_history("explain this", HISTORY)
    assert leans_on_history("and on another host?", HISTORY)
    assert not leans_on_history("and how do I do that?", [])


def test_the_subject_comes_from_the_last_docs_or_code_turn_not_a_recap():
    assert subject(HISTORY) == "how do I paginate results in the Python SDK"
    assert subject([IntentEntry(QueryType.PLATFORM, "my usage")]) is None


def test_deterministic_rewrite_appends_the_subject_once():
    q = deterministic_rewrite("and how do I do that in the other SDK?", HISTORY)
    assert q == "and how do I do that in the other SDK? how do I paginate results in the Python SDK"
    already = "that: how do I paginate results in the python SDK"
    assert deterministic_rewrite(already, HISTORY) == already
