"""The insights page as one self-contained HTML document: inline CSS and SVG, no script, no CDN.

Shared by `GET /insights` and `assist report --out report.html`.
"""

from __future__ import annotations

import math
from collections import Counter
from html import escape
from typing import TYPE_CHECKING, Any

from assist.insights.gather import UNSCOPED, gather, scope_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from assist.embed.base import Embedder
    from assist.insights.gaps import Gap
    from assist.insights.gather import Gathered
    from assist.sessions.store import Store
    from assist.settings import Settings

COLOURS = {
    "RETRIEVAL": "#2b6cb0",
    "CODE_GENERATION": "#2f855a",
    "CONVERSATIONAL": "#b7791f",
    "PLATFORM": "#805ad5",
}
OTHER = "#718096"
CHART_H, LABEL_W, HBAR_W, ROW_H = 160, 150, 200, 22  # narrow enough to stay legible at 360 px
#: the per-day chart: the days share PLOT_W; a day's slot is 8 to 48 units wide, and a date label
#: ("11-24", 12 px) is put under every few bars so that labels are at least DATE_W apart
PLOT_W, SLOT_MIN, SLOT_MAX, DATE_W = 600, 8, 48, 44
#: the chat page's thumbs (web/static/index.html): emoji have no glyph in many systems' fonts
THUMBS = {
    "up": "M2 10h4v11H2zM8 21V10l5-8c1.7 0 2.6 1.1 2.2 2.7L14.3 9H20c1.2 0 2.1 1.1 1.9 2.3l-1.4 8A2 2 0 0 1 18.5 21z",
    "down": "M22 14h-4V3h4zM16 3v11l-5 8c-1.7 0-2.6-1.1-2.2-2.7L9.7 15H4c-1.2 0-2.1-1.1-1.9-2.3l1.4-8A2 2 0 0 1 5.5 3z",
}
STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:16px;color:#1a202c}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #e2e8f0}
.figures{display:flex;flex-wrap:wrap;gap:12px}.figures div{background:#f7fafc;padding:8px 12px;border-radius:6px}
.figures b{display:block;font-size:1.4em}svg{max-width:100%;height:auto}text{font-size:12px;fill:#2d3748}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:10px;height:10px;
margin-right:4px}.gap{border-left:4px solid #c53030;padding:4px 12px;margin:12px 0;background:#fff5f5}
.gap ul{margin:4px 0}.note{color:#4a5568;font-size:.9em}.pages{overflow-wrap:anywhere}
svg.thumb{width:1em;height:1em;vertical-align:-.15em;fill:currentColor}
"""


def build(
    settings: Settings,
    store: Store,
    embedder: Callable[[], Embedder],
    days: int,
    calibration: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any]]:
    """The page and its figures for the last `days` days of the session store's history (the embedder is
    loaded only when there are gaps). `calibration`: the live index's verdict calibration (ADR 0096), summarised."""
    # deferred, ADR 0104: the gap clusters (numpy), 0.04 s, when a page has gaps to group
    from assist.insights.gaps import clusters

    g = gather(settings, store, days)
    questions = [e.message for e in g.gaps()]
    gaps = clusters(questions, embedder(), scopes=[scope_of(e) for e in g.gaps()]) if questions else []
    return page(g, gaps, calibration), report(g, gaps) | {"calibration": calibration}


def page(g: Gathered, gaps: list[Gap], calibration: dict[str, Any] | None = None) -> str:
    s = g.summary()
    n = s["questions"]
    llm = f"{s['llm_share']:.1%}" if s["llm_share"] is not None else "–"
    down = s["ratings"].get("down", 0)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name=viewport content="width=device-width,initial-scale=1">',
        '<link rel=icon href="data:,">',  # no icon: otherwise the browser asks for /favicon.ico, a 404
        f"<title>Insights · last {g.days} days</title><style>{STYLE}</style></head><body>",
        f"<h1>Insights · last {g.days} days</h1>",
        f"<p class=note>{escape(s['since'][:16])} → {escape(s['until'][:16])} UTC. "
        f"Read with {s['read']['queries']} paginated index queries ({s['read']['read_units']} read units).</p>",
        '<div class=figures aria-label="Key figures">',
        _figure("questions", str(n)),
        _figure("decided by the LLM layer", llm),
        _figure(f"{_thumb('up')} helpful / {_thumb('down')} not helpful", f"{s['ratings'].get('up', 0)} / {down}"),
        _figure("documentation gap questions", str(s["gap_questions"])),
        _figure("answered “not in the docs”", str(sum(s["uncertain"].values()))),
        "</div>",
    ]
    if g.truncated:
        parts.append(f"<p class=note>Only the newest {n} questions are counted (INSIGHTS_MAX_ENTRIES).</p>")
    parts += [
        "<h2>Questions per day, by type</h2>",
        _stacked(g.per_day()),
        "<h2>Which layer decided the type</h2>",
        _hbars(Counter(s["layers"]), "layers"),
        "<h2>Retrieval confidence</h2>",
        _hbars(Counter(s["retrieval_confidence"]), "retrieval confidence"),
        "<h2>Degraded answers, by reason</h2>",
        _hbars(Counter(s["degraded"]), "degraded reasons") if s["degraded"] else "<p>None in this window.</p>",
        "<h2>Questions per scope</h2>",
        _scopes(s["scopes"]),
        "<h2>The widget: questions per site key</h2>",
        _sites(s["sites"]),
        "<h2>Documentation gaps</h2>",
        "<p class=note>Questions the answer said the docs do not cover, whose retrieval confidence was low or none, "
        f"or that were rated not helpful ({_thumb('down')}), grouped by topic "
        "(embeddings and k-means). Personal data is redacted.</p>",
        *(_gap(x) for x in gaps),
        "" if gaps else "<p>No gap questions in this window.</p>",
        "<h2>“Not in the docs”: this index's threshold</h2>",
        _calibration(calibration),
        "</body></html>",
    ]
    return "\n".join(parts)


def _calibration(c: dict[str, Any] | None) -> str:
    """The verdict's calibration for the live index version (ADR 0096): what it flags and how far to trust it."""
    if c is None:
        return (
            "<p>No calibration to show: the index has none (built before it existed, or with UNCERTAIN_CALIBRATE "
            "off: the configured threshold is used, and <code>assist index</code> calibrates it), or this function "
            "does not read the index (<code>assist doctor</code> shows it).</p>"
        )
    how = (
        f"computed from {c['probes']} answerable probes made from {c['sections']} of its sections: at most "
        f"{c['bound']:.1%} of questions like them are answered “not in the docs” (with probability 0.9)"
        if c["calibrated"] and not c.get("conflict")
        else escape(str(c.get("why", "")))
    )
    return (
        '<div class=figures aria-label="Verdict calibration">'
        + _figure("threshold", escape(str(c["threshold"])))
        + _figure("off-topic bank caught", f"{c['offtopic_caught']:.0%}")
        + f"</div><p class=note>The threshold was {how}. The off-topic bank is a fixed set of everyday questions "
        f"in English and Spanish; its share caught is what this threshold does with questions no docs answer. "
        f"Computed {escape(str(c.get('computed_at', ''))[:16])} UTC.</p>" + _calibrated_scopes(c.get("scopes", {}))
    )


def _calibrated_scopes(scopes: dict[str, dict[str, Any]]) -> str:
    """The scopes calibrated apart (ADR 0129): a scoped question there is judged by its scope's threshold."""
    if not scopes:
        return ""
    each = ", ".join(f"{escape(k)} {escape(str(v['threshold']))} ({v['sections']} sections)" for k, v in scopes.items())
    return f"<p class=note>Scopes with a threshold of their own: {each}. Other scopes use the one above.</p>"


def _figure(label: str, value: str) -> str:
    """A key figure; `label` is HTML (made here, never from what people typed)."""
    return f"<div><b>{escape(value)}</b>{label}</div>"


def _thumb(rating: str) -> str:
    return f'<svg class=thumb viewBox="0 0 24 24" aria-hidden=true><path d="{THUMBS[rating]}"/></svg>'


def _stacked(per_day: dict[str, Counter[str]]) -> str:
    days = sorted(per_day)
    top = max((sum(c.values()) for c in per_day.values()), default=0) or 1
    types = sorted({t for c in per_day.values() for t in c}, key=lambda t: (t not in COLOURS, t))
    slot = min(SLOT_MAX, max(SLOT_MIN, PLOT_W / max(1, len(days))))
    bar = round(slot * 0.6, 1)
    every = math.ceil(DATE_W / slot)  # labels closer than DATE_W would overlap
    width = round(34 + len(days) * slot + 6)
    out = [
        f'<svg role=img aria-label="questions per day by type" viewBox="0 0 {width} {CHART_H + 40}" '
        f'width="{width}" height="{CHART_H + 40}">',
        f'<text x="0" y="12">{top}</text><line x1="30" y1="{CHART_H}" x2="{width}" y2="{CHART_H}" stroke="#cbd5e0"/>',
    ]
    for i, day in enumerate(days):
        x, y = round(34 + i * slot + (slot - bar) / 2, 1), CHART_H
        for t in types:
            h = round(per_day[day][t] / top * (CHART_H - 16), 1)
            if h:
                y -= h
                out.append(
                    f'<rect x="{x}" y="{y}" width="{bar}" height="{h}" fill="{COLOURS.get(t, OTHER)}">'
                    f"<title>{day} {escape(t)}: {per_day[day][t]}</title></rect>"
                )
        if (len(days) - 1 - i) % every == 0:  # counted from today, so the newest day is always named
            out.append(f'<text x="{round(x + bar / 2, 1)}" y="{CHART_H + 16}" text-anchor="middle">{day[5:]}</text>')
    out.append("</svg>")
    legend = "".join(f'<span><i style="background:{COLOURS.get(t, OTHER)}"></i>{escape(t)}</span>' for t in types)
    return "".join(out) + f"<div class=legend>{legend}</div>"


def _hbars(counts: Counter[str], what: str) -> str:
    rows = counts.most_common()
    if not rows:
        return "<p>No questions in this window.</p>"
    total, top = sum(counts.values()), rows[0][1] or 1
    height = len(rows) * ROW_H + 4
    out = [
        f'<svg role=img aria-label="{escape(what)}" viewBox="0 0 {LABEL_W + HBAR_W + 90} {height}" '
        f'width="{LABEL_W + HBAR_W + 90}" height="{height}">'
    ]
    for i, (name, n) in enumerate(rows):
        y, w = i * ROW_H + 2, max(1, round(n / top * HBAR_W))
        out.append(
            f'<text x="0" y="{y + 14}">{escape(name or "–")}</text>'
            f'<rect x="{LABEL_W}" y="{y}" width="{w}" height="{ROW_H - 6}" fill="#4a5568"/>'
            f'<text x="{LABEL_W + w + 6}" y="{y + 14}">{n} ({n / total:.0%})</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _sites(sites: dict[str, dict[str, Any]]) -> str:
    """Each site key's questions, and the pages of its site they were asked from."""
    if not sites:
        return "<p>No widget questions in this window.</p>"
    out = [_hbars(Counter({k: v["questions"] for k, v in sites.items()}), "questions per site key")]
    for key, site in sites.items():
        pages = "".join(f"<li>{escape(p)} · {n}</li>" for p, n in site["pages"].items())
        out.append(f"<p class=note><b>{escape(key)}</b>: asked from</p><ul class=pages>{pages or '<li>–</li>'}</ul>")
    return "".join(out)


def _scopes(scopes: dict[str, dict[str, int]]) -> str:
    """Questions per scope asked (ADR 0121) and how many of them are documentation gaps."""
    if not scopes or list(scopes) == [UNSCOPED]:
        return "<p>No scoped questions in this window: every question searched the whole index.</p>"
    gaps = "".join(f"<li>{escape(k)} · {v['gap_questions']} of {v['questions']}</li>" for k, v in scopes.items())
    return (
        _hbars(Counter({k: v["questions"] for k, v in scopes.items()}), "questions per scope")
        + f"<p class=note>Gap questions per scope (*/*: asked without a scope)</p><ul>{gaps}</ul>"
    )


def _gap(g: Gap) -> str:
    examples = "".join(f"<li>{escape(q)}</li>" for q in g.examples)
    where = "" if list(g.scopes) in ([], [UNSCOPED]) else " · " + ", ".join(f"{k} {n}" for k, n in g.scopes.items())
    return f"<div class=gap><b>{escape(g.label)}</b> · {g.size} questions{escape(where)}<ul>{examples}</ul></div>"


def report(g: Gathered, gaps: list[Gap]) -> dict[str, Any]:
    """The page's figures as JSON (the CLI prints them beside the file it wrote)."""
    return {**g.summary(), "gaps": [vars(x) for x in gaps]}
