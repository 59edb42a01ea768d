"""The applied stack: which patches are applied, read from commits, never from file contents.

An applied patch is one commit on top of the base in the current branch, carrying the trailers
``Patchstack-Patch: <name>`` and ``Patchstack-Tag: <tag>`` (`trailers`). The stack is the run of
such commits at the top of HEAD's first-parent history; the base is the commit just below it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Protocol

from .ids import Oid


class HistoryCommit(Protocol):
    """What the stack needs to know of a commit (git's `CommitRecord` has it)."""

    @property
    def oid(self) -> Oid: ...
    @property
    def tree(self) -> Oid: ...
    @property
    def parents(self) -> tuple[Oid, ...]: ...
    @property
    def message(self) -> str: ...


@dataclass(frozen=True)
class AppliedPatch:
    name: str
    tag: str | None
    commit: Oid
    tree: Oid
    parent: Oid


@dataclass(frozen=True)
class Stack:
    head: Oid
    base: Oid
    base_tree: Oid
    applied: tuple[AppliedPatch, ...]  # bottom to top
    # Plain commits on top of the applied patches (newest first): made by hand, or a merge
    # of upstream into the stack (``git pull``). Nothing can be built on HEAD under them.
    on_top: tuple[Oid, ...] = ()
    # HEAD is that merge: ``git pull`` merged this upstream commit into the applied stack
    # (set by `commands.state.read_stack`; ``refresh`` carries the patches onto it).
    pulled: Oid | None = None
    # Applied commits that carry a patch's name from before a rename (a teammate's
    # ``rename``, merged with the series): (the name in the commit, the series' name);
    # ``applied`` already says the series' name (`commands.state.follow_renames`).
    renamed: tuple[tuple[str, str], ...] = ()
    # HEAD is the merge ``refresh --publish ff`` made on top of the applied patches (its tree
    # theirs, its second parent the tip before): not a commit in the way.
    published: Oid | None = None

    def with_renamed(self, pairs: dict[str, str]) -> Stack:
        """The stack with these applied patches known by their new names (old -> new)."""
        applied = tuple(
            replace(p, name=pairs[p.name]) if p.name in pairs else p for p in self.applied
        )
        found = tuple((old, new) for old, new in pairs.items())
        return replace(self, applied=applied, renamed=self.renamed + found)

    def was_renamed(self, name: str) -> bool:
        return any(new == name for _old, new in self.renamed)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.applied)

    @property
    def top(self) -> Oid:
        """The commit the applied patches end with (HEAD, unless commits are on top)."""
        return self.applied[-1].commit if self.applied else self.base

    @property
    def top_tree(self) -> Oid:
        return self.applied[-1].tree if self.applied else self.base_tree

    def find(self, name: str) -> AppliedPatch | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, AppliedPatch]:
        found: dict[str, AppliedPatch] = {}
        for p in self.applied:
            found.setdefault(p.name, p)  # the lowest, as a scan from the bottom finds it
        return found


LOOK_BELOW = 50  # plain commits to look through for patch commits covered by them


def stack_from_history(head: Oid, history: Iterable[HistoryCommit]) -> Stack:
    """Build the stack from HEAD's first-parent history, newest first: the run of patch
    commits at the top, or, when up to `LOOK_BELOW` plain commits cover such a run, that run
    with the covering commits as ``on_top``."""
    from . import trailers  # (a stack kept by HEAD is read from the cache: not for each command)

    first: HistoryCommit | None = None
    on_top: list[Oid] = []
    applied: list[AppliedPatch] = []
    for info in history:
        first = first or info
        found = trailers.read(info.message)
        if found.patch is not None and len(info.parents) == 1:
            applied.append(
                AppliedPatch(found.patch, found.tag, info.oid, info.tree, info.parents[0])
            )
            continue
        if applied:
            applied.reverse()
            return Stack(head, info.oid, info.tree, tuple(applied), tuple(on_top))
        on_top.append(info.oid)
        if len(on_top) > LOOK_BELOW:
            break
    if applied:
        raise ValueError("every commit down to the root is a patch commit")
    if first is None:
        raise ValueError("no commits")
    return Stack(head, first.oid, first.tree, ())


def names_below(commit: Oid, stacks: Iterable[Stack]) -> tuple[str, ...] | None:
    """The applied patches of the stack at ``commit`` when a stack read from history holds
    it (its head, or one of its applied commits: the walk from there meets the same commits
    down to the same base), without walking again; None when none does."""
    for stack in stacks:
        if commit == stack.head:
            return stack.names
        for i, ap in enumerate(stack.applied):
            if ap.commit == commit:
                return tuple(a.name for a in stack.applied[: i + 1])
    return None
