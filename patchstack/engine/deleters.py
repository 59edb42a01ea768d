"""The upstream commits a relocation names (`relocate`): the one that deleted a file, or took
a line out of a file it kept, walked in git's history of the drift and kept in the cache's
section ``relocate`` keyed by the drift's two commits (checked to exist when read)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..git import Git
from ..git.deletions import NO_WALK_DRAIN
from ..model.ids import Oid
from ..store import Store

WALKS = "relocate"  # the store's section of the walks' answers
_HEX = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class Later:
    """The commits that deleted some files, asked when called; ``close`` ends a walk not
    asked (a relocation that found nothing to carry), and one asked already is closed."""

    answer: Callable[[], dict[str, Oid | None]]
    close: Callable[[], None]

    def __call__(self) -> dict[str, Oid | None]:
        return self.answer()


class Deleters:
    """The walks of one command over ``old_base..new_base``, their answers kept in
    ``store`` (None: asked of git each time)."""

    def __init__(self, git: Git, old_base: str | None, new_base: str, store: Store | None) -> None:
        self.git, self.old_base, self.new_base, self.store = git, old_base, new_base, store
        self._deleted_by: dict[str, Oid | None] = {}
        self._early: list[tuple[set[str], Later]] = []

    def start(self, paths: Sequence[str]) -> None:
        """`deleted_later` of ``paths`` begun now, before any relocation asks (a refresh's or
        a check's start, for the patches' files the drift deleted): git walks while the
        replay merges, and a `deleted_later` asking any of them takes this walk's answer
        (each path's answer is its own: the same whichever other paths a walk has)."""
        if paths:
            self._early.append((set(paths), self.deleted_later(paths)))

    def deleted(self, paths: Sequence[str]) -> dict[str, Oid | None]:
        """The commit that deleted each of ``paths`` (`Git.deleted_by_each`: one walk for
        those neither asked before nor kept)."""
        later = self.deleted_later(paths)
        try:
            return later()
        finally:
            later.close()

    def deleted_later(self, paths: Sequence[str]) -> Later:
        """`deleted`, its walk started now, answered when called: git walks while the
        candidates are read (kernel-timers' first stop: 0.41 CPU s, 1.2 s; stopped at the
        answer it would save 0.04 CPU s there: the newest deletion is far back)."""
        rng = f"{self.old_base}..{self.new_base}"
        wanted = [p for p in dict.fromkeys(paths) if p not in self._deleted_by]
        early = [later for begun, later in self._early if begun.intersection(wanted)]
        begun = {p for b, later in self._early if later in early for p in b}
        wanted = [p for p in wanted if p not in begun]
        kept = self._kept([f"deleted {rng} {p}" for p in wanted])
        for p, found in zip(wanted, kept, strict=True):
            if found is not False:
                self._deleted_by[p] = found
        wanted = [p for p in wanted if p not in self._deleted_by]
        walk = self.git.start_deleted_by_each(rng, wanted) if wanted else None

        def answer() -> dict[str, Oid | None]:
            for later in early:  # (each answers once, and keeps what it found)
                later()
            if walk is not None and any(p not in self._deleted_by for p in wanted):
                walked = walk()
                self._deleted_by.update(walked)
                self._keep({f"deleted {rng} {p}": c for p, c in walked.items()})
            return {p: self._deleted_by[p] for p in paths}

        return Later(answer, walk.close if walk is not None else lambda: None)

    def finish(self) -> None:
        """The walks begun by `start` answered now, and kept (for a later command's stop)."""
        for _paths, later in self._early:
            later()

    def close(self) -> None:
        """End the walks begun by `start` that nobody asked."""
        for _paths, later in self._early:
            later.close()

    def removed_by(self, path: str, line: str) -> Oid | None:
        """`Git.removed_by` of the drift (kept as `deleted`'s answers are)."""
        return self.removed_later(path, line)()

    def removed_later(self, path: str, line: str) -> Callable[[], Oid | None]:
        """`removed_by`, its walk started now (`Git.start_removed_by`), answered when called:
        a stop starts each before it waits for the deletion walk, so the walks run side by
        side, not one after the other (kernel-timers' first stop: one ``log -S``, 0.4-0.6 s
        once the deletion walk had answered). ``PATCHSTACK_NO_WALK_DRAIN=1``: walked when
        asked."""
        rng = f"{self.old_base}..{self.new_base}"
        digest = hashlib.sha256(line.encode("utf-8", "surrogateescape")).hexdigest()
        key = f"removed {rng} {path} {digest}"
        kept = self._kept([key])[0]
        if kept is not False:
            known: Oid | None = kept
            return lambda: known
        started: Callable[[], Oid | None]
        if os.environ.get(NO_WALK_DRAIN) == "1":
            started = lambda: self.git.removed_by(rng, path, line)  # noqa: E731
        else:
            started = self.git.start_removed_by(rng, path, line)
        answered: list[Oid | None] = []

        def answer() -> Oid | None:
            if not answered:
                answered.append(started())
                self._keep({key: answered[0]})
            return answered[0]

        return answer

    def _kept(self, keys: Sequence[str]) -> list[Oid | None | Literal[False]]:
        """The walks' answers kept for ``keys`` (False: not kept, or not to be trusted: a
        commit that is not in the repository; only a drift between two commit ids is kept)."""
        if self.store is None or not keys or not self._fixed():
            return [False] * len(keys)
        values = [self.store.get(WALKS, k) for k in keys]
        named = [v for v in values if isinstance(v, str) and _HEX.fullmatch(v)]
        there = self.git.has_objects(named) if named else {}
        return [
            Oid(v) if isinstance(v, str) and there.get(v) else None if v == "" else False
            for v in values
        ]

    def _keep(self, found: dict[str, Oid | None]) -> None:
        if self.store is not None and self._fixed():
            for key, commit in found.items():
                self.store.put(WALKS, key, str(commit or ""))

    def _fixed(self) -> bool:
        return all(_HEX.fullmatch(c or "") for c in (self.old_base, self.new_base))
