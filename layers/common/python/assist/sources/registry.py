"""The seam for source kinds: a kind is a class in a file of its own, registered under its name (as LanceDB's
embedding registry registers embedding functions). It says which spec it reads (`SourceSpec`'s fields and its
own) and how it reads a source of that spec into documents. `assist.sources.kinds` holds the kinds that come
with assist; a new kind is one new file whose class carries `@register("name")`, and an installed distribution
lists that file under the `assist.source_kinds` entry points (loaded only when a name is not known yet)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from assist.sources.spec import SourceSpec

if TYPE_CHECKING:
    from assist.settings import Settings
    from assist.sources.spec import Read
    from assist.sources.validators import Validators


class Kind:
    """A kind of source. `read` gives a source's documents or raises SourceError before anything is written;
    `previous` is what the last sync kept per URL (HTTP validators), `indexed` the {doc_id: hash} the index holds,
    for a kind that can skip what did not change."""

    name: ClassVar[str] = ""
    spec: ClassVar[type[SourceSpec]] = SourceSpec

    def read(self, spec: Any, settings: Settings, previous: Validators, indexed: dict[str, str]) -> Read:
        raise NotImplementedError


ENTRY_POINTS = "assist.source_kinds"
_KINDS: dict[str, type[Kind]] = {}


def register(name: str) -> Callable[[type[Kind]], type[Kind]]:
    """A class decorator: the kind is known by `name` (`kind:` in a sources file, `assist index --kind`)."""

    def put(cls: type[Kind]) -> type[Kind]:
        if name in _KINDS and _KINDS[name] is not cls:
            raise ValueError(f"source kind {name!r} is registered twice ({_KINDS[name].__name__}, {cls.__name__})")
        cls.name = name
        _KINDS[name] = cls
        return cls

    return put


def named(name: str) -> type[Kind] | None:
    """The kind registered under `name`, the installed plug-ins loaded first when none is yet."""
    if name not in _KINDS:
        load_plugins()
    return _KINDS.get(name)


def names() -> list[str]:
    """Every kind's name, the installed plug-ins' too."""
    load_plugins()
    return sorted(_KINDS)


@cache
def load_plugins() -> None:
    for plugin in entry_points(group=ENTRY_POINTS):
        plugin.load()  # its module registers its kind
