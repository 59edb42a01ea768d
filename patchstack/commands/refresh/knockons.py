"""Deferring at a refresh's replay: each conflict triaged once (primary, or a knock-on of a
patch the replay is missing: `engine.triage`), the knock-ons and the patches held for a
missing one deferred with their root (`KnockOns`, the replay's ``go_on`` and ``hold``; a held
patch that still conflicts with its root in place is primary, and waits for it all the same),
and the deferrals a refresh leaves (`defer`, `deferrals_after`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ...checkout import Checkout
from ...engine.contract import enabled
from ...engine.needs import Held as HeldBack
from ...engine.printed import first_traced, traced_as_printed
from ...engine.replay import Done
from ...engine.triage import KNOCK_ON, Failed, Proofs, reports
from ...errors import PatchstackError
from ...git import MergeResult
from ...git.attributes import merge_inputs
from ...model import trailers
from ...model.conflict import Conflict
from ...model.ids import Oid
from ...model.series import Deferral, Series
from .holds import needs, waiting
from .kept import KeptLines, KeptNeeds
from .stopped import State

if TYPE_CHECKING:
    from ...engine.placer import Placer
    from ...engine.renames import RenameProof


def triaged(
    ws: Checkout,
    state: State,
    series: Series,
    conflicts: Sequence[tuple[str, Oid, MergeResult]],
    attribute: bool = True,
    held: Sequence[HeldBack] = (),
    known: Collection[str] = (),
    done: Sequence[Done] | None = None,
    memo: dict[tuple[str, ...], MergeResult] | None = None,
    renames: RenameProof | None = None,
) -> list[Conflict]:
    """The reports of ``conflicts`` (in replay order) but those ``known`` already, each
    primary or a knock-on of an earlier patch this replay is missing (`engine.triage`);
    ``held``: the patches the replay left out for needing a missing one (`engine.needs`),
    missing too, each waiting for its root; with ``done`` (the patches the replay placed),
    their reports follow, each proven where it would have gone; ``memo``: the replay's proof
    merges (`KnockOns.memo`); ``renames``: the replay's rename proof (`engine.triage.reports`)."""
    missing: list[str] = [d.name for d in deferrals_after(series, state)]
    missing += [h.name for h in held]
    failed = []
    order = {s.name: i for i, s in enumerate(state.steps)}
    for name, onto, merged in conflicts:
        before = tuple(n for n in missing if order.get(n, -1) < order[name])
        if name not in known:
            failed.append(Failed(name, onto, merged, tuple(sorted(before, key=order.__getitem__))))
        missing.append(name)
    proved = []
    if done is not None and held:
        start = ws.git.tree_of(state.new_base)
        proved = waiting(held, state.steps, done, start, missing)

    def paths_of(name: str) -> tuple[str, ...]:
        return ws.proven_bytes(series.entry(name))[1].paths

    changes = {s.name: (s.before, s.after) for s in state.steps}
    # A patch still deferred is not on the chain (its step changes nothing): the knock-on
    # proof puts back its deferral's change, as `check` puts back the canonical chain's.
    kept = [s for s in state.steps if s.deferred and s.commit and s.before == s.after]
    if kept:
        trees = ws.git.trees_of([t for s in kept for t in (f"{s.commit}^", str(s.commit))])
        for i, s in enumerate(kept):
            changes[s.name] = (trees[2 * i], trees[2 * i + 1])
    return reports(
        ws.git,
        failed,
        paths_of,
        state.old_base,
        state.new_base,
        attribute,
        None,
        changes.get,
        proved,
        memo,
        {h.name: h.root for h in held},
        renames,
    )


