"""``check``: would the series apply on a target? The same replay as ``refresh`` against
``--onto REV`` (default: the series' upstream, `tracked`: the branch its base line names,
else ``@{upstream}``; else HEAD below its applied patches), computing
objects only: no file, ref or index is written, and the merge cache is not saved. A conflicting
patch is left out and the replay goes on, so one run lists every conflict."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..checkout import Checkout
from ..engine.chain import Engine
from ..engine.claims import deferred_change, upstream_changes
from ..engine.contract import place
from ..engine.evidence import recorded as recorded_commit
from ..engine.merging import blame
from ..engine.placer import Placer
from ..engine.printed import first_guessed, first_traced, traced_as_printed
from ..engine.relocate import Relocator
from ..engine.renames import RenameProof
from ..engine.replay import (
    Step,
    commit_chain,
    labels,
    old_chain,
    replay,
    steps,
)
from ..engine.triage import Failed, Waiting, reports
from ..engine.verdicts import UPSTREAM, Held, classify, held
from ..git import MergeResult
from ..git.history import PATHSPEC_MAX
from ..journal.refusals import refresh_error
from ..model import trailers
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.selection import Selector, check_words
from ..model.series import Series
from .refresh.drift import no_upstream_note
from .refresh.holds import needs, waiting
from .refresh.kept import KeptLines
from .refresh.knockons import kept_on
from .refresh.resolutions import Resolutions
from .refresh.settle import Verdict
from .refresh.start import prefetch_lines
from .refresh.stopped import made_on
from .state import make_engine, read_stack, resolve_rev
from .tracked import upstream_target

if TYPE_CHECKING:
    from ..engine.lineprefetch import Prefetch


@dataclass(frozen=True)
class CheckResult:
    target: Oid
    target_name: str
    old_base: str | None
    verdicts: tuple[Verdict, ...]
    conflicts: tuple[Conflict, ...]
    deferred: tuple[Conflict, ...] = ()  # deferred patches' reports again, when asked for
    # Neither --onto nor an upstream (`tracked`): what was checked is HEAD, and this says so
    # (with the remote branch status would compare against, when there is one).
    no_upstream: str = ""

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "target_name": self.target_name,
            "base": self.old_base,
            "ok": self.ok,
            "patches": [
                {
                    "name": v.name,
                    "tag": v.tag,
                    "verdict": v.verdict,
                    "recorded": v.recorded,
                    "reused_hunks": list(v.reused_hunks),
                    "evidence": v.to_json()["evidence"],
                    "note": v.note,
                }
                for v in self.verdicts
            ],
            "conflicts": [c.to_json() for c in self.conflicts],
            "deferred": [c.to_json() for c in self.deferred],
        }


def check(
    ws: Checkout,
    onto: str | None,
    sel: Selector,
    progress: Callable[[int, int], None] | None = None,
    full: Sequence[str] | bool = (),
) -> CheckResult:
    """Would the series apply on ``onto``? Objects only: no file, ref or index is written.
    Refused while a refresh is stopped: the series is half rewritten then.

    The conflicts are triaged and reported at once (`engine.triage`); ``full``: the patches
    (True: every one) whose report also traces each hunk's lines through upstream's history
    (`engine.culprits`)."""
    git = ws.git
    stopped = refresh_error(ws)
    if stopped:
        raise stopped
    series = ws.load_series()
    stack = read_stack(git)
    no_upstream = ""
    if onto:
        target, name = resolve_rev(git, onto), onto
    else:
        up = upstream_target(ws, series)
        if up.name is None or up.oid is None:
            target, name = stack.base, "HEAD" if not stack.applied else "HEAD (below the stack)"
            no_upstream = no_upstream_note(ws)
        else:
            target, name = up.oid, up.name
    check_words(series, sel)
    skip = frozenset(e.name for e in series.entries if not sel.keeps_tag(e.tag, e.labels))
    engine = make_engine(ws, series, stack)
    lines = None
    try:
        lines = prefetch_lines(ws, engine, series, target, lazy=True)
        chain = old_chain(git, engine, series)
        where = ws.display(ws.series_path)
        plan = steps(series, chain, {}, marked=upstream_changes(engine, series, where))
        placer = Placer(engine, target, [s.name for s in plan])
        records = Resolutions(ws)
        holds = needs(ws, series, plan)
        failing = 0  # conflicts so far: each is one more report to build after the replay

        def settle(step: Step, tree: Oid, merged: MergeResult) -> Oid | None:
            nonlocal failing
            settled = records.settle(step.name, step.before, tree, step.after, merged)
            failing += settled is None
            return settled

        # The bar counts the patches and the reports to come (one a conflict found), so it
        # never goes back when the reports begin: a conflict found at a step adds one to the
        # total as the step adds one to the count.
        counted = (lambda d, t: progress(d, t + failing)) if progress else None  # noqa: E731
        done, conflicts = replay(
            git,
            plan,
            0,
            git.tree_of(target),
            labels(series.base, target, name),
            keep_going=True,
            skip=skip,
            placer=placer,
            progress=counted,
            resolve=settle,
            hold=holds,
            # the report is the regions' lines, which no label changes: markers are relabelled
            # only where a recorded resolution reads them (dflash_v2: 62 trees not rewritten)
            relabel=records.may_settle(),
        )
        lazy = ws.printed is not None  # the short output: trace what it prints only
        walk = KeptLines(ws, None) if lazy and kept_on() else None
        guessed = first_guessed(conflicts)
        if walk is not None and len(guessed) <= PATHSPEC_MAX:  # (the walk of the files it
            # will trace first begun: git walks while the conflicts are triaged and relocated;
            # more files than a pathspec takes would be a walk of everything)
            walk.start(f"{series.base}..{target}", guessed, trailers.PATCH)
        _top, commits = commit_chain(engine, target, done)
        shown = labels(series.base, target, name)
        again = _placed_again(ws, engine, series, plan, commits, target, full, shown)
        classified = classify(git, engine, plan, done, commits)
        left_out = skip | {c[0] for c in conflicts} | series.deferred.keys()
        judged = judge(ws, series, plan, classified.verdicts, left_out, target)
        n = len(plan)
        # `reports` counts its conflicts and then the culprits: t - 1 reports
        tick = (lambda d, t: progress(n + d, n + t - 1)) if progress else None  # noqa: E731
        missing = [*series.deferred, *holds.names, *(c[0] for c in conflicts)]
        waits = waiting(holds.held, plan, done, git.tree_of(target), missing)
        reports = _reports(
            ws,
            series,
            engine,
            conflicts,
            skip,
            series.base,
            target,
            full,
            tick,
            waits,
            plan,
            placer.renames,
            attribute=not lazy,
        )
        if walk is not None and walk.early is None:  # (none guessed: begun now)
            walk.start(f"{series.base}..{target}", first_traced(reports, full), trailers.PATCH)
        reports = relocated(ws, plan, conflicts, reports, series.base, target, lines)
        if lazy:  # each file's walk kept (`KeptLines`): a refresh after it walks it no more
            reports = traced_as_printed(git, reports, series.base, target, full, walk)
        reports = [
            replace(r, note=records.note(r.patch)) if records.note(r.patch) else r for r in reports
        ]
        reports = sorted(reports, key=lambda r: series.index(r.patch))
        shown_again = _shown_again(
            ws, series, engine, again, skip, target, full, plan, placer.renames
        )
    finally:
        if lines is not None:
            lines.close()
        engine.close()
    bad = {c[0] for c in conflicts} | set(holds.names)
    deferred = series.deferred

    moved = {r.patch: "; ".join(x.summary() for x in r.relocations) for r in reports}
    proposed = {r.patch for r in reports if r.relocated}

    def word(name: str) -> str:
        if name in bad:
            return "relocated" if name in proposed else "conflict"
        if name in deferred:
            return "deferred"
        return judged[name].verdict if name in judged else classified.verdicts[name]

    settled = set(records.used)
    none = Held("")
    verdicts = tuple(
        Verdict(
            e.name,
            e.tag,
            word(e.name),
            recorded=e.name in settled,
            reused_hunks=records.reused.get(e.name, ()),
            evidence=judged.get(e.name, none).evidence,
            note=judged.get(e.name, none).note or moved.get(e.name, ""),
        )
        for e in series.entries
        if e.name not in skip
    )
    return CheckResult(
        target, name, series.base, verdicts, tuple(reports), tuple(shown_again), no_upstream
    )


def relocated(
    ws: Checkout,
    plan: Sequence[Step],
    conflicts: Sequence[tuple[str, Oid, MergeResult]],
    reports: Sequence[Conflict],
    old_base: str | None,
    target: Oid,
    lines: Prefetch | None = None,
) -> list[Conflict]:
    """The reports with where the hunks of each file upstream deleted would go
    (`engine.relocate`): reported as a proposal, the conflict stands. ``lines``: the new
    base's candidates, learnt while the replay merged (`lineprefetch`)."""
    by_name = {s.name: s for s in plan}
    relocator = Relocator(ws.git, old_base, target, ws.store, lines)
    asked = {}  # report -> its conflict's step and merge, all proposed together
    for i, report in enumerate(reports):
        found = next((c for c in conflicts if c[0] == report.patch), None)
        step = by_name.get(report.patch)
        if found is not None and step is not None:
            asked[i] = (step.before, step.after, found[1], found[2])
    proposals = dict(zip(asked, relocator.propose_all(list(asked.values())), strict=True))
    out = []
    for i, report in enumerate(reports):
        proposal = proposals.get(i)
        if proposal is not None:
            report = replace(report, relocations=proposal.relocations)
        out.append(report)
    return out


