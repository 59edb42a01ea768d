"""``status``: the base, the applied and unapplied patches, uncommitted edits, whether each
applied commit still carries exactly its patch file's change, and what each patch's header
says of its probe and its upstream status."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from ..checkout import Checkout, PatchSummary, experiment_note
from ..git import FastImport
from ..journal.oplog import BrokenLog, current_refresh, interrupted
from ..model.ids import Oid
from ..model.marks import Mark
from ..model.series import Series, new_series
from ..model.stack import Stack
from .refresh.proof import DIFFERS, EDITED, prove
from .state import follow_renames, on_top_problem, plain_commits, read_stack
from .upstream import Standing, standings, today


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
class StoppedAt:
    """A refresh stopped at a conflict: the patch, the files its merge wrote (markers and
    all: the user resolves them, they are not edits in no patch), and where it goes."""

    patch: str
    files: tuple[str, ...]
    conflicted: tuple[str, ...]  # of those, the ones with conflict markers to resolve
    onto: str  # the new base, with its ref when there is one
    place: int  # its place among the refresh's patches, from 0 (those deferred count too)
    total: int
    command: str = "patchstack refresh"  # what goes on or back: refresh, or import branch

    @property
    def verb(self) -> str:
        return "import" if self.command.endswith("import branch") else "refresh"


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
    plain_series: int = 0  # HEAD carries the series as this many plain commits (imported)
    built_on: str | None = None  # 'worktree --onto REV' made this stack on REV, on purpose
    fold_into: str | None = None  # the patch 'refresh --patch' must name for the edits
    stopped: StoppedAt | None = None  # where the stopped refresh is (refresh_stopped)
    in_base: tuple[str, ...] = ()  # unapplied patches the series base already holds
    standings: tuple[Standing, ...] = ()  # each patch's probe and upstream status
    today: date | None = None  # when a submission's age is told
    submodules: tuple[str, ...] = ()  # submodules with changes to their own files (no patch's)
    marks: tuple[Mark, ...] = ()  # the series' deferred and upstream marks
    interrupted: str | None = None  # a command whose publish was interrupted (status exits 1)
    repaired: str | None = None  # what status repaired: a dangling scratch ref it deleted
    stepping: str | None = None  # where a stepped refresh (refresh --steps) is
    renamed: tuple[tuple[str, str], ...] = ()  # applied commits under a name before a rename
    placed: tuple[str, ...] = ()  # a first import stopped: the patches it placed so far

    def mark_of(self, name: str) -> Mark | None:
        return next((m for m in self.marks if m.name == name), None)

    @property
    def real_base(self) -> Oid:
        """The commit below the fork's own work: the stack's base, or the series base when
        HEAD carries the series as plain commits (they are not upstream's)."""
        return Oid(self.series_base) if self.plain_series and self.series_base else self.stack_base

    @property
    def without_probe(self) -> list[str]:
        return [s.name for s in self.standings if s.probe is None]

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
    first_import = not ws.exists() and current_refresh(git) is not None
    # A first 'import branch' stopped: no series yet.
    series = new_series(read_stack(git).base) if first_import else ws.load_series()
    stack = follow_renames(ws, series, read_stack(git))
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
    # Each patch file read once (its paths, its header, its files: three uses below).
    summaries = {e.name: ws.proven_bytes(e)[1] for e in series.entries}
    touched: dict[str, list[str]] = {}
    for ap in stack.applied:
        if ap.name in series:
            for p in summaries[ap.name].paths:
                touched.setdefault(p, []).append(ap.name)
    is_stopped = current_refresh(git) is not None
    # A stopped refresh owns HEAD (the new base and the patches placed so far): not a series
    # carried as plain commits, whatever its tree (the chain is not built to compare it).
    plain = plain_commits(ws, series, stack) if not is_stopped else 0
    stopped = _stopped(ws) if is_stopped else None
    # The conflicting patch's files hold its merge, being resolved: not edits of anyone's.
    resolving = set(stopped.files) if stopped else set()
    in_patches = {
        p: tuple(touched[p]) for p in dirty.modified if p in touched and p not in resolving
    }
    fold_into = None
    top = stack.applied[-1].name if stack.applied else None
    if in_patches and not any(top in owners for owners in in_patches.values()):
        # A plain refresh folds only edits in the top patch's files: name the patch whose
        # lines the edits change, as refresh itself does when it refuses.
        from .refresh.start import owners_of_edits  # (the engine: not loaded for a status)

        found = owners_of_edits(ws, series, stack, dirty)
        fold_into = found[0][1] if found else None
    edits = tuple(
        p for p in dirty.modified + dirty.unmerged if p not in touched and p not in resolving
    )
    standing = standings(ws, series, series.base or stack.base, summaries)
    return StatusResult(
        git.head_ref(),
        stack.head,
        series.base,
        series.base_ref,
        stack.base,
        tuple(states),
        # A first import stopped: its patches so far are applied, the series not yet written.
        () if first_import else tuple(n for n in stack.names if n not in series),
        edits,
        in_patches,
        tuple(p for p in dirty.untracked if p not in resolving),
        operation,
        stack.on_top,
        _plain_problem(plain) if plain and stack.on_top else on_top_problem(stack),
        _out_of_order(series, stack.names),
        is_stopped,
        plain,
        _built_on(ws, stack),
        fold_into if not is_stopped else None,
        stopped,
        _in_base(ws, series, stack, summaries) if not is_stopped else (),
        tuple(standing),
        today(ws) if any(s.upstream.updated for s in standing) else None,
        dirty.submodules,
        tuple(m for n in series.names if (m := series.mark_of(n))),
        _interrupted(ws),
        _repaired(ws),
        renamed=stack.renamed,
        stepping=_stepping(ws),
        placed=tuple(stack.names) if first_import else (),
    )


def _repaired(ws: Checkout) -> str | None:
    """A scratch ref that names an object the repository does not have (an older version's
    replay killed midway left it; git gc, fsck and log --all stop at it), deleted."""
    dropped = ws.git.drop_dangling_scratch()
    if dropped is None:
        return None
    return (
        f"deleted {FastImport.SCRATCH}, which named {dropped}, an object this repository does"
        " not have (left by a replay killed midway); git gc, git fsck and git log --all work"
        " again"
    )


def _interrupted(ws: Checkout) -> str | None:
    """The command line of a command that died while publishing ('undo' takes it back)."""
    try:
        found = interrupted(ws.git)
    except BrokenLog:  # said when the command began
        return None
    return found.command if found else None


def _in_base(
    ws: Checkout, series: Series, stack: Stack, summaries: Mapping[str, PatchSummary]
) -> tuple[str, ...]:
    """The unapplied patches ``refresh`` judged ``upstream`` (`engine.verdicts.held`: their
    ``# upstream:`` mark names the commit that brought them) whose every file the series base
    still holds as the patch makes it (the blob its index line names). ``push`` cannot apply
    them; ``refresh --drop-merged`` drops them. A mark naming no commit is no proof: such a
    patch is never advised away."""
    base = series.base
    if not base or stack.base != base:
        return ()
    fmt = ws.git.fmt
    wanted: dict[str, list[tuple[str, str]]] = {}
    for e in series.entries:
        mark = series.upstream.get(e.name)
        if stack.find(e.name) is not None or mark is None or not mark.evidence:
            continue
        files = summaries[e.name].files
        if files and all(
            not f.renamed and not f.copied and fmt.is_full(f.new_id) and f.new_id != f.old_id
            for f in files
        ):
            wanted[e.name] = [(f.path, f.new_id or "") for f in files]
    if not wanted:
        return ()
    paths = sorted({path for pairs in wanted.values() for path, _id in pairs})
    have = ws.git.ls_tree_paths(base, paths)

    def held(path: str, oid: str) -> bool:
        return have[path][1] == oid if path in have else fmt.is_null(oid)

    return tuple(n for n, pairs in wanted.items() if all(held(p, o) for p, o in pairs))


def _stopped(ws: Checkout) -> StoppedAt | None:
    from ..errors import PatchstackError
    from .refresh.stopped import load

    try:
        state = load(ws)
    except PatchstackError:
        return None  # status says the refresh is stopped; the commands name the problem
    onto = state.new_base[:12] + (f" ({state.new_ref})" if state.new_ref else "")
    return StoppedAt(
        state.stopped_at or "?",
        state.touched,
        state.conflicted,
        onto,
        next((i for i, s in enumerate(state.steps) if s.name == state.stopped_at), len(state.done)),
        len(state.steps),
        state.command,
    )


def _plain_problem(count: int) -> tuple[str, str]:
    return (
        f"HEAD has {count} plain commit(s) on top of the applied patches that carry the rest"
        " of the series (imported)",
        "'patchstack push --all' makes them the applied patches (the same tree)",
    )


def _built_on(ws: Checkout, stack: Stack) -> str | None:
    """The REV of ``worktree DIR --onto REV`` when this is DIR and its stack is still on the
    commit it was made on: a stack on another base than the series', on purpose."""
    note = experiment_note(ws.git) or {}
    onto, made_on = note.get("onto"), note.get("made_on")
    if isinstance(onto, str) and made_on == stack.base and stack.applied:
        return onto
    return None


def _out_of_order(series: Series, applied: tuple[str, ...]) -> tuple[str, ...]:
    known = [n for n in applied if n in series]
    ranked = sorted(known, key=series.index)
    return tuple(n for n, want in zip(known, ranked, strict=True) if n != want)


def _stepping(ws: Checkout) -> str | None:
    if not os.path.exists(os.path.join(ws.git.git_dir, "patchstack", "steps.json")):
        return None  # no stepped refresh: its module is not loaded for a status
    from .refresh.steps import where

    return where(ws)
