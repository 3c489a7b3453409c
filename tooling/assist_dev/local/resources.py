"""Create the tables and the bucket that template.yaml declares, from template.yaml itself.

One source of truth: the local stack and the tests read the same definitions the SAM
deployment uses, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assist.logs import get_logger

if TYPE_CHECKING:
    from assist.settings import Settings

log = get_logger(__name__)
TEMPLATE = Path(__file__).resolve().parents[3] / "template.yaml"  # repo root
#: each table's logical id in template.yaml, and where its name is in `Settings`
TABLES: dict[str, Callable[[Settings], str]] = {
    "SessionsTable": lambda s: s.sessions.table,
    "IntentHistoryTable": lambda s: s.sessions.intent_history_table,
    "IdempotencyTable": lambda s: s.idempotency.table,
    "WidgetTable": lambda s: s.widget.table,
}
BUCKET = "DataBucket"
_TABLE_KEYS = ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes", "LocalSecondaryIndexes")


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    # deferred, ADR 0071: pyyaml (index extra only)
    import yaml

    class CfnLoader(yaml.SafeLoader):
        pass

    def tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        name = suffix if suffix in ("Ref", "Condition") else f"Fn::{suffix}"
        return {name: value}

    CfnLoader.add_multi_constructor("!", tagged)
    return yaml.load(path.read_text(), Loader=CfnLoader)  # noqa: S506 - SafeLoader subclass


def table_definitions(settings: Settings, template: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """create_table arguments per local table name, taken from the template's resources."""
    res = (template or load_template())["Resources"]
    out: dict[str, dict[str, Any]] = {}
    for logical, table_name in TABLES.items():
        props = res[logical]["Properties"]
        name = table_name(settings)
        out[name] = {"TableName": name, **{k: props[k] for k in _TABLE_KEYS if k in props}}
        if ttl := props.get("TimeToLiveSpecification"):
            out[name]["_ttl"] = ttl
    return out


def ensure_resources(settings: Settings, dynamodb: Any, s3: Any) -> None:
    """Idempotent: creates what is missing, leaves what exists."""
    template = load_template()
    existing = set(dynamodb.list_tables().get("TableNames", []))
    for name, definition in table_definitions(settings, template).items():
        ttl = definition.pop("_ttl", None)
        if name not in existing:
            dynamodb.create_table(**definition)
            dynamodb.get_waiter("table_exists").wait(TableName=name)
            if ttl:
                dynamodb.update_time_to_live(TableName=name, TimeToLiveSpecification=ttl)
            log.info("local.table_created", table=name)
    if BUCKET in template["Resources"]:
        buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
        if settings.aws.bucket not in buckets:
            s3.create_bucket(Bucket=settings.aws.bucket)
            props = template["Resources"][BUCKET]["Properties"]
            if props.get("VersioningConfiguration"):
                s3.put_bucket_versioning(
                    Bucket=settings.aws.bucket, VersioningConfiguration=props["VersioningConfiguration"]
                )
            log.info("local.bucket_created", bucket=settings.aws.bucket)
