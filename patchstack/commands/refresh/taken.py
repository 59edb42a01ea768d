"""What a refresh says of the patches the new base holds: their verdicts
(`engine.verdicts.held`), the series' ``# upstream:`` marks that keep them (`model.marks`), the
``Applied-Upstream:`` field it fills in where the patch's header has none, and why
``--drop-merged`` took one out (a note of the operation log, shown by ``log NAME``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...checkout import Checkout
from ...engine.evidence import recorded
from ...engine.verdicts import NO_OP, Held, held
from ...git.attributes import merge_inputs
from ...model.conflict import UpstreamCommit
from ...model.ids import Oid
from ...model.patchfile import Patch
from ...model.series import Series, Upstream
from ...transaction import FileWrite
from .kept import Kept
from .knockons import kept_on
from .stopped import State


def judge(
    ws: Checkout,
    series: Series,
    state: State,
    names: set[str],
    missing: Sequence[str],
    inputs: str | None = None,
) -> dict[str, Held]:
    """The verdict of each of ``names`` (the patches the new base holds), ``missing`` left
    out (`engine.verdicts.held`); an earlier refresh's proof (the mark's upstream commit)
    taken where the mark is this change's; a verdict an earlier command of this refresh
    made with the same inputs taken from the cache (`kept.Kept`); ``inputs``: `merge_inputs`
    as this command found it, when nothing it digests changed since."""
    if not names:
        return {}
    git = ws.git
    proved = {}
    for step in state.steps:
        mark = series.upstream.get(step.name)
        if step.name in names and mark and mark.evidence and mark.commit == step.commit:
            proved[step.name] = recorded(git, mark.evidence)
    old = state.old_base
    kept = None
    if kept_on() and names - proved.keys():
        kept = (Kept(ws), inputs or merge_inputs(git))
    return held(git, state.steps, names, missing, old, state.new_base, proved, kept)


def no_op_deferrals(state: State, judged: dict[str, Held], deferred: Sequence[str]) -> State:
    """``state`` with each ``no-op`` patch deferred as a knock-on of the deferred patch whose
    absence makes it one: it comes back with it (``push ROOT``), never marked upstream."""
    # Only a patch whose commit carries its own change: a deferral's commit is proven its
    # file's when it comes back (`engine.claims`).
    commit = {s.name: s.commit for s in state.steps if s.before != s.after}
    made, no_ops = list(state.deferrals), list(state.no_ops)
    for name, h in judged.items():
        roots = [n for n in h.missing if n in deferred]
        if h.verdict == NO_OP and roots and commit.get(name):
            made.append((name, Oid(commit[name] or ""), roots[-1]))
            no_ops.append(name)
    return replace(state, deferrals=tuple(made), no_ops=tuple(no_ops))


def upstream_marks(
    series: Series, state: State, upstream: set[str], evidence: dict[str, UpstreamCommit]
) -> list[Upstream]:
    """The ``# upstream:`` marks after the refresh: one for each patch of ``upstream`` whose
    change is known (its commit on the old chain, kept reachable by the log)."""
    by_name = {s.name: s for s in state.steps}
    marks = [
        Upstream(s.name, s.commit, evidence[s.name].oid if s.name in evidence else None)
        for s in state.steps
        if s.name in upstream and s.commit and s.before != s.after
    ]
    return marks + [u for n, u in series.upstream.items() if n in upstream and n not in by_name]


def dropped_note(evidence: UpstreamCommit | None) -> str:
    """Why ``--drop-merged`` took a patch out, for its history (``log NAME``)."""
    if evidence is None:
        return "dropped (--drop-merged): the new base holds its change"
    return f"dropped (--drop-merged): upstream took it in {evidence.oid[:10]} {evidence.subject}"


def applied_fields(
    ws: Checkout, series: Series, evidence: dict[str, UpstreamCommit]
) -> dict[str, FileWrite]:
    """The patch files of ``evidence`` whose header names no ``Applied-Upstream`` yet, with
    the upstream commit that brought them (DEP-3, as ``patchstack upstream NAME applied``
    writes it; the diff keeps its bytes)."""
    from ...model import fields  # (these three: only where a patch was found upstream's)
    from ..edit import with_message
    from ..upstream import applied_upstream, day_of

    today = day_of(ws.git.now())
    out = {}
    for name, found in evidence.items():
        if not found.oid or name not in series:
            continue
        data, patch = ws.read_patch(series.entry(name))
        have = fields.read(patch.description, patch.fields)
        if fields.value(have, fields.APPLIED) is not None:
            continue

        def compose(text: str, _patch: Patch, commit: str = found.oid) -> str:
            return applied_upstream(text, commit, today)

        new = with_message(ws, name, data, patch, compose)
        if new != data:
            out[name] = FileWrite(ws.patch_path(name), new)
    return out
