"""DynamoDB read units estimated from the items a call returned, by AWS's published rules.

moto does not account capacity realistically, so benchmarks compute it: a Query or Scan
page costs ceil(total bytes / 4 KB) units, a BatchGetItem ceil(bytes / 4 KB) per item; an
eventually consistent read costs half, a strongly consistent one the full unit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef


def attr_size(value: AttributeValueTypeDef) -> int:
    ((kind, v),) = value.items()
    if kind in ("S", "B"):
        return len(v.encode() if isinstance(v, str) else v)
    if kind == "N":
        return len(str(v).lstrip("-").replace(".", "")) // 2 + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(attr_size(x) + 1 for x in v)
    if kind == "M":
        return 3 + sum(len(k) + attr_size(x) + 1 for k, x in v.items())
    return sum(len(str(x)) for x in v)  # sets


def item_size(item: dict[str, AttributeValueTypeDef]) -> int:
    return sum(len(name) + attr_size(value) for name, value in item.items())


def query_units(items: list[dict[str, AttributeValueTypeDef]], consistent: bool = False) -> float:
    units = math.ceil(sum(item_size(i) for i in items) / 4096) or 1
    return units * (1.0 if consistent else 0.5)


def batch_get_units(items: list[dict[str, AttributeValueTypeDef]], consistent: bool = False) -> float:
    return sum(math.ceil(item_size(i) / 4096) or 1 for i in items) * (1.0 if consistent else 0.5)
