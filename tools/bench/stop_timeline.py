"""Where a first stop's wall time goes, as a timeline: ``refresh --onto`` on a copy of FORK,
the package's phases timed by wrapping their functions (start and end, seconds from the
interpreter's start), and every git process's start and end from ``GIT_TRACE2_EVENT``, with
the command's own and its children's CPU seconds. One run, no profiler (a wrapper costs a
call); read it beside ``first_stop.py``'s side-by-side figures, never instead of them.

    python tools/bench/stop_timeline.py FORK [--code DIR] [--onto origin/main] [--min 0.05]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_drift import ENV  # noqa: E402

# (module, function or Class.method): the phases of a first stop
PHASES = [
    ("patchstack.commands.refresh.start", "refresh"),
    ("patchstack.commands.refresh.start", "prefetch_lines"),
    ("patchstack.engine.lineprefetch", "Prefetch._run"),
    ("patchstack.engine.replay", "replay"),
    ("patchstack.engine.placer", "Placer.merge"),
    ("patchstack.engine.merging", "_relabel_tree"),
    ("patchstack.commands.refresh.settle", "end"),
    ("patchstack.commands.refresh.settle", "stop"),
    ("patchstack.engine.relocate", "Relocator.propose_later"),
    ("patchstack.engine.relocate", "Relocator._candidates"),
    ("patchstack.engine.relocated", "Unnamed.named"),
    ("patchstack.git.deletions", "DeletionWalk.__call__"),
    ("patchstack.commands.refresh.taking", "before_stop"),
    ("patchstack.transaction", "publish"),
    ("patchstack.journal.moves", "move_overlay"),
    ("patchstack.transaction", "_after"),
    ("patchstack.engine.merging", "blame_first"),
]

RUNNER = """
import functools, importlib, json, os, resource, runpy, sys, time
T0 = time.perf_counter()
PHASES, OUT = json.loads(sys.argv[1]), sys.argv[2]
sys.argv = ["patchstack", *sys.argv[3:]]
spans = []

def wrap(modname, qual):
    try:
        owner = importlib.import_module(modname)
        *path, last = qual.split(".")
        for part in path:
            owner = getattr(owner, part)
        f = getattr(owner, last)
    except (ImportError, AttributeError):
        return  # (a phase this version has not)

    @functools.wraps(f)
    def timed(*a, **k):
        s = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            spans.append((s - T0, time.perf_counter() - s, f"{modname}.{qual}"))

    setattr(owner, last, timed)
    for m in list(sys.modules.values()):  # (imported by name elsewhere)
        if getattr(m, "__name__", "").startswith("patchstack"):
            for k, v in list(vars(m).items()):
                if v is f:
                    setattr(m, k, timed)

for m, q in PHASES:
    wrap(m, q)
code = 0
try:
    runpy.run_module("patchstack", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else int(e.code is not None)
finally:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(OUT, "w") as fh:
        json.dump({"wall": time.perf_counter() - T0, "spans": spans,
                   "cpu_self": me.ru_utime + me.ru_stime,
                   "cpu_children": kids.ru_utime + kids.ru_stime}, fh)
sys.exit(code)
"""


def _when(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def git_spans(trace: Path) -> list[tuple[float, float, str]]:
    """(start, end, argv) of each git process of the trace, from the first one's start."""
    started: dict[str, tuple[float, str]] = {}
    spans = []
    for line in trace.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "start":
            started[e["sid"]] = (_when(e["time"]), " ".join(e["argv"]))
        elif e["event"] == "atexit" and e["sid"] in started:
            at, argv = started[e["sid"]]
            spans.append((at, _when(e["time"]), argv))
    t0 = min((s for s, _e, _a in spans), default=0.0)
    return sorted((s - t0, e - t0, a) for s, e, a in spans)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fork", type=Path)
    ap.add_argument("--code", type=Path, help="the package's folder's parent (default: this)")
    ap.add_argument("--onto", default="origin/main")
    ap.add_argument("--min", type=float, default=0.05, help="git processes shorter: not shown")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="stop-timeline."))
    try:
        fork, trace, out = scratch / "fork", scratch / "trace.json", scratch / "spans.json"
        subprocess.run(["cp", "-a", str(args.fork.resolve()), str(fork)], check=True)
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=fork, env=ENV, check=False)
        env = dict(ENV, GIT_TRACE2_EVENT=str(trace))
        if args.code:
            env["PYTHONPATH"] = str(args.code.resolve())
        argv = [sys.executable, "-c", RUNNER, json.dumps(PHASES), str(out)]
        proc = subprocess.run(
            [*argv, "refresh", "--onto", args.onto], cwd=fork, env=env, capture_output=True
        )
        print(f"exit {proc.returncode}; load {os.getloadavg()[0]:.1f}")
        got = json.loads(out.read_text())
        print(
            f"wall {got['wall']:.2f} s; CPU: the command {got['cpu_self']:.2f} s, its git"
            f" processes {got['cpu_children']:.2f} s"
        )
        print("phases (start, seconds, end; from the interpreter's start):")
        for start, took, name in sorted(got["spans"]):
            print(f"  {start:7.3f} {took:7.3f} {start + took:7.3f}  {name}")
        print(f"git processes of {args.min} s or more (from the first git process's start):")
        for start, end, what in git_spans(trace):
            if end - start >= args.min:
                print(f"  {start:7.3f} {end - start:7.3f} {end:7.3f}  {what[:110]}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