class KnockOns:
    """The replay's ``go_on``: a conflict that is a knock-on of a patch already left out is
    deferred with it, and the replay goes on; a primary one stops it. ``needs``, the replay's
    ``hold``: a patch whose change needs a patch left out is deferred with it too."""

    def __init__(
        self, ws: Checkout, state: State, series: Series, placer: Placer | None = None
    ) -> None:
        self.ws, self.state, self.series = ws, state, series
        self.placer = placer  # its rename proof, once the replay began, serves the triage
        if placer is not None and enabled() and kept_on():
            placer.known = self._known_renames
        self.proof: RenameProof | None = None  # a resumed replay's (`resumed_proof`)
        self.seen: list[tuple[str, Oid, MergeResult]] = []
        self.deferred: set[str] = set()
        left = (n for n, _c, _r in state.deferrals)
        self.inputs: str | None = None  # `merge_inputs`, once asked
        # The proofs' merges (`engine.triage`), the replay's conflicts among them: each made
        # once for every conflict and held patch of this replay, and kept for the next
        # command of a refresh stop by stop (`kept`, `keep`); `engine.needs`' merges too.
        self.asked = False
        self.memo: Proofs | None = None
        if enabled():
            self.memo = Proofs(self._kept if kept_on() else None)
        memory = KeptNeeds(ws, self._inputs) if kept_on() else None
        self.needs = needs(
            ws,
            series,
            state.steps,
            left,
            state.undefer,
            (memory.get, memory.put) if memory else None,
            self.memo,
        )
        # Each conflict triaged once, as `defer` and `stop` would triage it again: a knock-on's
        # report (never traced) is theirs; a primary one is only primary.
        self.known: dict[str, Conflict] = {}

    def __call__(self, name: str, onto: Oid, merged: MergeResult) -> bool:
        self.seen.append((name, onto, merged))
        held, earlier = self.needs.held, self.known.keys()
        last = triaged(
            self.ws,
            self.state,
            self.series,
            self.seen,
            False,
            held,
            earlier,
            memo=self.memo,
            renames=self.renames,
        )[0]
        self.known[name] = last
        if last.kind == KNOCK_ON:
            self.deferred.add(name)
            return True
        return False

    def _kept(self) -> dict[tuple[str, ...], MergeResult]:
        """The proof merges an earlier command kept for what decides a merge here: the same
        trees (in the key) and the same `merge_inputs` (attributes, configuration, git)."""
        self.asked = True
        return kept(self.ws, self._inputs())

    def _inputs(self) -> str:
        if self.inputs is None:
            self.inputs = merge_inputs(self.ws.git)
        return self.inputs

    def keep(self) -> None:
        """Keep this command's proof merges and its replay's merges of its conflicts for the
        next one (`kept`), when it made any, and the replay's `needs` states."""
        self.needs.keep()
        proof = self.renames
        if proof is not None and kept_on() and proof.verdicts:
            self.ws.store.put(RENAMES, self._renames_key(proof), proof.known())
        memo = self.memo
        if memo is None or not kept_on() or not (self.asked or memo.replayed):
            return
        memo.get(())  # those kept before, loaded first: they are kept again
        self.ws.store.put(SECTION, self._inputs(), _plain(memo.kept()[-LIMIT:]))

    @property
    def renames(self) -> RenameProof | None:
        return self.placer.renames if self.placer is not None else self.proof

    def resumed_proof(self, start: int) -> RenameProof | None:
        """The rename proof of a replay resumed at step ``start`` (a skip, a continue: no
        placer), for its merges and the triage's: of the same two trees as the first
        command's (the old chain's first, the new base), so that the verdicts it reached, kept
        (`keep`), are taken. None with ``PATCHSTACK_NO_RESUMED_RENAMES=1`` (every merge of a
        file ours lost is then the whole merge) or no shortcuts."""
        steps = self.state.steps
        if not enabled() or os.environ.get(NO_RESUMED_RENAMES) or start >= len(steps):
            return None
        from ...engine.renames import RenameProof, lost_of

        git = self.ws.git
        new_base = git.tree_of(self.state.new_base)

        def lost() -> list[tuple[str, str]]:  # read at the first question, if any
            diffs = git.raw_diffs([(s.before, s.after) for s in steps[start:]])
            return lost_of(git, diffs, new_base)

        loader = self._known_renames if kept_on() else None
        self.proof = RenameProof(git, steps[0].before, new_base, lost, loader)
        self.proof.start(background=False)
        return self.proof

    def _renames_key(self, proof: RenameProof) -> str:
        return f"{proof.old_base} {proof.new_base} {self._inputs()}"

    def _known_renames(self) -> list[list[str]]:
        """The verdicts of the rename proof kept for the same two trees and inputs."""
        proof = self.renames
        found = self.ws.store.get(RENAMES, self._renames_key(proof)) if proof else None
        return found if isinstance(found, list) else []

    def split(
        self, conflicts: Sequence[tuple[str, Oid, MergeResult]]
    ) -> tuple[list[tuple[str, Oid, MergeResult]], tuple[str, Oid, MergeResult] | None]:
        """(the conflicts deferred as knock-ons, the one the replay stopped at or None)."""
        left = [c for c in conflicts if c[0] in self.deferred]
        stopped = conflicts[-1] if conflicts and conflicts[-1][0] not in self.deferred else None
        return left, stopped


