"""What a refresh says of the patches the new base holds: the upstream commit that brought
each (`engine.evidence`), the series' ``# upstream:`` marks that keep them (`model.marks`), and
why ``--drop-merged`` took one out (a note of the operation log, shown by ``log NAME``)."""

from __future__ import annotations

from ...engine.evidence import History, first_holding, history, recorded
from ...git import Git
from ...model.conflict import UpstreamCommit
from ...model.series import Series, Upstream
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
