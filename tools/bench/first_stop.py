"""The first stop alone, with `real_drift.py`'s own functions and environment: ``git rebase
--onto`` to its first stop, and ``refresh --onto`` of each ``--code`` version, in turn, each
from a fresh copy of FORK; medians of wall and CPU seconds; the stops compared byte for byte.
(`real_drift.py --stops` times the stop-by-stop path too: 40 minutes on kernel-timers when the
machine is loaded.)

    python tools/bench/first_stop.py FORK RUNS BEFORE AFTER [...]
"""

from __future__ import annotations

import compileall
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_drift as rd  # noqa: E402


def main() -> None:
    fork_src, runs, codes = Path(sys.argv[1]).resolve(), int(sys.argv[2]), sys.argv[3:]
    onto = rd.git(fork_src, "rev-parse", "origin/main")
    base = json.loads(rd.ps(fork_src, "series", "--json")[0])["base"]
    for c in codes:
        compileall.compile_dir(str(Path(c) / "patchstack"), quiet=1)
    scratch = Path(tempfile.mkdtemp(prefix="first-stop."))
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in ["git", *codes]}
    said: dict[str, str] = {}
    try:
        for _ in range(runs):
            for key in ["git", *codes]:
                fork = scratch / "fork"
                shutil.rmtree(fork, ignore_errors=True)
                subprocess.run(["cp", "-a", str(fork_src), str(fork)], check=True)
                rd.git(fork, "update-index", "-q", "--refresh")
                if key == "git":
                    times[key].append(rd.first_stop(fork, base, onto))
                    continue
                env = dict(rd.ENV, PYTHONPATH=str(Path(key).resolve()))
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                argv = [sys.executable, "-m", "patchstack", "refresh", "--onto", onto]
                proc = subprocess.run(argv, cwd=fork, env=env, capture_output=True, text=True)
                wall = time.perf_counter() - start
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if proc.returncode != 1:
                    sys.exit(f"no stop ({proc.returncode}):\n{proc.stderr}")
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                times[key].append((wall, cpu))
                said.setdefault(key, proc.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for k, v in times.items():
        wall, cpu = statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)
        each = ", ".join(f"{a:.2f} / {b:.2f}" for a, b in v)
        print(f"{k:40s} first stop {wall:6.2f} / {cpu:6.2f}   ({each})")
    print("every version printed the same stop" if len(set(said.values())) <= 1 else "DIFFERENT")


if __name__ == "__main__":
    main()
