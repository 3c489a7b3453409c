"""How much a function's image carries: the installed size of the packages its extra pulls in.

The extra comes from this checkout's pyproject.toml (what the Containerfile installs); the
dependency closure and the sizes come from the installed distributions' metadata and RECORD
files, so no network is needed. The interpreter and the standard library (the base image)
are not counted.
"""

from __future__ import annotations

import importlib.metadata as md
import re
import tomllib
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from assist_dev.local.definition import ROOT

PYPROJECT = ROOT / "pyproject.toml"
#: what the base image's interpreter has beside the standard library (the Lambda Python 3.11 image's pip)
BASE_IMAGE = {"pip", "setuptools", "pkg_resources", "_distutils_hack"}
_SELF = re.compile(r"^assist\[([^\]]+)\]")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def project_requirements(extras: list[str], pyproject: Path = PYPROJECT) -> list[str]:
    """The requirement strings of the project itself plus `extras`, self-references expanded."""
    project = tomllib.loads(pyproject.read_text())["project"]
    optional: dict[str, list[str]] = project.get("optional-dependencies", {})
    out, seen, todo = list(project.get("dependencies", [])), set(), list(extras)
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for req in optional[extra]:
            if m := _SELF.match(req):
                todo += [e.strip() for e in m.group(1).split(",")]
            else:
                out.append(req)
    return out


def closure(requirements: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Installed distributions the requirements pull in (name → Distribution), and those not installed."""

    found: dict[str, Any] = {}
    missing: list[str] = []
    expanded: set[tuple[str, str]] = set()  # (distribution, extra) whose requirements are queued
    todo = [(Requirement(r), "") for r in requirements]  # (requirement, the extra its parent was asked for)
    while todo:
        req, parent_extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": parent_extra}):
            continue
        try:
            dist = md.distribution(req.name)
        except md.PackageNotFoundError:
            missing.append(req.name)
            continue
        key = _canonical(req.name)
        found[key] = dist
        for extra in ["", *req.extras]:
            if (key, extra) not in expanded:
                expanded.add((key, extra))
                todo += [(Requirement(sub), extra) for sub in dist.requires or []]
    return found, sorted(set(missing))


def installed_bytes(dist: Any) -> int:
    total = 0
    for f in dist.files or []:
        if f.size is not None:
            total += f.size
        else:
            path = Path(f.locate())
            total += path.stat().st_size if path.is_file() else 0
    return total


def extra_size_mb(extras: list[str]) -> tuple[float, list[str]]:
    """Installed size in MB of everything `pip install .[extras]` would bring, and what is not installed here."""
    dists, missing = closure(project_requirements(extras))
    return round(sum(installed_bytes(d) for d in dists.values()) / 1e6, 1), missing


def dir_size_mb(path: Path) -> float:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6, 1) if path.exists() else 0.0


def top_level(dist: Any) -> set[str]:
    """The top-level module names a distribution installs (its `top_level.txt`, else its files)."""
    if text := dist.read_text("top_level.txt"):
        return {name for name in text.split() if name}
    names = set()
    for f in dist.files or []:
        head = f.parts[0]
        if head.endswith((".dist-info", ".egg-info", ".data", ".pth")) or head in ("..", "__pycache__", "bin"):
            continue
        if len(f.parts) > 1 or head.endswith((".py", ".so", ".pyd")):
            names.add(head.split(".")[0])
    return names


def not_in_image(extras: list[str]) -> list[str]:
    """Top-level modules installed here that an image of `extras` would not have: what a process standing in for
    that image must not import (the cold-start child refuses them, as the image's interpreter would)."""
    found, _ = closure(project_requirements(extras))
    allowed = set().union(*(top_level(d) for d in found.values()), {"assist", "functions"})
    others = set()
    for dist in md.distributions():
        if _canonical(dist.metadata["Name"] or "") not in found:
            others |= top_level(dist)
    return sorted(others - allowed - BASE_IMAGE)