def _placed_again(
    ws: Checkout,
    engine: Engine,
    series: Series,
    plan: Sequence[Step],
    commits: dict[str, Oid],
    target: Oid,
    full: Sequence[str] | bool,
    labels: tuple[str, str],
) -> list[tuple[str, Oid, MergeResult]]:
    """The deferred patches ``full`` asks for (``check --patch NAME``, ``--verbose``), each
    placed again where it stands on the target, with its deferral's change: the conflict it
    was deferred for, as it is on this target (nothing when it now applies)."""
    git = ws.git
    wanted = [s for s in plan if s.deferred and (full is True or (full and s.name in full))]
    if not wanted:
        return []
    found = git.has_objects([s.commit for s in wanted if s.commit])
    tree = git.tree_of(target)
    trees = dict(zip(commits, git.trees_of(list(commits.values())), strict=True))
    out = []
    for step in plan:
        tree = trees.get(step.name, tree)
        if step in wanted and step.commit and found.get(step.commit):
            where = ws.display(ws.series_path)
            before, after = deferred_change(engine, series, where, series.deferred[step.name])
            merged = place(git, before, tree, after, (labels[0], step.name), labels[1])
            if not merged.clean:
                out.append((step.name, tree, merged))
    return out


def _shown_again(
    ws: Checkout,
    series: Series,
    engine: Engine,
    again: Sequence[tuple[str, Oid, MergeResult]],
    skip: frozenset[str],
    target: Oid,
    full: Sequence[str] | bool,
    plan: Sequence[Step],
    renames: RenameProof | None,
) -> list[Conflict]:
    """The reports of the deferred patches placed again (`_placed_again`), each conflict's
    upstream commits traced from the base its deferral's change was made on (`made_on`), as
    the refresh that deferred it traced them, not from the series base: the day after, the
    base has moved past the commits that made it conflict. Triaged with each deferred patch's
    change its deferral's (``plan``): without it, a deferred step changes nothing, and every
    one with a missing patch before it in its files was called a knock-on of it."""
    froms: dict[str | None, list[tuple[str, Oid, MergeResult]]] = {}
    for found in again:
        mark = series.deferred[found[0]]
        froms.setdefault(made_on(ws.git, mark.commit, target) or series.base, []).append(found)
    out = []
    for old_base, some in froms.items():
        out += _reports(
            ws, series, engine, some, skip, old_base, target, full, plan=plan, renames=renames
        )
    return sorted(out, key=lambda r: series.index(r.patch))


