"""What each function image holds, listed without Docker (ADR 0070).

infra/Containerfile's `deps` stage copies a few paths of the repository and runs
`pip install ".[${FUNCTION},lambda]"`: the runtime wheel built from that context, plus the distributions its extras
name. This test builds the same wheel from the same copied paths, reads the extras from the wheel's own metadata,
and lists per function the packages the image gets. None may be tooling: the benchmarks, the deploy rehearsal, the
local stack, the test doubles, the tests, or a tooling-only distribution (moto, aws-sam-translator, pytest).
Nor may the ask path's images (classify, retrieve, answer) hold the offline work the deps stage removes after the
install (`assist/offline`: training, evaluation, fitting; ADR 0094).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = ROOT / "infra" / "Containerfile"
FUNCTIONS = ("classify", "retrieve", "answer", "export", "sync")
#: module paths (inside the wheel) and distributions that are tooling, never runtime
TOOLING_MODULES = ("assist_dev/", "assist/bench/", "assist/deploy/", "assist/local/", "assist/rehearsal/", "tests/")
TOOLING_DISTRIBUTIONS = {"assist-dev", "moto", "aws-sam-translator", "pytest", "schemathesis", "playwright"}
#: the offline work: in the distribution (the commands use it), never in an ask-path image
OFFLINE_MODULES = ("assist/offline/",)
ASK_PATH = ("classify", "retrieve", "answer")
REMOVED = re.compile(r"rm -rf /opt/venv/lib/python3\*/site-packages/(\S+)")


def deps_stage() -> str:
    text = CONTAINERFILE.read_text()
    return text.split("AS deps", 1)[1].split("\nFROM ", 1)[0]


def built_wheel(tmp: Path) -> Path:
    """The wheel `pip install ".[…]"` builds in the deps stage, from exactly the paths that stage copies."""
    context = tmp / "context"
    context.mkdir()
    for line in deps_stage().splitlines():
        if line.startswith("COPY "):
            *sources, _ = line.split()[1:]
            for src in sources:
                path = ROOT / src
                target = context / src
                if path.is_dir():
                    shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
                else:
                    shutil.copy(path, target)
    out = tmp / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out), "."],
        cwd=context,
        check=True,
        capture_output=True,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def requirements(metadata: str, extras: set[str]) -> set[str]:
    """The distributions `.[extras]` installs, from the wheel's `Requires-Dist` (its own extras followed;
    "" stands for the requirements no extra marks)."""
    meta = Parser().parsestr(metadata)
    own = meta["Name"].lower()
    by_extra: dict[str, list[str]] = {}
    for req in meta.get_all("Requires-Dist") or []:
        spec, _, marker = req.partition(";")
        found = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        by_extra.setdefault(found.group(1) if found else "", []).append(spec.strip())
    todo, seen, names = [*extras, ""], set(), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for spec in by_extra.get(extra, []):
            name = re.match(r"[A-Za-z0-9._-]+", spec).group(0).lower()
            if name == own:
                todo += re.search(r"\[([^\]]*)\]", spec).group(1).replace(" ", "").split(",")
            else:
                names.add(name)
    return names


def tooling_in(files: list[str], distributions: set[str]) -> list[str]:
    return [f for f in files if f.startswith(TOOLING_MODULES)] + sorted(distributions & TOOLING_DISTRIBUTIONS)


def offline_in(files: list[str]) -> list[str]:
    return [f for f in files if f.startswith(OFFLINE_MODULES)]


def installed(files: list[str], removed: list[str]) -> list[str]:
    """The wheel's files left in the image once the deps stage's `rm -rf …/site-packages/PATH` lines ran."""
    return [f for f in files if not any(f == r or f.startswith(f"{r}/") for r in removed)]


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> dict[str, dict[str, object]]:
    wheel = built_wheel(tmp_path_factory.mktemp("image"))
    with zipfile.ZipFile(wheel) as whl:
        wheel_files = [n for n in whl.namelist() if ".dist-info/" not in n]
        (meta,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = whl.read(meta).decode()
    install = re.search(r'pip install [^\n]*"\.\[([^\]]+)\]"', deps_stage())
    assert install is not None, "the deps stage installs the repository with its function's extras"
    extras = install.group(1).split(",")
    assert offline_in(wheel_files), "the distribution carries the offline work (the commands use it)"
    files = installed(wheel_files, REMOVED.findall(deps_stage()))
    listing = {}
    for function in FUNCTIONS:
        wanted = {extra.replace("${FUNCTION}", function) for extra in extras}
        listing[function] = {"files": files, "distributions": requirements(metadata, wanted)}
    return listing


def test_the_images_copy_only_the_runtime_into_their_build():
    copied = {src for line in deps_stage().splitlines() if line.startswith("COPY ") for src in line.split()[1:-1]}
    assert copied == {"pyproject.toml", "constraints.txt", "README.md", "layers"}


def test_each_function_image_holds_the_runtime_and_no_tooling(images):
    for function, image in images.items():
        files, distributions = image["files"], image["distributions"]
        packages = sorted({f.rsplit("/", 1)[0] for f in files if f.endswith("/__init__.py")})
        print(f"{function}: packages {packages}; distributions {sorted(distributions)}")  # the listing, with -s
        assert "assist/serverless/lambda_entry.py" in files
        assert "awslambdaric" in distributions  # the `lambda` extra was read
        assert tooling_in(files, distributions) == [], function
    for function in ASK_PATH:
        assert offline_in(images[function]["files"]) == [], function
    assert "lancedb" in images["retrieve"]["distributions"]
    assert "lancedb" not in images["classify"]["distributions"]  # each image gets only its own extra


def test_the_check_sees_tooling_when_it_is_there():
    files = ["assist/api/app.py", "assist/bench/harness.py", "assist_dev/local/stack.py", "tests/conftest.py"]
    assert tooling_in(files, {"moto", "boto3"}) == [*files[1:], "moto"]


def test_the_check_sees_offline_work_when_it_is_there():
    files = ["assist/classify/model.py", "assist/offline/classify/train.py", "assist/offline/retrieve/beir.py"]
    assert offline_in(files) == files[1:]
    assert installed(files, ["assist/offline"]) == files[:1]
    assert installed(files, ["assist/off"]) == files  # a path, not a prefix of a name
