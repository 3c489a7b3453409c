"""Training rows from where they live: a JSONL file, one `s3://…/name.jsonl` object, or every `*.jsonl` under a
directory or an `s3://bucket/prefix` (the label export's `date=…/part-….jsonl` layout)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from assist.export.sink import open_sink
from assist.logs import get_logger
from assist.offline.classify.data import DataError, Example, Rows, latest_revisions, parse_rows

log = get_logger(__name__)

#: an exported label against a seed row's 1: exported labels are a model's judgement (the LLM layer's) or the
#: caller's, not hand-checked; the promotion gate judges the result either way
LABEL_WEIGHT = 0.5
#: a label a person gave through feedback (`label_source: "user"`) against a seed row's 1: hand-given like a seed
#: row, and it overrides the router's label of that turn, so it weighs twice an exported router label
USER_LABEL_WEIGHT = 1.0


def read_sources(
    uris: list[str],
    s3: Any = None,
    label_weight: float = LABEL_WEIGHT,
    user_label_weight: float = USER_LABEL_WEIGHT,
    visitors: bool = False,
) -> tuple[list[Example], list[dict[str, Any]]]:
    """The rows of every source, in order (of one exported turn, its latest revision only), and what training
    records about each; widget visitors' exported turns only when `visitors` (ADR 0093)."""
    for name, w in (("label weight", label_weight), ("user label weight", user_label_weight)):
        if w <= 0:
            raise DataError(f"{name} {w}: a weight is above 0; to train without exported labels, omit their source")
    rows, infos = Rows(), []
    for uri in uris:
        one, info = read_source(uri, s3, label_weight, user_label_weight, visitors)
        rows.extend(one)
        infos.append(info)
    examples, superseded = latest_revisions(rows)
    if superseded:
        log.info("classifier.revisions_superseded", rows=superseded)
    return examples, infos


def read_source(
    uri: str,
    s3: Any = None,
    label_weight: float = LABEL_WEIGHT,
    user_label_weight: float = USER_LABEL_WEIGHT,
    visitors: bool = False,
) -> tuple[Rows, dict[str, Any]]:
    """The rows of one `--data` source and what training records about it (`s3`: a boto3 S3 client for s3://)."""
    single = Path(uri).is_file() or (uri.startswith("s3://") and uri.endswith(".jsonl"))
    if single:
        parent, _, name = uri.rpartition("/")
        store, names = open_sink(parent or ".", s3), [name]
    else:
        store = open_sink(uri, s3)
        names = store.names()
        if not names:
            raise DataError(f"{uri}: no such file, and no *.jsonl under it")
    rows, digest = Rows(), hashlib.sha256()
    for name in names:
        where = uri if single else f"{uri.rstrip('/')}/{name}"
        try:
            data = store.read(name)
            text = data.decode("utf-8")
        except FileNotFoundError as exc:
            raise DataError(f"{where}: no such object") from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"{where}: not UTF-8 text ({exc}); training data is JSONL") from exc
        digest.update(data)
        rows.extend(parse_rows(text.splitlines(), where, label_weight, user_label_weight, visitors))
    info: dict[str, Any] = {"path": uri, "files": len(names), "rows": len(rows.examples), "sha256": digest.hexdigest()}
    if rows.exported or rows.skipped:
        info.update(exported=rows.exported, label_weight=label_weight, skipped=dict(sorted(rows.skipped.items())))
    if rows.user_labels:
        info.update(user_labels=rows.user_labels, user_label_weight=user_label_weight)
    return rows, info