def judge(
    ws: Checkout,
    series: Series,
    plan: Sequence[Step],
    verdicts: dict[str, str],
    left_out: Collection[str],
    target: Oid,
) -> dict[str, Held]:
    """The verdict of each patch the target holds (`engine.verdicts.held`), an earlier
    refresh's proof (an ``# upstream:`` mark's commit) taken where the mark is this change's."""
    names = {n for n, v in verdicts.items() if v == UPSTREAM}
    if not names:
        return {}
    by_name = {s.name: s for s in plan}
    proved = {
        n: recorded_commit(ws.git, u.evidence)
        for n, u in series.upstream.items()
        if n in names and u.evidence and by_name[n].commit == u.commit
    }
    return held(ws.git, plan, names, left_out, series.base, target, proved)


def _reports(
    ws: Checkout,
    series: Series,
    engine: Engine,
    conflicts: Sequence[tuple[str, Oid, MergeResult]],
    skip: frozenset[str],
    old_base: str | None,
    target: Oid,
    full: Sequence[str] | bool,
    tick: Callable[[int, int], None] | None = None,
    held: Sequence[Waiting] = (),
    plan: Sequence[Step] = (),
    renames: RenameProof | None = None,
    attribute: bool = True,
) -> list[Conflict]:
    """The conflicts' reports, triaged: a knock-on names the deferred or conflicting patch it
    waits for; with ``--only``/``--except``, the unselected patches a conflict needs; then
    those of the patches ``held`` for a missing one (`engine.needs`), triaged too.
    ``attribute``: the primary hunks' upstream commits traced (else `traced_as_printed`)."""
    git = ws.git
    missing: list[str] = [h.name for h in held]  # left out for needing a missing patch
    failed = []
    for name, onto, merged in conflicts:
        k = series.index(name)
        before = [n for n in series.names[:k] if n in series.deferred or n in missing]
        failed.append(Failed(name, onto, merged, tuple(before)))
        missing.append(name)

    def paths_of(name: str) -> tuple[str, ...]:
        return ws.proven_bytes(series.entry(name))[1].paths

    # each patch's change as the replay placed it (one kept as upstream's: its mark's), a
    # deferred one's its deferral's, as `refresh` proves a knock-on (`settle`)
    changes = {s.name: (s.before, s.after) for s in plan}
    kept = [s for s in plan if s.deferred and s.commit]
    if kept:
        trees = git.trees_of([t for s in kept for t in (f"{s.commit}^", str(s.commit))])
        for i, s in enumerate(kept):
            changes[s.name] = (trees[2 * i], trees[2 * i + 1])

    def change_of(name: str) -> tuple[Oid, Oid]:
        if name in changes:
            return changes[name]
        k = series.index(name)
        return engine.canonical(k), engine.canonical(k + 1)

    found = reports(
        git,
        failed,
        paths_of,
        old_base,
        target,
        tick=tick,
        change_of=change_of,
        held=held,
        renames=renames,
        attribute=attribute,
    )
    out = found[len(conflicts) :]  # the held patches' reports
    selected = [e.name for e in series.entries if e.name not in skip]
    for report, (name, _onto, merged) in zip(found[: len(conflicts)], conflicts, strict=True):
        # a primary conflict's hunks are traced already (`reports`); a knock-on's on demand
        if (full is True or (full and name in full)) and report.kind == "knock-on":
            traced = blame(git, name, merged, old_base, target)
            report = replace(report, hunks=traced.hunks)
        if skip:  # --only/--except: the unselected patches the conflict needs
            report = replace(
                report, culprits=engine.culprits(name, report.hunks, report.files, selected)
            )
        out.append(report)
    return out
