"""The engine's results (chain commits, applied and merged trees, commits) as key -> object
id, in the ``build`` section of the one cache (`store`); a value is checked to exist before
use."""

from __future__ import annotations

from collections.abc import Iterable

from ..git import Git
from ..model.ids import Oid
from ..model.series import Entry
from ..store import Store

SECTION = "build"


def chain_key(parent: str, digest: str, entry: Entry) -> str:
    """The key of the chain commit made from a patch file (``digest``: the SHA-1 of its
    bytes) of this entry on ``parent`` (`Engine.extend`; `commands.refresh.proof` reads it)."""
    return f"chain {parent} {digest} {entry.strip_level} {entry.name} {entry.tag}"


class Cache:
    def __init__(self, git: Git, store: Store) -> None:
        self.git = git
        self.store = store
        self.present: set[str] = set()  # values known to exist
        self.missing: set[str] = set()

    def peek(self, key: str) -> str | None:
        """The value of ``key`` without checking that it exists."""
        value = self.store.get(SECTION, key)
        return value if isinstance(value, str) else None

    def get(self, key: str) -> Oid | None:
        value = self.peek(key)
        if not value or value in self.missing:
            return None
        if value in self.present or self.git.has_objects([value])[value]:
            self.present.add(value)
            return Oid(value)
        self.missing.add(value)
        self.store.forget(SECTION, key)
        return None

    def check(self, values: Iterable[str]) -> None:
        """Ask at once whether these values exist, ahead of `get`s that will want them."""
        found = self.git.has_objects([v for v in values if v not in self.present])
        self.present.update(v for v, ok in found.items() if ok)
        self.missing.update(v for v, ok in found.items() if not ok)

    def put(self, key: str, value: str) -> None:
        self.store.put(SECTION, key, value)
