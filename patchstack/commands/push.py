"""``push``: apply patches in series order, on the base or ``--onto`` another commit; and the
move every command that changes which patches are applied shares (`move_stack`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model import selection
from ..model.ids import Oid
from ..model.selection import Selector
from ..model.series import Series
from ..model.stack import AppliedPatch, Stack
from ..transaction import Plan, publish
from .refresh.proof import EDITED, Proof, prove, refuse_dropping, remember_exact
from .state import make_engine, read_stack, require_movable, resolve_rev

Progress = Callable[[int, int], None] | None  # (done, total)


@dataclass(frozen=True)
class MoveResult:
    before: tuple[str, ...]
    after: tuple[str, ...]
    head: Oid
    base: Oid
    rebuilt: tuple[str, ...]

    @property
    def added(self) -> list[str]:
        return [n for n in self.after if n not in self.before]

    @property
    def removed(self) -> list[str]:
        return [n for n in self.before if n not in self.after]


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
    built = []
    if rest:
        ws.progress.step("building commits")
        engine = make_engine(ws, series, stack)
        try:
            base_tree = ws.git.tree_of(base) if base != stack.base else stack.base_tree
            built = engine.build(base, base_tree, keep, rest, progress)
        finally:
            engine.close()
    head = built[-1][1] if built else (keep[-1].commit if keep else base)
    publish(ws, Plan(kind, stack.head, head))
    if rest:
        remember_exact(ws.git, engine.proven)
    return MoveResult(stack.names, tuple(target), head, base, tuple(rest))


def push(
    ws: Checkout,
    sel: Selector,
    onto: str | None = None,
    progress: Progress = None,
    discard: bool = False,
) -> MoveResult:
    series = ws.load_series()
    stack = read_stack(ws.git)
    require_movable(stack)
    target = selection.push_target(series, stack.names, sel)
    onto_oid = resolve_rev(ws.git, onto) if onto else None
    ws.progress.step("checking the applied commits")
    proof = prove(ws, series, stack)
    stale = proof.named(EDITED)
    if tuple(target) == stack.names and (onto_oid is None or onto_oid == stack.base) and not stale:
        return unchanged(stack)
    return move_stack(ws, series, stack, target, onto_oid, "push", progress, discard, proof)
