"""Reading the state a command plans from: the applied stack, the checks every command that
builds on HEAD makes, and the engine over the series."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..git import Git
from ..model.ids import Oid
from ..model.series import Entry, Series
from ..model.stack import Stack, stack_from_history

if TYPE_CHECKING:  # the engine is imported only by commands that build commits
    from ..engine.chain import Engine
    from ..engine.loaded import LoadedPatch


def read_stack(git: Git) -> Stack:
    head = git.head()
    if head is None:
        raise PatchstackError("the repository has no commits yet", "commit the upstream tree first")
    try:
        return stack_from_history(head, git.iter_first_parent(head))
    except ValueError as exc:
        raise PatchstackError("every commit down to the root carries a patch trailer") from exc


def require_movable(stack: Stack) -> None:
    """Refuse to build on HEAD when plain commits cover applied patch commits."""
    if stack.buried:
        n = len(stack.covered_by)
        raise RefusedError(
            f"HEAD has {n} commit(s) on top of the applied patch '{stack.buried}'"
            f" ({', '.join(c[:12] for c in stack.covered_by[:3])})",
            "make them patches ('patchstack import commits'), or move them off with"
            " 'git rebase'/'git reset'; nothing was changed",
        )


def require_base(series: Series, stack: Stack) -> None:
    """Refuse to capture against a base the series was not made on."""
    if series.base and series.entries and stack.base != series.base:
        raise RefusedError(
            f"the stack's base {stack.base[:12]} is not the series base {series.base[:12]}",
            "run 'patchstack refresh' first, so that the new patch fits the series",
        )


def resolve_rev(git: Git, rev: str) -> Oid:
    found = git.rev_parse(rev)
    if found is None:
        raise PatchstackError(f"unknown revision '{rev}'", "give a commit, branch or tag")
    return found


def make_engine(ws: Checkout, series: Series, stack: Stack) -> Engine:
    from ..engine.chain import Engine, no_base_error
    from ..engine.loaded import LoadedPatch

    git = ws.git
    base = series.base
    if base and git.rev_parse(base) is None and stack.base != base:
        raise no_base_error(base)
    canonical = Oid(base) if base else stack.base

    def load(entry: Entry) -> LoadedPatch:
        data, patch = ws.read_patch(entry)
        return LoadedPatch(entry, data, patch, ws.display(ws.patch_path(entry.name)))

    default: list[tuple[str, str]] = []

    def default_author() -> tuple[str, str]:
        if not default:
            default.append((git.ident()[0], git.commit_date(canonical)))
        return default[0]

    return Engine(git, series, load, canonical, default_author)
