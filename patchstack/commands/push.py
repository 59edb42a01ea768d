"""``push``: apply patches in series order, on the base or ``--onto`` another commit; and the
move every command that changes which patches are applied shares (`move_stack`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model import selection
from ..model.ids import Oid
from ..model.selection import Selector, resolve_name
from ..model.series import Series
from ..model.stack import AppliedPatch, Stack
from ..transaction import Plan, publish
from .deps import Deps, leaned_on
from .deps import with_deps as add_deps
from .refresh.proof import EDITED, Proof, prove, refuse_dropping, remember_exact
from .state import (
    follow_renames,
    keep_after,
    known_before,
    make_engine,
    plain_commits,
    read_stack,
    require_movable,
    resolve_rev,
)

if TYPE_CHECKING:
    from .refresh.settle import RefreshResult

Progress = Callable[[int, int], None] | None  # (done, total)


@dataclass(frozen=True)
class MoveResult:
    before: tuple[str, ...]
    after: tuple[str, ...]
    head: Oid
    base: Oid
    rebuilt: tuple[str, ...]
    upstream: tuple[str, ...] = ()  # asked for, but the tree holds them already: not applied
    replaced: int = 0  # plain commits that carried the series, now patch commits (same tree)
    deps: Deps = ()  # unselected patches carried along (--with-deps, --keep-deps), and why
    deferred: tuple[str, ...] = ()  # asked for, but deferred: 'push NAME' brings one back

    @property
    def added(self) -> list[str]:
        before = set(self.before)
        return [n for n in self.after if n not in before]

    @property
    def removed(self) -> list[str]:
        after = set(self.after)
        return [n for n in self.before if n not in after]


def unchanged(stack: Stack) -> MoveResult:
    return MoveResult(stack.names, stack.names, stack.head, stack.base, ())


def move_stack(
    ws: Checkout,
    series: Series,
    stack: Stack,
    target: Sequence[str],
    onto: Oid | None,
    kind: str,
    progress: Progress = None,
    discard: bool = False,
    proof: Proof | None = None,
) -> MoveResult:
    """Make exactly ``target`` (series order) applied, on ``onto`` or the current base.

    Applied commits are kept where the target keeps them in place; every other one is rebuilt
    from its patch file or dropped, which is refused for a commit that differs from its file
    (unless ``discard``). A patch file edited since it was applied is rebuilt from the file.
    """
    if proof is None:
        ws.progress.step("checking the applied commits")
        proof = prove(ws, series, stack)
    base = onto or stack.base
    keep: list[AppliedPatch] = []
    if base == stack.base:
        for have, want in zip(stack.applied, target, strict=False):
            if have.name != want or proof.verdicts.get(have.name) == EDITED:
                break
            if stack.was_renamed(have.name):  # made again, its commit saying its new name
                break
            keep.append(have)
    if not discard:
        refuse_dropping(proof, [ap.name for ap in stack.applied[len(keep) :]], f"patchstack {kind}")
    rest = list(target[len(keep) :])
    missing = [n for n in rest if n not in series]
    if missing:
        raise PatchstackError(
            f"applied patch '{missing[0]}' is not in the series",
            "put it back into the series file, or pop it first",
        )
    head = keep[-1].commit if keep else base
    upstream: tuple[str, ...] = ()
    if rest:
        from ..engine.build import build

        ws.progress.step("building commits")
        engine = make_engine(ws, series, stack)
        try:
            base_tree = ws.git.tree_of(base) if base != stack.base else stack.base_tree
            built = build(engine, base, base_tree, keep, rest, progress)
        finally:
            engine.close()
        head, upstream = built.head, built.upstream
    known_before(ws, head)
    publish(ws, Plan(kind, stack.head, head))
    keep_after(ws, head)  # the stack left, as the operation log read it: not walked again
    if stack.renamed:  # a teammate's rename: its recorded resolutions say the new name too
        from .refresh.resolutions import Resolutions

        records = Resolutions(ws)
        for was, now in stack.renamed:
            records.renamed(was, now)
    if rest:
        remember_exact(ws, engine.proven)
    after = tuple(n for n in target if n not in upstream)
    rebuilt = tuple(n for n in rest if n not in upstream)
    return MoveResult(stack.names, after, head, base, rebuilt, upstream)


def push(
    ws: Checkout,
    sel: Selector,
    onto: str | None = None,
    progress: Progress = None,
    discard: bool = False,
    with_deps: bool = False,
) -> MoveResult | RefreshResult:
    """The patches ``sel`` names applied; a deferred patch named is brought back (a replay
    of the series with its change, `refresh.undefer`), and deferred ones are otherwise left
    out (`MoveResult.deferred`)."""
    series = ws.load_series()
    stack = follow_renames(ws, series, read_stack(ws.git))
    deferred = series.deferred
    if sel.name is not None and resolve_name(series, sel.name) in deferred:
        from .refresh.undefer import bring_back

        named = resolve_name(series, sel.name)
        target = selection.push_target(series, stack.names, sel)
        ws.progress.step("replaying the series")
        return bring_back(ws, [named], [n for n in target if n not in deferred], progress)
    # ``import commits`` of HEAD's own history: the patch commits go in their place.
    plain = plain_commits(ws, series, stack) if onto is None else 0
    if not plain:
        require_movable(stack)
    target = selection.push_target(series, stack.names, sel)
    held = tuple(n for n in target if n in deferred and n not in stack.names)
    target = [n for n in target if n not in held]
    deps: Deps = ()
    if with_deps:
        deps = leaned_on(ws, series, target, (n for n in series.names if n not in target))
        target = add_deps(series.names, target, deps)
    onto_oid = resolve_rev(ws.git, onto) if onto else None
    if plain and not stack.applied:
        onto_oid = Oid(series.base or "")
    ws.progress.step("checking the applied commits")
    proof = prove(ws, series, stack)
    stale = proof.named(EDITED)
    if (
        tuple(target) == stack.names
        and (onto_oid is None or onto_oid == stack.base)
        and not stale
        and not stack.renamed
    ):
        return replace(unchanged(stack), deps=deps, deferred=held)
    result = move_stack(ws, series, stack, target, onto_oid, "push", progress, discard, proof)
    return replace(result, replaced=plain, deps=deps, deferred=held)
