"""What a refresh says of the patches the new base holds: the upstream commit that brought
each (`engine.evidence`), the series' ``# upstream:`` marks that keep them (`model.marks`), the
``Applied-Upstream:`` field it fills in where the patch's header has none, and why
``--drop-merged`` took one out (a note of the operation log, shown by ``log NAME``)."""

from __future__ import annotations

from ...checkout import Checkout
from ...engine.evidence import History, first_holding, history, recorded
from ...git import Git
from ...model import fields
from ...model.conflict import UpstreamCommit
from ...model.patchfile import Patch
from ...model.series import Series, Upstream
from ...transaction import FileWrite
from ..edit import with_message
from ..upstream import applied_upstream, day_of
from .stopped import State


def upstream_evidence(
    git: Git, series: Series, state: State, upstream: set[str]
) -> dict[str, UpstreamCommit]:
    """The upstream commit that brought each of ``upstream`` (the patches the new base
    holds), where one can be named (`engine.evidence`)."""
    found: dict[str, UpstreamCommit] = {}
    walked: History | None = None
    moved = bool(state.old_base) and state.old_base != state.new_base
    for step in state.steps:
        if step.name not in upstream or step.before == step.after:
            continue
        mark = series.upstream.get(step.name)
        if mark and mark.evidence and mark.commit == step.commit:
            found[step.name] = recorded(git, mark.evidence)  # found by an earlier refresh
        elif moved and state.old_base:
            walked = walked or history(git, state.old_base, state.new_base)
            hit = first_holding(git, step.before, step.after, walked)
            if isinstance(hit, UpstreamCommit):
                found[step.name] = hit
    return found


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
