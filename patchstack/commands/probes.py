"""``check --probes`` (and ``refresh --probes``): does each patch still do its job?

"Applied" is the most the rest of patchstack can prove; a clean three-way merge can still leave
a patch doing nothing (upstream renamed what it calls, or took the code under another name). A
patch's probe (``Patchstack-Probe:`` in its header, see `model.fields`) is a command that passes
with the patch and fails without it. For each selected patch that has one, two commits are
built exactly as ``push --onto`` builds them (`worktree.build_on`): the target plus every
selected patch ("with"), and the target plus the selection without that patch ("without";
when a later patch of the selection cannot go without it, the patches before it). The probe
runs in each, through ``sh -c`` at the top of a scratch worktree (`worktree.scratch`, a clean
checkout every time, never the user's tree), with a timeout, in a session of its own
(`sessions`):

- ``effective``: it passes with the patch and fails without;
- ``ineffective``: it passes without the patch too (upstream absorbed it, or it no longer
  matters);
- ``broken``: it fails with the patch;
- ``not-run``: the patch does not apply on the target.

Each run is cached by (tree, probe) in the git directory (`runcache`, shared with bisect), so a
tree already tested is not tested again; probes run in parallel, one scratch worktree per slot,
at most ``jobs`` at once. The commits tested are written into the repository (nothing points
at them; ``git gc`` prunes them in time), so that the ids reported can be checked out to
reproduce a run.
"""

from __future__ import annotations

import collections
import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from .. import lock
from ..checkout import Checkout
from ..errors import ConflictError
from ..git import Git
from ..git.process import program_env
from ..model import fields
from ..model.ids import Oid
from ..model.selection import Selector
from . import runcache, sessions
from .runcache import RunCache
from .state import make_engine, read_stack
from .worktree import build_on, scratch, selected_names

if TYPE_CHECKING:
    from ..engine.chain import Engine

EFFECTIVE, INEFFECTIVE, BROKEN, NOT_RUN = "effective", "ineffective", "broken", "not-run"
DEFAULT_TIMEOUT = 300.0  # seconds a probe may run
_TAIL = 20  # lines of a probe's output kept for the report


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class Run:
    """One run of a probe in one tree."""

    commit: Oid
    tree: Oid
    passed: bool
    why: str  # "exit 0", "exit 1", "timed out after 300 s", "killed by signal 9"
    seconds: float
    cached: bool = False
    output: str = ""  # the last lines it printed (standard output and error)

    def to_json(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "tree": self.tree,
            "passed": self.passed,
            "why": self.why,
            "seconds": round(self.seconds, 3),
            "cached": self.cached,
            "output": self.output,
        }


@dataclass(frozen=True)
class ProbeResult:
    name: str
    tag: str
    probe: str
    verdict: str
    with_run: Run | None = None
    without_run: Run | None = None
    without: str = ""  # what "without" means here (the selection without it, or before it)
    why: str = ""  # not-run: why

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tag": self.tag,
            "probe": self.probe,
            "verdict": self.verdict,
            "with": self.with_run.to_json() if self.with_run else None,
            "without": self.without_run.to_json() if self.without_run else None,
            "without_is": self.without,
            "why": self.why,
        }


@dataclass(frozen=True)
class ProbeReport:
    target: Oid
    selected: tuple[str, ...]
    results: tuple[ProbeResult, ...]
    without_probe: tuple[str, ...]  # selected patches that have no probe

    @property
    def ok(self) -> bool:
        return all(r.verdict == EFFECTIVE for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "ok": self.ok,
            "selected": list(self.selected),
            "results": [r.to_json() for r in self.results],
            "without_probe": list(self.without_probe),
        }


@dataclass(frozen=True)
class _Task:
    patch: str
    commit: Oid
    tree: Oid
    probe: str

    @property
    def key(self) -> str:
        return runcache.key(self.tree, self.probe)


def probe_series(
    ws: Checkout,
    target: Oid,
    sel: Selector,
    left_out: Mapping[str, str] | None = None,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: Callable[[int, int], None] | None = None,
) -> ProbeReport:
    """Run the probes of the patches ``sel`` selects on ``target``; ``left_out``: patches
    that do not apply there, with why (they are reported ``not-run``, as are the deferred
    ones: a build carries nothing of them, so their probe would prove nothing)."""
    git = ws.git
    # A replay before (check's) wrote throwaway objects into a scratch store that the scratch
    # worktrees cannot read; the commits tested here must be in the repository.
    git.drop_scratch()
    series = ws.load_series()
    left_out = {
        **{n: f"deferred: 'patchstack push {n}' brings it back" for n in series.deferred},
        **(left_out or {}),
    }
    stack = read_stack(git)
    chosen = selected_names(series, sel)
    names = [n for n in chosen if n not in left_out]
    probes: dict[str, str] = {}
    for n in chosen:
        summary = ws.proven_bytes(series.entry(n))[1]
        probe = fields.probe_of(fields.read(summary.description, summary.fields))
        if probe:
            probes[n] = probe
    results: dict[str, ProbeResult] = {}
    for n in probes:
        if n in left_out:
            results[n] = ProbeResult(n, series.entry(n).tag, probes[n], NOT_RUN, why=left_out[n])
    tasks: dict[str, tuple[_Task, _Task, str]] = {}
    engine = make_engine(ws, series, stack)
    try:
        try:
            with_commit = build_on(engine, git, target, names)
        except ConflictError as exc:
            why = f"the selection does not build on {target[:12]}: {exc.message}"
            for n in probes:
                results.setdefault(
                    n, ProbeResult(n, series.entry(n).tag, probes[n], NOT_RUN, why=why)
                )
            with_commit = None
        if with_commit is not None:
            with_tree = git.tree_of(with_commit)
            for n in (n for n in names if n in probes):
                without, what = _without(engine, git, target, names, n)
                task_with = _Task(n, with_commit, with_tree, probes[n])
                tasks[n] = (task_with, _Task(n, without, git.tree_of(without), probes[n]), what)
    finally:
        engine.close()
    env = program_env(os.environ, {"PATCHSTACK_SERIES_DIR": ws.series_dir})
    runs = _run_all(
        git, target, [t for pair in tasks.values() for t in pair[:2]], jobs, timeout, env, progress
    )
    for n, (task_with, task_without, what) in tasks.items():
        got_with, got_without = runs[task_with.key], runs[task_without.key]
        if not got_with.passed:
            verdict = BROKEN
        elif got_without.passed:
            verdict = INEFFECTIVE
        else:
            verdict = EFFECTIVE
        results[n] = ProbeResult(
            n, series.entry(n).tag, probes[n], verdict, got_with, got_without, what
        )
    return ProbeReport(
        target,
        tuple(names),
        tuple(results[n] for n in chosen if n in results),
        tuple(n for n in chosen if n not in probes),
    )


