"""``patchstack bisect``: the first upstream commit at which COMMAND fails, with a chosen subset
of the series carried at every step.

The candidates are the first-parent history from GOOD (excluded, taken as good) to BAD (taken
as bad), like ``git bisect --first-parent``. Each step builds "candidate + selected patches" in
the object database exactly as ``push --onto`` does, with the version of each patch whose base
is nearest the candidate (`versions`: the series now, or an earlier version from the operation
log or the series folder's git history, so that a bisect crosses a refresh), checks it out in a
scratch worktree (`worktree.scratch`, never the user's), runs COMMAND there in a session of its
own, and reads its exit status as ``git bisect run`` does: 0 good, 125 skip, 1-127 bad, 128
and above (or a signal) abort (`bisect_run`). A candidate where a selected patch does not apply
is skipped with the conflict report; where patches stop applying is pinned afterwards with
builds alone (`bisect_run.locate`).

`plan` is the search, a pure function of the verdicts so far: the untested candidate nearest
the middle of the range still in doubt; when none is left it proves the ends the answer rests
on (BAD fails; GOOD passes, when the answer is GOOD's child), then answers.

With a threshold, a step that exits 0 is judged by the figure COMMAND printed on its standard
output (the last number, or the first group of the last match of ``metric``): good when it is at
least the threshold (at most, for a figure where lower is better, such as a latency). A relative
threshold (``10%``) is measured from GOOD's own figure, so GOOD is tested first.
"""

from __future__ import annotations

import math
import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .. import lock
from ..checkout import Checkout
from ..errors import PatchstackError
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.selection import Selector
from .bisect_run import Session, Stop, first_parent_line, locate, session, stops
from .runcache import RunCache
from .versions import Plan
from .worktree import selected_names

GOOD, BAD, SKIP, ABORT = "good", "bad", "skip", "abort"
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Judge:
    """How a finished COMMAND is judged: its exit status, and optionally a figure it printed
    (``relative``: the threshold is a percentage of the figure at GOOD)."""

    threshold: float | None = None
    lower_is_better: bool = False
    metric: re.Pattern[str] | None = None
    relative: bool = False

    @property
    def reads(self) -> str:
        """What the figure is read by ("" when none is read): part of a cached run's key."""
        if self.threshold is None:
            return ""
        return self.metric.pattern if self.metric else "the last number"

    def figure(self, line: str) -> float | None:
        """The figure a line of output carries, if any (the last one on the line)."""
        if self.threshold is None:
            return None
        pattern = self.metric or NUMBER
        matches = list(pattern.finditer(line))
        if not matches:
            return None
        m = matches[-1]
        text = m.group(1) if m.re.groups else m.group(0)
        try:
            return float(text)
        except (TypeError, ValueError):
            return None

    def cost(self, before: float, after: float) -> float:
        """How much worse ``after`` is than ``before``, in percent (negative: better)."""
        if before == 0:
            return 0.0 if after == before else math.copysign(math.inf, self._worse(after, 0))
        return self._worse(after, before) / abs(before) * 100

    def _worse(self, after: float, before: float) -> float:
        return after - before if self.lower_is_better else before - after

    def verdict(
        self, status: int, figure: float | None, reference: float | None = None
    ) -> tuple[str, str]:
        """(verdict, why) for an exit status, with ``git bisect run``'s conventions."""
        if status < 0:
            try:
                return ABORT, f"killed by {signal.Signals(-status).name}"
            except ValueError:
                return ABORT, f"killed by signal {-status}"
        if status >= 128:
            return ABORT, f"exit {status}"
        if status == 125:
            return SKIP, "exit 125"
        if status != 0:
            return BAD, f"exit {status}"
        if self.threshold is None:
            return GOOD, "exit 0"
        if figure is None:
            what = f"matching '{self.metric.pattern}'" if self.metric else "(no number)"
            return ABORT, f"exit 0 but printed no figure {what}"
        if self.relative:
            if reference is None:
                return ABORT, "no figure at GOOD to measure from"
            cost = self.cost(reference, figure)
            ok = cost <= self.threshold
            sign = "<=" if ok else ">"
            return (
                GOOD if ok else BAD
            ), f"{figure:g}: {cost:.1f} % worse than GOOD {sign} {self.threshold:g} %"
        limit = self.threshold
        ok = figure <= limit if self.lower_is_better else figure >= limit
        sign = ("<=" if ok else ">") if self.lower_is_better else (">=" if ok else "<")
        return (GOOD if ok else BAD), f"{figure:g} {sign} {limit:g}"


