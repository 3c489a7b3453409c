"""The uncertainty verdict's calibration for one index version (ADR 0096): the threshold computed from the
corpus when it was indexed, with the figures that say how far to trust it.

Kept beside the chunk table and its manifest (`<INDEX_TABLE>_calibration`, same database, so the same published
version: `versions/<v>/`), one row holding the calibration as JSON, written under the writer lease by the
same sync that wrote the chunks. `retrieve/calibrate.py` computes it; this module only stores and reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from assist.index import lance, pointer
from assist.index.scope import key
from assist.index.store import connect

if TYPE_CHECKING:
    from assist.contracts import Scope
    from assist.settings import Settings

#: bumped when the way a calibration is computed changes: an index calibrated otherwise is calibrated again
METHOD = "probes-v1"


class Calibration(msgspec.Struct, omit_defaults=True, kw_only=True):
    method: str = METHOD
    #: flagged when the verdict's score is below it
    threshold: float
    #: the score's weights it holds for (centrality, coverage, absent, named): other weights, other scale
    weights: list[float]
    #: False: too few sections to calibrate, a conservative default (`why` says which)
    calibrated: bool = True
    #: True: the probes' cut caught too little of the off-topic bank and was raised (`why` says how far)
    conflict: bool = False
    why: str = ""
    #: the cut the probes alone give, and the lowest cut that catches 90 % of the off-topic bank
    probe_threshold: float = 0.0
    offtopic_threshold: float = 0.0
    sections: int = 0
    probes: int = 0
    #: probes the threshold flags (the conformal rank minus one), and that share
    probes_flagged: int = 0
    #: the answerable false-flag rate aimed at, and the confidence it is held with over the probes' draw
    target: float = 0.05
    confidence: float = 0.9
    #: a bound on the false-flag rate of questions like the probes: expected (rank / (n + 1)) and at `confidence`
    expected_rate: float = 0.0
    bound: float = 0.0
    #: off-topic bank: questions asked, share caught by this threshold (Spanish rows judged on their translation)
    offtopic: int = 0
    offtopic_caught: float = 0.0
    offtopic_caught_en: float = 0.0
    offtopic_caught_es: float = 0.0
    seed: int = 0
    seconds: float = 0.0
    computed_at: str = ""
    #: the scopes calibrated on their own, by `scope.key` (`cli/2`): the same probes made from what the scope sees
    #: and searched within it. A scope not here (too few sections of its own) is judged by the corpus's threshold.
    scopes: dict[str, Calibration] = msgspec.field(default_factory=dict)
    #: True: its scopes were considered (an engine before scopes left them out: calibrated again on the next sync)
    apart: bool = False

    def within(self, scope: Scope | None) -> Calibration:
        """The calibration a question asked in `scope` is judged by: its scope's own, else the corpus's."""
        return self.scopes.get(key(scope), self) if scope else self

    def summary(self) -> dict[str, Any]:
        """What a sync's report, `assist doctor` and `/insights` say of it."""
        keys = ("threshold", "calibrated", "conflict", "why", "sections", "probes", "probes_flagged", "bound")
        keys += ("offtopic_caught", "computed_at")
        out = {k: getattr(self, k) for k in keys if getattr(self, k) != ""}
        figures = ("threshold", "conflict", "sections", "probes", "bound", "offtopic_caught")
        scopes = {name: {k: getattr(c, k) for k in figures} for name, c in sorted(self.scopes.items())}
        return out | ({"scopes": scopes} if scopes else {})


def table_name(index_table: str) -> str:
    return f"{index_table}_calibration"


def read(db: Any, index_table: str) -> Calibration | None:
    """The index's calibration; None when it has none (built before calibration existed, or not calibrated)."""
    name = table_name(index_table)
    if name not in db.table_names():
        return None
    rows = db.open_table(name).to_arrow().column("data").to_pylist()
    if not rows:
        return None
    try:
        return msgspec.json.decode(rows[0], type=Calibration)
    except msgspec.ValidationError:  # written by another version of the engine: calibrated again on the next sync
        return None


def write(db: Any, index_table: str, calibration: Calibration) -> None:
    pa = lance.arrow()
    schema = pa.schema([("data", pa.string())])
    rows = [{"data": msgspec.json.encode(calibration).decode()}]
    db.create_table(table_name(index_table), data=rows, schema=schema, mode="overwrite")


def live(settings: Settings, s3: Any = None) -> Calibration | None:
    """The live index version's calibration; None when there is no index yet or it has none."""
    uri = settings.index.uri
    if not settings.index.is_s3 and not Path(uri).exists():
        return None
    return read(connect(pointer.live_uri(uri, s3), settings.storage_options()), settings.index.table)