def _without(
    engine: Engine, git: Git, target: Oid, names: Sequence[str], name: str
) -> tuple[Oid, str]:
    """The commit "target + the selection without ``name``", and what it is."""
    rest = [n for n in names if n != name]
    try:
        return build_on(engine, git, target, rest), "the selection without it"
    except ConflictError as exc:
        before = list(names[: names.index(name)])
        needs = getattr(exc.report, "patch", "a later patch")
        what = f"the {len(before)} patch(es) before it ({needs} does not apply without it)"
        return build_on(engine, git, target, before), what


# -- running -----------------------------------------------------------------------------


@dataclass
class _Running:
    slot: Git
    task: _Task
    proc: sessions.Process
    output: IO[bytes]
    started: float


def _run_all(
    git: Git,
    target: Oid,
    tasks: Sequence[_Task],
    jobs: int | None,
    timeout: float,
    env: Mapping[str, str],
    progress: Callable[[int, int], None] | None,
) -> dict[str, Run]:
    """Every task's run, from the cache or run now, at most ``jobs`` at once."""
    cache = RunCache(git, "probes")
    runs: dict[str, Run] = {}
    todo: collections.deque[_Task] = collections.deque()
    for task in tasks:
        if task.key in runs or any(t.key == task.key for t in todo):
            continue
        known = _cached(cache, task)
        if known is not None:
            runs[task.key] = known
        else:
            todo.append(task)
    total, done = len(todo), 0
    if todo:
        slots = min(jobs or default_jobs(), len(todo))
        running: list[_Running] = []
        with contextlib.ExitStack() as trees:
            free = [trees.enter_context(scratch(git, target)) for _ in range(slots)]
            try:
                while todo or running:
                    while todo and free:
                        _start(free.pop(), todo.popleft(), env, running)
                    time.sleep(0.01)
                    for r in list(running):
                        status = r.proc.poll()
                        elapsed = time.monotonic() - r.started
                        if status is None and elapsed < timeout:
                            continue
                        running.remove(r)
                        runs[r.task.key] = _finish(r, status, elapsed, timeout)
                        _keep(cache, r.task, runs[r.task.key])
                        free.append(r.slot)
                        done += 1
                        if progress:
                            progress(done, total)
            finally:
                for r in running:
                    sessions.end(r.proc)
                    r.output.close()
                cache.save()
    return runs


def _start(slot: Git, task: _Task, env: Mapping[str, str], running: list[_Running]) -> None:
    """Check the task's commit out in ``slot`` and start its probe, known in ``running``
    before a signal can stop the command."""
    slot.switch_detached(task.commit)
    out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _finish, or on the way out
    here = {**env, "PATCHSTACK_PROBE_PATCH": task.patch, "PATCHSTACK_PROBE_COMMIT": task.commit}
    with lock.critical():
        try:
            proc = sessions.start(
                ["/bin/sh", "-c", task.probe],
                slot.top,
                here,
                stdout=out,
                stderr=sessions.STDOUT,
                hint="the probe runs with /bin/sh",
            )
        except BaseException:
            out.close()
            raise
        running.append(_Running(slot, task, proc, out, time.monotonic()))


def _finish(r: _Running, status: int | None, elapsed: float, timeout: float) -> Run:
    sessions.end(r.proc)
    r.output.seek(0)
    text = r.output.read()[-8000:].decode("utf-8", "replace")
    r.output.close()
    tail = "\n".join(text.rstrip("\n").split("\n")[-_TAIL:])
    if status is None:
        why = f"timed out after {timeout:g} s"
    elif status < 0:
        why = f"killed by signal {-status}"
    else:
        why = f"exit {status}"
    return Run(r.task.commit, r.task.tree, status == 0, why, elapsed, False, tail)


def _cached(cache: RunCache, task: _Task) -> Run | None:
    found = cache.get(task.key)
    try:
        passed, why, seconds, output = found  # type: ignore[misc]
        return Run(
            task.commit, task.tree, bool(passed), str(why), float(seconds), True, str(output)
        )
    except (TypeError, ValueError):
        return None


def _keep(cache: RunCache, task: _Task, run: Run) -> None:
    """Runs that timed out or were killed are not kept."""
    if run.why.startswith("exit "):
        cache.put(task.key, [run.passed, run.why, round(run.seconds, 3), run.output])
