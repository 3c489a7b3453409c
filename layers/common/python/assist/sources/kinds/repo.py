"""A git repository: a local checkout (its tracked files), or anything `git clone` takes (a URL, `git@…`, a bare
repository's path), cloned shallow into a temporary folder. Its docs and its code (cut along functions)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import msgspec

from assist.sources.code import LANGUAGES
from assist.sources.files import DOC_SUFFIXES, read_files, skipped
from assist.sources.registry import Kind, register
from assist.sources.spec import PublishedSpec, SourceError, is_url

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read
    from assist.sources.validators import Validators


class RepoSpec(PublishedSpec):
    ref: str = ""  # a URL's branch or tag to clone


@register("repo")
class Repo(Kind):
    spec = RepoSpec

    def read(self, spec: RepoSpec, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        location = spec.location
        remote = is_url(location) or location.startswith("git@") or not (Path(location) / ".git").exists()
        with tempfile.TemporaryDirectory(prefix="assist-repo-") as tmp:
            if remote:
                branch = ["--branch", spec.ref] if spec.ref else []
                args = ["git", "clone", "--quiet", "--depth", "1", *branch, location, tmp]
                done = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False)
                if done.returncode != 0:
                    raise SourceError(f"{location}: git clone failed: {done.stderr.strip()[-300:]}")
                root = Path(tmp)
            else:
                root = Path(location)
            listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, timeout=120)
            if listed.returncode != 0:
                failed = listed.stderr.decode(errors="replace")[-300:]
                raise SourceError(f"{location}: git ls-files failed: {failed}")
            wanted = DOC_SUFFIXES | set(LANGUAGES)
            files = [
                (rel, root / rel)
                for rel in sorted(p for p in listed.stdout.decode().split("\0") if p)
                if PurePosixPath(rel).suffix.lower() in wanted and not skipped(PurePosixPath(rel))
            ]
            if remote and not spec.base_url:
                spec = _with_web_base(spec)
            return read_files(spec, settings, root, files, code=True)


def _with_web_base(spec: RepoSpec) -> RepoSpec:
    """A GitHub/GitLab clone URL's files link to the web view of the same ref."""
    m = re.match(r"^(?:https://|git@)(github\.com|gitlab\.com)[/:]([^/]+/[^/]+?)(?:\.git)?/?$", spec.location)
    if not m:
        return spec
    sep = "/-/blob/" if m.group(1) == "gitlab.com" else "/blob/"
    return msgspec.structs.replace(
        spec, base_url=f"https://{m.group(1)}/{m.group(2)}{sep}{spec.ref or 'HEAD'}/{{path}}"
    )