@dataclass(frozen=True)
class Step:
    index: int  # 0: GOOD, ..., n: BAD
    commit: Oid
    subject: str
    verdict: str
    why: str
    status: int | None  # COMMAND's exit status; None when it did not run
    applied: tuple[str, ...]  # the patches carried (none when one did not apply)
    tested: Oid | None  # the commit COMMAND ran on: upstream + patches
    seconds: float  # COMMAND's run time
    figure: float | None = None
    conflict: Conflict | None = None
    plan: Plan | None = None  # the version of each patch it built (or tried first)
    tried: tuple[str, ...] = ()  # the other plans tried, which conflicted
    cached: bool = False  # COMMAND's run in this tree was cached

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("conflict", "plan")}
        data["seconds"] = round(self.seconds, 3)
        data["conflict"] = self.conflict.to_json() if self.conflict else None
        data["series"] = self.plan.to_json() if self.plan else []
        data["tried"] = list(self.tried)
        return data


@dataclass(frozen=True)
class BisectResult:
    good: Oid
    bad: Oid
    selected: tuple[str, ...]
    commits: int  # candidates after GOOD, BAD included
    outcome: str  # found, ambiguous, no-failure, good-fails, aborted
    culprit: tuple[Oid, str] | None
    shared: tuple[tuple[str, tuple[str, ...]], ...]  # the culprit's files the patches touch
    candidates: tuple[tuple[Oid, str], ...]  # ambiguous: the first failing commit is one of
    steps: tuple[Step, ...]
    stops: tuple[Stop, ...] = ()  # where selected patches do not apply
    line: tuple[tuple[Oid, str], ...] = ()  # GOOD, then every candidate
    versions: tuple[str, ...] = ()  # the versions of the series it could build from
    notes: tuple[str, ...] = ()  # what the answer rests on that the user should know

    def at(self, i: int) -> tuple[Oid, str]:
        return self.line[i]

    def to_json(self) -> dict[str, Any]:
        return {
            "good": self.good,
            "bad": self.bad,
            "selected": list(self.selected),
            "commits": self.commits,
            "outcome": self.outcome,
            "culprit": (
                {
                    "commit": self.culprit[0],
                    "subject": self.culprit[1],
                    "shared": {path: list(names) for path, names in self.shared},
                }
                if self.culprit
                else None
            ),
            "candidates": [{"commit": c, "subject": s} for c, s in self.candidates],
            "steps": [s.to_json() for s in self.steps],
            "stops": [s.to_json(self.line) for s in self.stops],
            "versions": list(self.versions),
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class Hooks:
    """What the caller is told while a bisect runs (only the CLI prints)."""

    testing: Callable[[int, Oid, str, int, tuple[int, int]], None] = field(
        default=lambda i, c, s, k, left: None
    )  # index, commit, subject, step number, `left`
    tested: Callable[[Step], None] = field(default=lambda step: None)
    output: Callable[[str], None] = field(default=lambda line: None)
    locating: Callable[[str], None] = field(default=lambda patch: None)


def plan(n: int, verdicts: Mapping[int, str]) -> tuple[str, tuple[int, ...]]:
    """The next move: ("test", (i,)), or an answer: ("found", (i,)), ("ambiguous", (i, ...)),
    ("no-failure", (n,)), ("good-fails", (0,)). Index 0 is GOOD, n is BAD."""
    if verdicts.get(0) == BAD:
        return "good-fails", (0,)
    if verdicts.get(n) == GOOD:
        return "no-failure", (n,)
    hi = min((i for i, v in verdicts.items() if v == BAD), default=n)
    lo = max((i for i, v in verdicts.items() if v == GOOD and i < hi), default=0)
    pending = [i for i in range(lo + 1, hi) if i not in verdicts]
    if pending:
        mid = (lo + hi) // 2
        return "test", (min(pending, key=lambda i: (abs(i - mid), i)),)
    if hi not in verdicts:
        return "test", (hi,)  # the answer would rest on BAD failing: prove it
    skipped = tuple(i for i in range(lo + 1, hi) if verdicts.get(i) == SKIP)
    if verdicts[hi] != BAD or skipped:
        return "ambiguous", (*skipped, hi)
    if lo == 0 and 0 not in verdicts:
        return "test", (0,)  # the answer is GOOD's child: prove that GOOD passes
    return "found", (hi,)


def left(n: int, verdicts: Mapping[int, str]) -> tuple[int, int]:
    """(about how many steps are left, how many commits are still in doubt): a bisection of
    the untested commits of the range in doubt, and its ends."""
    hi = min((i for i, v in verdicts.items() if v == BAD), default=n)
    lo = max((i for i, v in verdicts.items() if v == GOOD and i < hi), default=0)
    pending = sum(1 for i in range(lo + 1, hi) if i not in verdicts) + (hi not in verdicts)
    return math.ceil(math.log2(pending + 1)), pending


def bisect(
    ws: Checkout,
    good: str,
    bad: str,
    sel: Selector,
    command: Sequence[str],
    judge: Judge,
    hooks: Hooks | None = None,
    reuse: bool = True,
    cache: RunCache | None = None,
) -> BisectResult:
    """The bisect; ``reuse``: take cached runs (else run every step again); ``cache``: the
    runs kept (shared by the bisects of one matrix)."""
    hooks = hooks or Hooks()
    if not command:
        raise PatchstackError("no COMMAND to run", "give it after '--': ... -- ./bench.sh")
    git = ws.git
    names = tuple(selected_names(ws.load_series(), sel))
    line = first_parent_line(ws, good, bad)
    commits = line.commits
    n = len(commits) - 1
    verdicts: dict[int, str] = {}
    steps: list[Step] = []
    built: dict[int, str | None] = {}
    reference: list[float | None] = []  # GOOD's figure, for a relative threshold
    kept = cache or RunCache(git, "bisect")
    with session(ws, line.good, command, judge.reads, judge.figure, reuse, kept) as lab:
        lock.point("bisect-scratch")
        while True:
            kind, which = plan(n, verdicts)
            if judge.relative and not reference and kind == "test":
                which = (0,)
            if kind != "test":
                break
            i = which[0]
            hooks.testing(i, *commits[i], len(steps) + 1, left(n, verdicts))
            step = run_step(lab, names, i, commits[i], judge, reference, hooks.output)
            built[i] = step.conflict.patch if step.conflict else None
            if judge.relative and i == 0:
                reference.append(step.figure)
            verdicts[step.index] = step.verdict
            steps.append(step)
            hooks.tested(step)
            if step.verdict == ABORT:
                kind = "aborted"
                break

        def build(i: int) -> str | None:
            attempt = lab.build(commits[i][0], names)
            return attempt.conflict.patch if attempt.conflict else None

        if kind != "aborted":
            locate(build, built, n, hooks.locating)
        engine = lab.versions.engine
        versions = tuple(v.describe() for v in lab.versions.versions)
        notes: tuple[str, ...] = ()
        if lab.versions.broken is not None:
            patch = lab.versions.broken[1].patch
            notes = (
                f"the series now does not build on its own base ({patch} does not apply"
                " where it was made): its earlier versions were carried instead",
            )
    culprit = commits[which[0]] if kind == "found" else None
    shared: list[tuple[str, tuple[str, ...]]] = []
    if culprit is not None:
        owners: dict[str, list[str]] = {}
        for name in names:
            for path in engine.patch(name).patch.paths:
                owners.setdefault(path, []).append(name)
        for path in git.changed_paths(commits[which[0] - 1][0], culprit[0]):
            if path in owners:
                shared.append((path, tuple(owners[path])))
    return BisectResult(
        line.good,
        line.bad,
        names,
        n,
        kind,
        culprit,
        tuple(shared),
        tuple(commits[i] for i in which) if kind == "ambiguous" else (),
        tuple(steps),
        stops(built),
        commits,
        versions,
        notes,
    )


def run_step(
    lab: Session,
    names: Sequence[str],
    i: int,
    at: tuple[Oid, str],
    judge: Judge,
    reference: Sequence[float | None],
    output: Callable[[str], None],
) -> Step:
    """Build ``names`` at the candidate, run COMMAND there (or take its cached run), judge it
    (``reference``: GOOD's figure, for a relative threshold; GOOD itself is its own)."""
    commit, subject = at
    attempt = lab.build(commit, names)
    tried = tuple(p.label for p in attempt.tried)
    if attempt.tested is None:
        assert attempt.conflict is not None
        why = f"patch {attempt.conflict.patch} does not apply"
        return Step(
            i,
            commit,
            subject,
            SKIP,
            why,
            None,
            (),
            None,
            0.0,
            None,
            attempt.conflict,
            attempt.plan,
            tried,
        )
    ran = lab.run(commit, attempt.tested, output)
    ref = reference[0] if reference else ran.figure
    verdict, why = judge.verdict(ran.status, ran.figure, ref)
    return Step(
        i,
        commit,
        subject,
        verdict,
        why,
        ran.status,
        tuple(names),
        attempt.tested,
        ran.seconds,
        ran.figure,
        None,
        attempt.plan,
        tried,
        ran.cached,
    )
