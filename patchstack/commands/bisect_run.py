"""The commits a bisect searches (`first_parent_line`), one step of it, and where the selected
patches stop applying.

A step builds "candidate + selected patches" with the version of each patch that `versions`
chooses there, checks it out in the scratch worktree, and runs COMMAND in a session of its own
(`sessions`), unless a run in the very same tree is cached (`runcache`: by tree, COMMAND, the
folder it starts in and the figure read from it). A candidate where no version of a selected
patch applies is skipped with the conflict report: it is never tested without the patch.

Skipped steps say little on their own: bisect tests the commits it needs, not the ones where a
patch stops applying. `stops` sums the builds up as runs of consecutive commits where one patch
does not apply, and `locate` pins each run's ends with builds alone (no COMMAND: a bisection of
"does the selection build here?" between a commit where it built and one where it did not), so
the answer can say "from f08726fd56 on, starting-dflash-impl.patch does not apply".
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import lock
from ..checkout import Checkout
from ..errors import PatchstackError
from ..git import Git
from ..git.process import program_env
from ..model.ids import Oid
from ..model.stack import stack_from_history
from . import runcache, sessions
from .runcache import RunCache
from .state import make_engine, read_stack, resolve_rev
from .versions import Attempt, Versions
from .worktree import scratch

LOCATE_BUDGET = 24  # builds `locate` may make for one run's two ends


@dataclass(frozen=True)
class Outcome:
    """COMMAND's run in one tree: its exit status, the figure it printed, its time."""

    status: int
    figure: float | None
    seconds: float
    cached: bool = False


@dataclass
class Session:
    """What the steps of a bisect (or of a matrix's bisects) share: the versions, the scratch
    worktree, COMMAND and the cache of its runs."""

    versions: Versions
    git: Git
    tree: Git  # the scratch worktree
    rel: str  # the user's folder relative to the top: COMMAND runs there in the scratch
    command: Sequence[str]
    metric: str  # what the figure is read by ("" when none is read)
    figure: Callable[[str], float | None]
    cache: RunCache | None  # None: run every step again (the runs are still kept)
    keep: RunCache

    def build(self, commit: Oid, names: Sequence[str]) -> Attempt:
        return self.versions.build_at(commit, names)

    def run(self, commit: Oid, tested: Oid, output: Callable[[str], None]) -> Outcome:
        """COMMAND in the tree of ``tested``, or its cached run there."""
        k = runcache.key(self.git.tree_of(tested), json.dumps(list(self.command)), self.rel)
        k = runcache.key(k, self.metric)
        lock.point("bisect-step")  # (a cached run passes the same points)
        found = self.cache.get(k) if self.cache is not None else None
        if found is not None:
            try:
                status, figure, seconds = found
                shown = None if figure is None else float(figure)
                lock.point("bisect-tested")
                return Outcome(int(status), shown, float(seconds), True)
            except (TypeError, ValueError):
                pass
        self.tree.switch_detached(tested)
        cwd = os.path.join(self.tree.top, self.rel)
        env = program_env(
            os.environ, {"PATCHSTACK_BISECT_COMMIT": commit, "PATCHSTACK_BISECT_TESTED": tested}
        )
        cwd = cwd if os.path.isdir(cwd) else self.tree.top
        status, figure, seconds = run_command(self.command, cwd, env, self.figure, output)
        lock.point("bisect-tested")
        if 0 <= status < 128:  # it ended by itself: worth keeping
            self.keep.put(k, [status, figure, round(seconds, 3)])
        return Outcome(status, figure, seconds)


