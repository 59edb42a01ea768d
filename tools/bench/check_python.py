"""Where plain ``check --onto REF``'s own Python goes, on copies of imported forks:

    python tools/bench/check_python.py [--code DIR] [--runs 3] FORK...

Runs the command in this interpreter (``PYTHONPATH`` at ``--code``, a version's package
folder, or this checkout), the fork's cache file put back before each run as
`check_side.py` does, and prints the medians of: the process's CPU (every thread), the main
thread's, the rest (the line prefetch's hashing thread, `engine.lineprefetch`), the CPU of the
git processes it waited for, the CPU of importing the modules a check runs (measured in a
process of its own), and the main thread's CPU in each phase of `commands.check.check`
(each phase's function wrapped: the replay, the triage `_reports`, `relocated`, the culprit
trace `traced_as_printed`, ...). One child per run: ``python check_python.py --child``."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

PHASES = [
    "prefetch_lines",
    "old_chain",
    "replay",
    "judge",
    "_reports",
    "relocated",
    "traced_as_printed",
]
IMPORTS = (
    "import patchstack.cli.app, patchstack.cli.refresh, patchstack.commands.check,"
    " patchstack.engine.relocate, patchstack.engine.triage, patchstack.engine.culprits,"
    " patchstack.engine.lineprefetch, patchstack.engine.placer"
)


def child(onto: str) -> None:
    """Run the check in this process, phases wrapped; print the figures as JSON on stderr."""
    import runpy

    import patchstack.commands.check as check

    phases: dict[str, float] = {}

    def wrap(name: str) -> None:
        real = getattr(check, name)

        def timed(*args: object, **kwargs: object) -> object:
            start = time.thread_time()
            try:
                return real(*args, **kwargs)
            finally:
                phases[name] = phases.get(name, 0.0) + time.thread_time() - start

        setattr(check, name, timed)

    for name in PHASES:
        wrap(name)
    start = time.perf_counter()
    sys.argv = ["patchstack", "check", "--onto", onto]
    code = 0
    try:
        runpy.run_module("patchstack", run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "wall": time.perf_counter() - start,
        "process": own.ru_utime + own.ru_stime,
        "main": time.thread_time(),
        "git": kids.ru_utime + kids.ru_stime,
        "phases": phases,
        "code": code,
    }
    sys.stdout.flush()
    sys.stderr.write("\n" + json.dumps(figures) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("forks", nargs="*", type=Path)
    ap.add_argument("--code", default=str(Path(__file__).resolve().parents[2]))
    ap.add_argument("--onto", default="origin/main")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.onto)
        return
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": args.code}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    imports = []
    for _ in range(args.runs):
        argv = [sys.executable, "-c", f"{IMPORTS}; import resource as r; u = r.getrusage(0);"
                " print(u.ru_utime + u.ru_stime)"]  # fmt: skip
        imports.append(float(subprocess.run(argv, env=env, capture_output=True).stdout))
    for fork in args.forks:
        cache = fork / ".git" / "patchstack" / "cache"
        saved = cache.read_bytes() if cache.exists() else None
        runs = []
        try:
            for _ in range(args.runs):
                if saved is not None:
                    cache.write_bytes(saved)
                argv = [sys.executable, __file__, "--child", "--onto", args.onto]
                proc = subprocess.run(argv, cwd=fork, env=env, capture_output=True, text=True)
                last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else ""
                if not last.startswith("{"):
                    sys.exit(f"{fork}: {proc.stderr}")
                runs.append(json.loads(last))
        finally:
            if saved is not None:
                cache.write_bytes(saved)

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        load = os.getloadavg()[0]
        print(f"{fork.name} (load {load:.1f}, medians of {len(runs)}, CPU seconds)")
        print(f"  process {med('process'):.2f} = main thread {med('main'):.2f}"
              f" + other threads {statistics.median(r['process'] - r['main'] for r in runs):.2f};"
              f" git processes waited for {med('git'):.2f}; wall {med('wall'):.2f}")  # fmt: skip
        print(f"  imports (a process of their own): {statistics.median(imports):.2f}")
        for name in PHASES:
            got = statistics.median(r["phases"].get(name, 0.0) for r in runs)
            print(f"  main thread in {name}: {got:.2f}")


if __name__ == "__main__":
    main()
