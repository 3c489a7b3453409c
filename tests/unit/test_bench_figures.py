"""The one way benches print figures for a person: aligned columns, the baseline beside each figure."""

from __future__ import annotations

from assist_dev.bench.figures import Table, ratio, render


def test_render_aligns_labels_left_and_figures_right_and_appends_notes():
    rows = [("fts", 1.5, 0.25), ("adaptive", 12.125, None)]
    lines = render(Table(("search", "p50 ms", "× rrf"), rows, ["built in 2 s"])).splitlines()
    assert lines == [
        "search    p50 ms  × rrf",
        "fts          1.5   0.25",
        "adaptive  12.125      -",
        "built in 2 s",
    ]


def test_figures_print_as_people_read_them():
    text = render(Table(("run", "records", "seconds", "ok"), [("first", 100000, 1234.5, True)]))
    assert text.splitlines()[1].split() == ["first", "100,000", "1,234", "yes"]


def test_ratio_needs_both_figures():
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(None, 2.0) is None
    assert ratio(1.0, 0.0) is None
