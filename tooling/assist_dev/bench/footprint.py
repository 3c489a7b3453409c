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


def not_in_image(extras: list[str]) -> list[str]:
    """Top-level modules installed here that an image of `extras` would not have: what a process standing in for
    that image must not import (the cold-start child refuses them, as the image's interpreter would)."""
    found, _ = closure(project_requirements(extras))
    theirs = md.packages_distributions()  # top-level module → the installed distributions that provide it
    absent = {m for m, dists in theirs.items() if not any(_canonical(d) in found for d in dists)}
    return sorted(absent - BASE_IMAGE - {"assist", "functions"})  # the project's own code is in every image