def defer(
    ws: Checkout,
    state: State,
    series: Series,
    conflicts: Sequence[tuple[str, Oid, MergeResult]],
    knock_ons: KnockOns,
    done: Sequence[Done],
    late: bool = False,
) -> tuple[State, list[Conflict], Callable[[list[Conflict]], list[Conflict]]]:
    """``state`` with these conflicting patches, and those the replay held for needing one
    that is missing (``knock_ons.needs``), deferred (each with the commit of its old change,
    and the root it waits for), their reports, triaged (a conflict once: ``knock_ons``
    knows some; its proof merges reused), in replay order, and what traces them; ``done``:
    the patches the replay placed, where a held one would have gone. The short output
    traces what it prints only (`engine.printed`); ``late``: not yet, the walk of the files
    it traces first begun (`KeptLines.start`), git walking while the refresh regenerates its
    patch files and judges its verdicts, the reports traced when the caller asks (what is
    deferred, and the series, never depend on a culprit)."""
    held = knock_ons.needs.held
    if not conflicts and not held:
        knock_ons.keep()
        return state, [], _as_they_are
    order = {s.name: i for i, s in enumerate(state.steps)}
    again = {n: c for n, c in knock_ons.known.items() if c.kind == KNOCK_ON}
    memo = knock_ons.memo
    lazy = ws.printed is not None  # the short output: trace what it prints only
    found = triaged(
        ws, state, series, conflicts, not lazy, held, again.keys(), done, memo, knock_ons.renames
    )
    trace: Callable[[list[Conflict]], list[Conflict]] = _as_they_are
    if lazy:  # each file's culprit walk kept: one a `check` before it printed is not walked
        walk = KeptLines(ws, knock_ons._inputs()) if kept_on() else None
        old, new = state.old_base, state.new_base  # (the bases: ``state`` is made anew below)

        def trace(reports: list[Conflict]) -> list[Conflict]:
            return traced_as_printed(ws.git, reports, old, new, (), walk)

        if not late:
            found, trace = trace(found), _as_they_are
        elif walk is not None and old:  # (only primaries are traced: those of `again` are
            # knock-ons, traced or not alike)
            walk.start(f"{old}..{new}", first_traced(found, ()), trailers.PATCH)
    found += [again[c[0]] for c in conflicts if c[0] in again]
    found = sorted(found, key=lambda c: order[c.patch])
    commit = {s.name: s.commit for s in state.steps}
    made = list(state.deferrals)
    for report in found:
        change = commit.get(report.patch)
        if change is None:
            raise PatchstackError(
                f"patch '{report.patch}' cannot be deferred: the commit of its change is unknown",
                "resolve the conflict instead ('patchstack refresh --continue')",
            )
        made.append((report.patch, change, report.root))
    primaries = [r.patch for r in found if r.kind != KNOCK_ON and r.root]
    knock_ons.keep()
    state = replace(state, deferrals=tuple(made), primaries=(*state.primaries, *primaries))
    return state, found, trace


def _as_they_are(reports: list[Conflict]) -> list[Conflict]:
    return reports


SECTION = "proofs"  # of the one cache (`store`): inputs digest -> the merges kept
RENAMES = "renames"  # (the rename proof's two trees, inputs digest) -> its verdicts
NO_RESUMED_RENAMES = "PATCHSTACK_NO_RESUMED_RENAMES"  # set: no rename proof at a skip
LIMIT = 4096  # merges kept, at most
OFF = "PATCHSTACK_NO_PROOF_CACHE"  # set: nothing kept from one command for the next


def kept_on() -> bool:
    return os.environ.get(OFF) is None


Plain = list[
    tuple[tuple[str, ...], tuple[str, bool, tuple[str, ...], str, tuple[tuple[str, str], ...]]]
]


def _plain(made: Sequence[tuple[tuple[str, ...], MergeResult]]) -> Plain:
    return [
        (
            tuple(str(x) for x in k),
            (
                str(m.tree),
                bool(m.clean),
                tuple(str(p) for p in m.conflicted),
                str(m.messages),
                tuple((str(a), str(b)) for a, b in m.sides),
            ),
        )
        for k, m in made
    ]


def kept(ws: Checkout, inputs: str) -> dict[tuple[str, ...], MergeResult]:
    """The proof merges kept under ``inputs`` (`KnockOns.keep`) whose trees this repository
    has (a cache, never trusted: anything malformed is nothing kept)."""
    found = ws.store.get(SECTION, inputs)
    try:
        entries = [
            (tuple(k), MergeResult(Oid(t), bool(c), tuple(p), str(m), tuple(map(tuple, s))))
            for k, (t, c, p, m, s) in found or ()
        ]
    except (TypeError, ValueError):
        return {}
    if not all(isinstance(x, str) for k, r in entries for x in (*k, r.tree, *r.conflicted)):
        return {}
    have = ws.git.has_objects(sorted({r.tree for _k, r in entries}))
    return {k: r for k, r in entries if have.get(r.tree)}


def deferrals_after(series: Series, state: State) -> list[Deferral]:
    """The deferred patches once this refresh is done: those deferred before it that it did
    not bring back, and those it deferred."""
    kept = [d for n, d in series.deferred.items() if n not in state.undefer]
    made = [
        Deferral(n, c, r, n in state.primaries, n in state.no_ops) for n, c, r in state.deferrals
    ]
    return kept + made
