"""The applied stack: which patches are applied, read from commits, never from file contents.

An applied patch is one commit on top of the base in the current branch, carrying the trailers
``Patchstack-Patch: <name>`` and ``Patchstack-Tag: <tag>`` (`trailers`). The stack is the run of
such commits at the top of HEAD's first-parent history; the base is the commit just below it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from . import trailers
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
    # When HEAD is not a patch commit: the plain commits on top of patch commits found just
    # below, (commit ids, first buried patch name); a stack cannot be moved under them.
    covered_by: tuple[Oid, ...] = ()
    buried: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.applied)

    @property
    def top_tree(self) -> Oid:
        return self.applied[-1].tree if self.applied else self.base_tree

    def find(self, name: str) -> AppliedPatch | None:
        return next((p for p in self.applied if p.name == name), None)


LOOK_BELOW = 50  # plain commits to look through for patch commits covered by them


def stack_from_history(head: Oid, history: Iterable[HistoryCommit]) -> Stack:
    """Build the stack from HEAD's first-parent history, newest first."""
    applied: list[AppliedPatch] = []
    commits = iter(history)
    for info in commits:
        found = trailers.read(info.message)
        if found.patch is None or len(info.parents) != 1:
            applied.reverse()
            stack = Stack(head, info.oid, info.tree, tuple(applied))
            if applied or found.patch is not None:
                return stack
            covering = [info.oid]
            for below in commits:
                below_patch = trailers.read(below.message).patch
                if below_patch is not None:
                    return replace(stack, covered_by=tuple(covering), buried=below_patch)
                covering.append(below.oid)
                if len(covering) > LOOK_BELOW:
                    break
            return stack
        applied.append(AppliedPatch(found.patch, found.tag, info.oid, info.tree, info.parents[0]))
    raise ValueError("every commit down to the root is a patch commit")
