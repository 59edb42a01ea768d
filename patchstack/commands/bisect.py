"""``patchstack bisect``: the first upstream commit at which COMMAND fails, with a chosen subset
of the series carried at every step.

The candidates are the first-parent history from GOOD (excluded, taken as good) to BAD (taken
as bad), like ``git bisect --first-parent``. Each step builds "candidate + selected patches" in
the object database exactly as ``push --onto`` does (`worktree.build_on`), checks it out in a
scratch worktree (`worktree.scratch`, never the user's), runs COMMAND there in a session of its
own, and reads its exit status as ``git bisect run`` does: 0 good, 125 skip, 1-127 bad, 128 and
above (or a signal) abort. A candidate where a selected patch does not apply is skipped with the
conflict report: it is never tested without the patch.

`plan` is the search, a pure function of the verdicts so far: the untested candidate nearest
the middle of the range still in doubt; when none is left it proves the ends the answer rests
on (BAD fails; GOOD passes, when the answer is GOOD's child), then answers.

With a threshold, a step that exits 0 is judged by the figure COMMAND printed on its standard
output (the last number, or the first group of the last match of ``metric``): good when it is at
least the threshold (at most, for a figure where lower is better, such as a latency).
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from .. import lock
from ..checkout import Checkout
from ..errors import ConflictError, PatchstackError
from ..git import Git
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.selection import Selector
from ..model.stack import stack_from_history
from . import sessions
from .state import make_engine, read_stack, resolve_rev
from .worktree import build_on, scratch, selected_names

if TYPE_CHECKING:
    from ..engine.chain import Engine

GOOD, BAD, SKIP, ABORT = "good", "bad", "skip", "abort"
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True)
class Judge:
    """How a finished COMMAND is judged: its exit status, and optionally a figure it printed."""

    threshold: float | None = None
    lower_is_better: bool = False
    metric: re.Pattern[str] | None = None

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

    def verdict(self, status: int, figure: float | None) -> tuple[str, str]:
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

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k != "conflict"}
        data["seconds"] = round(self.seconds, 3)
        data["conflict"] = self.conflict.to_json() if self.conflict else None
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
        }


@dataclass(frozen=True)
class Hooks:
    """What the caller is told while a bisect runs (only the CLI prints)."""

    testing: Callable[[int, Oid, str], None] = field(default=lambda i, c, s: None)
    tested: Callable[[Step], None] = field(default=lambda step: None)
    output: Callable[[str], None] = field(default=lambda line: None)


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


def bisect(
    ws: Checkout,
    good: str,
    bad: str,
    sel: Selector,
    command: Sequence[str],
    judge: Judge,
    hooks: Hooks | None = None,
) -> BisectResult:
    hooks = hooks or Hooks()
    if not command:
        raise PatchstackError("no COMMAND to run", "give it after '--': ... -- ./bench.sh")
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    names = tuple(selected_names(series, sel))
    g, b = resolve_rev(git, good), resolve_rev(git, bad)
    for rev, oid in ((good, g), (bad, b)):
        below = stack_from_history(oid, git.iter_first_parent(oid))
        if below.applied:
            raise PatchstackError(
                f"{rev} has patch commits on top ({', '.join(below.names)}): bisect needs"
                " upstream commits",
                f"give the commit below them, {below.base[:12]}, or the upstream branch",
            )
    chain = git.log_commits(f"{g}..{b}", first_parent=True)
    if not chain:
        raise PatchstackError(
            f"no commits from {good} to {bad}", "give GOOD as an ancestor of BAD: GOOD BAD"
        )
    if chain[0][1][:1] != (g,):
        raise PatchstackError(
            f"{good} is not on the first-parent history of {bad}",
            f"give GOOD from 'git log --first-parent {bad}'",
        )
    commits = [(oid, subject) for oid, _parents, subject in git.log_commits(f"{g}^!") + chain]
    n = len(chain)
    engine = make_engine(ws, series, stack)
    verdicts: dict[int, str] = {}
    steps: list[Step] = []
    try:
        with scratch(git, g) as tree:
            run = _Run(engine, git, tree, os.path.relpath(ws.cwd, git.top), names, command, judge)
            while True:
                kind, which = plan(n, verdicts)
                if kind != "test":
                    break
                commit, subject = commits[which[0]]
                hooks.testing(which[0], commit, subject)
                step = run.step(which[0], commit, subject, hooks.output)
                verdicts[step.index] = step.verdict
                steps.append(step)
                hooks.tested(step)
                if step.verdict == ABORT:
                    kind = "aborted"
                    break
    finally:
        engine.close()
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
        g,
        b,
        names,
        n,
        kind,
        culprit,
        tuple(shared),
        tuple(commits[i] for i in which) if kind == "ambiguous" else (),
        tuple(steps),
    )


@dataclass(frozen=True)
class _Run:
    """What every step of one bisect shares."""

    engine: Engine
    git: Git
    tree: Git  # the scratch worktree
    rel: str  # the user's folder relative to the top: COMMAND runs there in the scratch
    names: tuple[str, ...]
    command: Sequence[str]
    judge: Judge

    def step(self, i: int, commit: Oid, subject: str, output: Callable[[str], None]) -> Step:
        try:
            tested = build_on(self.engine, self.git, commit, self.names)
        except ConflictError as exc:
            if not isinstance(exc.report, Conflict):
                raise
            why = f"patch {exc.report.patch} does not apply"
            return Step(i, commit, subject, SKIP, why, None, (), None, 0.0, None, exc.report)
        self.tree.switch_detached(tested)
        cwd = os.path.join(self.tree.top, self.rel)
        env = dict(os.environ, PATCHSTACK_BISECT_COMMIT=commit, PATCHSTACK_BISECT_TESTED=tested)
        cwd = cwd if os.path.isdir(cwd) else self.tree.top
        status, figure, seconds = run_command(self.command, cwd, env, self.judge, output)
        verdict, why = self.judge.verdict(status, figure)
        return Step(i, commit, subject, verdict, why, status, self.names, tested, seconds, figure)


def run_command(
    command: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    judge: Judge,
    output: Callable[[str], None],
) -> tuple[int, float | None, float]:
    """Run COMMAND in a session of its own: (exit status, figure, seconds). Its standard output
    goes to ``output`` line by line, its standard error straight through; whatever it leaves
    running is ended when it exits, and everything when the bisect is interrupted."""
    start = time.monotonic()
    proc: sessions.Process | None = None
    figure = None
    try:
        with lock.critical():  # a signal that comes while it starts waits until `proc` is set
            proc = sessions.start(command, cwd, env, hint=_NO_COMMAND)
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace")
            output(line)
            found = judge.figure(line)
            if found is not None:
                figure = found
        status = proc.wait()
    finally:
        if proc is not None:
            sessions.end(proc)
    return status, figure, time.monotonic() - start


_NO_COMMAND = (
    "give a command that exists after '--' (relative paths start in the scratch"
    " worktree: use an absolute path for a script outside the repository)"
)
