"""What a refresh says of the patches the new base holds: their verdicts
(`engine.verdicts.held`), the series' ``# upstream:`` marks that keep them (`model.marks`), the
``Applied-Upstream:`` field it fills in where the patch's header has none, and why
``--drop-merged`` took one out (a note of the operation log, shown by ``log NAME``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...checkout import Checkout
from ...engine.evidence import History, recorded
from ...engine.verdicts import NO_OP, UNKNOWN, UPSTREAM, Held, held
from ...git.attributes import merge_inputs
from ...model import fields
from ...model.conflict import UpstreamCommit
from ...model.ids import Oid
from ...model.patchfile import Patch
from ...model.series import Series, Upstream
from ...transaction import FileWrite
from ..edit import with_message
from ..upstream import applied_upstream, day_of
from .knockons import kept_on
from .stopped import State

VERDICTS = (UPSTREAM, NO_OP, UNKNOWN)


def judge(
    ws: Checkout, series: Series, state: State, names: set[str], missing: Sequence[str]
) -> dict[str, Held]:
    """The verdict of each of ``names`` (the patches the new base holds), ``missing`` left
    out (`engine.verdicts.held`); an earlier refresh's proof (the mark's upstream commit)
    taken where the mark is this change's; a verdict an earlier command of this refresh
    made with the same inputs taken from the cache (`KeptVerdicts`)."""
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
        kept = (KeptVerdicts(ws), merge_inputs(git))
    return held(git, state.steps, names, missing, old, state.new_base, proved, kept)


SECTION = "held"  # of the one cache (`store`): a verdict's key -> the verdict


class KeptVerdicts:
    """The verdicts of `engine.verdicts.held` kept in the git directory's cache from one
    command for the next (a cache, never trusted: an entry that is not a verdict of that
    patch, or names a commit this repository lacks, is none)."""

    def __init__(self, ws: Checkout) -> None:
        self.ws = ws

    def get(self, key: str, name: str) -> Held | None:
        found = self.ws.store.get(SECTION, key)
        try:
            who, verdict, oid, subject, known, missing = found  # type: ignore[misc]
        except (TypeError, ValueError):
            return None
        texts = (who, verdict, oid, subject, *missing)
        if who != name or verdict not in VERDICTS or not all(isinstance(t, str) for t in texts):
            return None
        if known and not self.ws.git.has_objects([oid]).get(oid):
            return None
        return Held(verdict, UpstreamCommit(oid, subject) if known else None, tuple(missing))

    def put(self, key: str, name: str, held: Held) -> None:
        e = held.evidence
        plain = (name, held.verdict, e.oid if e else "", e.subject if e else "", e is not None)
        self.ws.store.put(SECTION, key, (*plain, tuple(held.missing)))

    def walk(self, old_base: str, new_base: str) -> History | None:
        """The first-parent walk of ``old_base..new_base`` kept (both commit ids, so what
        it lists never changes); None when not kept or not a walk of that range."""
        found = self.ws.store.get(SECTION, _walk_key(old_base, new_base))
        try:
            base, commits, trees, subjects = found  # type: ignore[misc]
            walked = History(base, tuple(commits), tuple(trees), tuple(subjects))
        except (TypeError, ValueError):
            return None
        lists = (walked.commits, walked.trees, walked.subjects)
        if base != old_base or len({len(x) for x in lists}) != 1:
            return None
        if not all(isinstance(x, str) for x in (*walked.commits, *walked.trees, *subjects)):
            return None
        if walked.commits and walked.commits[-1] != new_base:
            return None
        return walked

    def keep_walk(self, walked: History, new_base: str) -> None:
        if _is_id(walked.old_base) and _is_id(new_base):
            plain = (walked.old_base, walked.commits, walked.trees, walked.subjects)
            self.ws.store.put(SECTION, _walk_key(walked.old_base, new_base), plain)


def _walk_key(old_base: str, new_base: str) -> str:
    return f"walk {old_base}..{new_base}"


def _is_id(rev: str) -> bool:
    return len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)


def no_op_deferrals(state: State, judged: dict[str, Held], deferred: Sequence[str]) -> State:
    """``state`` with each ``no-op`` patch deferred as a knock-on of the deferred patch whose
    absence makes it one: it comes back with it (``push ROOT``), never marked upstream."""
    # Only a patch whose commit carries its own change: a deferral's commit is proven its
    # file's when it comes back (`engine.claims`).
    commit = {s.name: s.commit for s in state.steps if s.before != s.after}
    made = list(state.deferrals)
    for name, h in judged.items():
        roots = [n for n in h.missing if n in deferred]
        if h.verdict == NO_OP and roots and commit.get(name):
            made.append((name, Oid(commit[name] or ""), roots[-1]))
    return replace(state, deferrals=tuple(made))


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
