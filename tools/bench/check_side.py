"""Plain ``check --onto REF`` of versions side by side, on copies of imported forks:

    python tools/bench/check_side.py --code OLD --code NEW --runs 3 FORK...

Each ``--code`` is a folder holding a version's ``patchstack`` package (``git archive REV
patchstack | tar -x -C DIR``), run with ``PYTHONPATH`` at it; ``--env NAME=VALUE`` instead
times this version with and without one setting (a ``PATCHSTACK_NO_*`` switch). The versions
alternate in one loop (the first of them first on even runs, last on odd ones), and the
fork's cache file is put back before each run (check saves none: each run is a first check
after a fetch). Prints, per fork, the median CPU and wall seconds of each (CPU: the command
and its git children) and whether every run printed the same bytes."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def timed(
    argv: list[str], cwd: Path, env: dict[str, str], what: str
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """One measured run of ``argv``: the process, its wall seconds, and the CPU seconds (user
    and system) of it and its children; exit 0 and 1 (a conflict) pass, any other stops the
    bench with ``what`` and git's words."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if proc.returncode not in (0, 1):
        sys.exit(f"{what} failed ({proc.returncode}):\n{proc.stderr}")
    return proc, wall, cpu


def version_args(ap: argparse.ArgumentParser) -> None:
    """The arguments of a side-by-side run (this script's, `refresh_side.py`'s)."""
    ap.add_argument("forks", nargs="+", type=Path)
    ap.add_argument("--code", action="append", default=[], help="a version's package folder")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE: this version with it")
    ap.add_argument("--onto", default="origin/main")
    ap.add_argument("--runs", type=int, default=3)


def versions_of(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Each version asked (``--code`` folders, this checkout with each ``--env``) and the
    environment that runs it."""
    here = str(Path(__file__).resolve().parents[2])
    versions: dict[str, dict[str, str]] = {c: {"PYTHONPATH": c} for c in args.code}
    if args.env or not versions:
        versions["this"] = {"PYTHONPATH": here}
    for setting in args.env:
        name, _, value = setting.partition("=")
        versions[setting] = {"PYTHONPATH": here, name: value}
    return versions


def main() -> None:
    ap = argparse.ArgumentParser()
    version_args(ap)
    args = ap.parse_args()
    versions = versions_of(args)
    for fork in args.forks:
        cache = fork / ".git" / "patchstack" / "cache"
        saved = cache.read_bytes() if cache.exists() else None
        got: dict[str, list[tuple[float, float, str]]] = {v: [] for v in versions}
        try:
            for r in range(args.runs):
                for name in list(versions) if r % 2 == 0 else list(reversed(versions)):
                    if saved is not None:
                        cache.write_bytes(saved)
                    elif cache.exists():
                        cache.unlink()
                    env = {**os.environ, "NO_COLOR": "1", **versions[name]}
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                    argv = [sys.executable, "-m", "patchstack", "check", "--onto", args.onto]
                    proc, wall, cpu = timed(argv, fork, env, f"{name} on {fork}")
                    got[name].append((wall, cpu, proc.stdout))
        finally:
            if saved is not None:
                cache.write_bytes(saved)
        outputs = {out for runs in got.values() for _w, _c, out in runs}
        print(f"{fork.name} (load {os.getloadavg()[0]:.1f}, same output: {len(outputs) == 1})")
        for name, runs in got.items():
            cpu = statistics.median(c for _w, c, _o in runs)
            wall = statistics.median(w for w, _c, _o in runs)
            each = " ".join(f"{c:.2f}" for _w, c, _o in runs)
            print(f"  {name}: CPU {cpu:.2f} s (runs {each}), wall {wall:.2f} s")


if __name__ == "__main__":
    main()
