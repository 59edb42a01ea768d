"""A relocation taken without asking (``refresh --probes``): when upstream deleted a patch's
file and `engine.relocate` carried every one of its hunks to where their lines went, the
proposal becomes the patch if the patch's probe is effective on it (passes on the proposed
tree, fails on the tree without the patch), as a resolver's proposal is verified. Without
``--probes`` nothing of the series folder runs, and the relocation stays a proposal that the
refresh stops with (``refresh --continue`` takes it).

Taken only when the proposal is whole: every conflicted path of the merge is a file upstream
deleted, each of their hunks carried. A knock-on (`knockons.triaged`) is never taken; it is
deferred with its root. An accepted relocation is recorded as a resolution ``by`` `BY`
(machine-made in the review), and the refresh that took it is one ``undo``.
"""

from __future__ import annotations

from ...checkout import Checkout
from ...engine.relocate import Relocator
from ...engine.replay import Step
from ...git import MergeResult
from ...model.ids import Oid
from ...model.proposal import Proposal
from ...model.series import Series
from .knockons import KnockOns
from .resolutions import Resolutions
from .resolver import knock_on, probe_refutes
from .stopped import State

BY = "patchstack relocation"


class Relocating:
    """The replay's hook for relocations: ``accept(records, step, tree, merged)`` is the
    verified relocation's tree, or None; `proposals` says what became of each one tried."""

    def __init__(self, ws: Checkout, series: Series, knock_ons: KnockOns, seconds: float) -> None:
        self.ws, self.series, self.knock_ons, self.seconds = ws, series, knock_ons, seconds
        state = knock_ons.state
        self.relocator = Relocator(ws.git, state.old_base, state.new_base, ws.store)
        self.proposals: list[Proposal] = []

    def accept(
        self, records: Resolutions, step: Step, tree: Oid, merged: MergeResult
    ) -> Oid | None:
        if step.name not in self.series or not merged.conflicted:
            return None
        found = self.relocator.propose(step.before, step.after, tree, merged)
        if found is None:
            return None
        whole = {r.path for r in found.relocations if r.whole}
        if set(merged.conflicted) - whole:
            return None  # a hunk not carried, or another conflict: the user's to finish
        summary = self.ws.proven_bytes(self.series.entry(step.name))[1]
        from ...model import fields  # (only where a whole relocation is found)

        probe = fields.probe_of(fields.read(summary.description, summary.fields))
        if not probe or knock_on(self.knock_ons, [], step.name, tree, merged):
            return None
        why = probe_refutes(self.ws.git, step.name, probe, found.tree, tree, self.seconds)
        said = found.summary()
        if why:
            self.proposals.append(Proposal(step.name, BY, False, f"{said}: {why}"))
            return None
        verified = f"{said}; its probe passes on it and fails without the patch"
        self.proposals.append(Proposal(step.name, BY, True, verified))
        records.record(
            step.name, step.before, tree, step.after, merged.tree, found.tree, merged.conflicted, BY
        )
        records.used.append(step.name)
        return found.tree


def relocating_of(
    ws: Checkout, series: Series, state: State, knock_ons: KnockOns
) -> Relocating | None:
    """The hook when the refresh was started with ``--probes`` (kept in its stopped state for
    ``--continue``), or None."""
    if state.probe_seconds is None:
        return None
    return Relocating(ws, series, knock_ons, state.probe_seconds)
