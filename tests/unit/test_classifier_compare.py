"""`assist classifier compare`'s verdict: which rows the two seeds share, and which guarded figure dropped."""

from __future__ import annotations

from assist.offline.classify.compare import drops, shared_rows
from assist.offline.classify.data import Example


def rows(*texts: str) -> list[Example]:
    return [Example(id=str(i), text=t, label="RETRIEVAL") for i, t in enumerate(texts)]


def test_shared_rows_are_the_common_leading_rows():
    assert shared_rows(rows("a", "b", "c"), rows("a", "b", "c", "d")) == 3  # rows appended
    assert shared_rows(rows("a", "b", "c"), rows("a", "x", "c")) == 1  # a row edited
    relabelled = [Example(id="0", text="a", label="PLATFORM")]
    assert shared_rows(rows("a"), relabelled) == 0


def figures(holdout: float, cv: float) -> dict:
    return {"holdout": {"accuracy": holdout}, "cv": {"topic_clustered_accuracy": cv}}


def test_a_drop_in_either_figure_fails_and_says_which():
    assert drops(figures(0.95, 0.92), figures(0.95, 0.92)) == []
    assert drops(figures(0.95, 0.92), figures(0.96, 0.93)) == []
    assert drops(figures(0.95, 0.92), figures(0.9487, 0.92)) == ["holdout accuracy fell from 0.95 to 0.9487"]
    assert drops(figures(0.95, 0.92), figures(0.95, 0.91)) == ["cv topic_clustered_accuracy fell from 0.92 to 0.91"]
    assert drops(figures(0.95, 0.92), figures(0.945, 0.92), tolerance=0.01) == []
