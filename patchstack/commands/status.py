"""``status``: the base, the applied and unapplied patches, uncommitted edits, and whether each
applied commit still carries exactly its patch file's change."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..journal.oplog import current_refresh
from ..model.ids import Oid
from ..model.series import Series
from .refresh.proof import DIFFERS, EDITED, prove
from .state import on_top_problem, read_stack


@dataclass(frozen=True)
class PatchState:
    name: str
    tag: str | None
    applied: bool
    commit: Oid | None
    matches: str | None  # see `proof`: exact, carried, edited, differs; None when not applied
    labels: tuple[str, ...] = ()
    commit_tag: str | None = None  # the tag its applied commit's trailer says


@dataclass(frozen=True)
class StatusResult:
    branch: str | None
    head: Oid
    series_base: str | None
    base_ref: str | None
    stack_base: Oid
    patches: tuple[PatchState, ...]
    unknown_applied: tuple[str, ...]  # applied commits whose patch is not in the series
    edits: tuple[str, ...]  # uncommitted edits that belong to no patch
    edits_in_patches: dict[str, tuple[str, ...]]  # path -> applied patches touching it
    untracked: tuple[str, ...]
    operation: tuple[str, str] | None = None  # a git operation in progress: (name, its file)
    on_top: tuple[Oid, ...] = ()  # plain commits on top of the applied patches
    on_top_problem: tuple[str, str] | None = None  # what they are, what to do
    out_of_order: tuple[str, ...] = ()  # applied patches whose order is not the series order
    refresh_stopped: bool = False  # a refresh is stopped at a conflict

    @property
    def differs(self) -> list[str]:
        """Applied patches whose commit is not exactly their patch file (edited or changed)."""
        return [p.name for p in self.patches if p.matches in (EDITED, DIFFERS)]

    @property
    def tags_differ(self) -> list[PatchState]:
        """Applied patches whose commit's trailer says another tag than the series."""
        return [p for p in self.patches if p.applied and p.commit_tag != p.tag]

    @property
    def disagreements(self) -> tuple[str, ...]:
        """How the applied stack disagrees with the series, one sentence each (status exits
        1 when there is any: the pre-commit hook ``patchstack-status`` relies on it)."""
        out = []
        for p in self.patches:
            if p.matches == DIFFERS:
                out.append(f"the commit of {p.name} differs from its patch file")
            elif p.matches == EDITED:
                out.append(f"the patch file of {p.name} was edited since it was applied")
        out += [f"{n} is applied but not in the series" for n in self.unknown_applied]
        if self.out_of_order:
            out.append("applied in another order than the series: " + ", ".join(self.out_of_order))
        for p in self.tags_differ:
            out.append(f"the commit of {p.name} says tag {p.commit_tag}, the series {p.tag}")
        if self.on_top:
            what = self.on_top_problem[0] if self.on_top_problem else "commits on top"
            out.append(f"{len(self.on_top)} commit(s) that are not patches cover the stack: {what}")
        if self.operation:
            out.append(f"a git {self.operation[0]} is in progress")
        if self.refresh_stopped:
            out.append("a refresh is stopped at a conflict")
        # A stack on another base than the series is not counted: 'push --onto' and
        # 'worktree --onto' make one on purpose; status says so and what to run.
        return tuple(out)


def status(ws: Checkout) -> StatusResult:
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    ws.progress.step("checking the applied commits")
    verdicts = prove(ws, series, stack).verdicts
    states = []
    for e in series.entries:
        ap = stack.find(e.name)
        commit = ap.commit if ap else None
        tag = ap.tag if ap else None
        states.append(
            PatchState(e.name, e.tag, ap is not None, commit, verdicts.get(e.name), e.labels, tag)
        )
    dirty = git.dirty(exclude=ws.in_tree)
    operation = git.operation_in_progress()
    touched: dict[str, list[str]] = {}
    for ap in stack.applied:
        if ap.name in series:
            for p in ws.proven_bytes(series.entry(ap.name))[1].paths:
                touched.setdefault(p, []).append(ap.name)
    in_patches = {p: tuple(touched[p]) for p in dirty.modified if p in touched}
    edits = tuple(p for p in dirty.modified + dirty.unmerged if p not in touched)
    return StatusResult(
        git.head_ref(),
        stack.head,
        series.base,
        series.base_ref,
        stack.base,
        tuple(states),
        tuple(n for n in stack.names if n not in series),
        edits,
        in_patches,
        dirty.untracked,
        operation,
        stack.on_top,
        on_top_problem(stack),
        _out_of_order(series, stack.names),
        current_refresh(git) is not None,
    )


def _out_of_order(series: Series, applied: tuple[str, ...]) -> tuple[str, ...]:
    known = [n for n in applied if n in series]
    ranked = sorted(known, key=series.index)
    return tuple(n for n, want in zip(known, ranked, strict=True) if n != want)