@contextlib.contextmanager
def session(
    ws: Checkout,
    at: Oid,
    command: Sequence[str],
    metric: str,
    figure: Callable[[str], float | None],
    reuse: bool,
    cache: RunCache,
) -> Iterator[Session]:
    """A `Session` with its scratch worktree (made at ``at``), closed and removed on the way
    out (SIGHUP, a closed terminal, ends it as SIGINT and SIGTERM do), the runs saved."""
    git = ws.git
    engine = make_engine(ws, ws.load_series(), read_stack(git))
    versions: Versions | None = None
    try:
        versions = Versions(ws, engine)
        with lock.also_handled(signal.SIGHUP), scratch(git, at) as tree:
            rel = os.path.relpath(ws.cwd, git.top)
            yield Session(
                versions, git, tree, rel, command, metric, figure, cache if reuse else None, cache
            )
    finally:
        cache.save()
        if versions is not None:
            versions.close()
        engine.close()


@dataclass(frozen=True)
class Line:
    """The commits a bisect searches: GOOD, then the candidates up to BAD."""

    good: Oid
    bad: Oid
    commits: tuple[tuple[Oid, str], ...]


def first_parent_line(ws: Checkout, good: str, bad: str) -> Line:
    git = ws.git
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
    return Line(g, b, tuple(commits))


def run_command(
    command: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    figure_of: Callable[[str], float | None],
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
            found = figure_of(line)
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


# -- where patches stop applying ------------------------------------------------------------


@dataclass(frozen=True)
class Stop:
    """A run of commits (indexes ``first``..``last``) where ``patch`` does not apply: every
    build known between them conflicted on it. ``before``/``after``: the nearest index below
    and above where the selection built (None: none known; the range ends there)."""

    patch: str
    first: int
    last: int
    before: int | None
    after: int | None
    builds: int  # the builds inside the run (steps skipped, and those `locate` made)

    def to_json(self, commits: Sequence[tuple[Oid, str]]) -> dict[str, Any]:
        def at(i: int | None) -> str | None:
            return commits[i][0] if i is not None else None

        return {
            "patch": self.patch,
            "from": at(self.first),
            "to": at(self.last),
            "applies_before": at(self.before),
            "applies_after": at(self.after),
            "builds": self.builds,
        }


def stops(built: Mapping[int, str | None]) -> tuple[Stop, ...]:
    """The runs of ``built`` (index -> the patch that did not apply there, None where the
    selection built), in order."""
    found: list[Stop] = []
    order = sorted(built)
    i = 0
    while i < len(order):
        patch = built[order[i]]
        if patch is None:
            i += 1
            continue
        j = i
        while j + 1 < len(order) and built[order[j + 1]] == patch:
            j += 1
        below = order[i - 1] if i else None
        above = order[j + 1] if j + 1 < len(order) else None
        found.append(
            Stop(
                patch,
                order[i],
                order[j],
                below if below is not None and built[below] is None else None,
                above if above is not None and built[above] is None else None,
                j - i + 1,
            )
        )
        i = j + 1
    return tuple(found)


def locate(
    build: Callable[[int], str | None],
    built: MutableMapping[int, str | None],
    n: int,
    progress: Callable[[str], None],
) -> None:
    """Pin the ends of every run of `stops` with builds alone: between a run's first commit
    and the nearest commit below it that was built (GOOD when none was), and between its last
    and the nearest commit above that was built (BAD when none was). ``build(i)``: the patch
    that does not apply at index i, or None. Assumes what a bisection assumes: one change of
    state between the two ends."""
    for stop in stops(built):
        budget = LOCATE_BUDGET

        def probe(i: int) -> str | None:
            built[i] = build(i)
            return built[i]

        lo, hi = max((i for i in built if i < stop.first), default=-1), stop.first
        top = min((i for i in built if i > stop.last), default=n + 1)
        if hi - lo > 1 or top - stop.last > 1:
            progress(stop.patch)
        while hi - lo > 1 and budget > 0:
            mid, budget = (lo + hi) // 2, budget - 1
            if probe(mid) is None:
                lo = mid
            else:
                hi = mid
        lo, hi = stop.last, top
        while hi - lo > 1 and budget > 0:
            mid, budget = (lo + hi) // 2, budget - 1
            if probe(mid) is None:
                hi = mid
            else:
                lo = mid
