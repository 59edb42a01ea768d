"""Where the stop-by-stop path spends its time: ``refresh --onto`` then ``refresh --skip`` at
every stop on a copy of FORK, each command under cProfile, and one profile summed over the
skips (the first stop apart: it is ``first_stop.py``'s).

    python tools/bench/profile_stops.py FORK --onto origin/main [--top 40] [--keep DIR]

Prints each command's wall and CPU seconds and exit status, then the skips' summed profile
(patchstack's own functions, by cumulative time). A profile is not a benchmark: cProfile
slows Python code ~1.5x, not git; read the shares, and time with ``real_drift.py --stops``.
"""

from __future__ import annotations

import argparse
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_drift import ENV  # noqa: E402

# ``python -m cProfile`` swallows SystemExit (every command would exit 0, so the loop ended at
# the first stop): the command runs under a profiler of its own and its status is passed on.
RUNNER = """
import cProfile, runpy, sys
out = sys.argv[1]
sys.argv = ["patchstack", *sys.argv[2:]]
prof = cProfile.Profile()
code = 0
try:
    prof.runcall(runpy.run_module, "patchstack", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    prof.dump_stats(out)
sys.exit(code)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fork", type=Path)
    ap.add_argument("--onto", required=True)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--keep", type=Path, help="keep the .prof files here")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="profile-stops."))
    out = args.keep or scratch / "prof"
    out.mkdir(parents=True, exist_ok=True)
    fork = scratch / "fork"
    try:
        subprocess.run(["cp", "-a", str(args.fork.resolve()), str(fork)], check=True)
        subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=fork, env=ENV, check=False)
        skips: list[str] = []
        argv = ["refresh", "--onto", args.onto]
        for n in range(1000):
            prof = out / f"{n:03d}.prof"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            cmd = [sys.executable, "-c", RUNNER, str(prof), *argv]
            code = subprocess.run(cmd, cwd=fork, env=ENV, capture_output=True).returncode
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            print(f"{' '.join(argv):32} exit {code}  {wall:6.2f} s wall  {cpu:6.2f} s CPU")
            if n:
                skips.append(str(prof))
            if code != 1:
                break
            argv = ["refresh", "--skip"]
        if skips:
            stats = pstats.Stats(*skips)
            print(f"\n{len(skips)} skip(s), summed:")
            stats.sort_stats("cumulative").print_stats("patchstack/", args.top)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
