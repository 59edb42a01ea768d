"""``refresh --onto REF --defer-conflicts`` of versions side by side, on copies of forks:

    python tools/bench/refresh_side.py --code OLD --code NEW --runs 3 FORK...

Each ``--code`` is a folder holding a version's ``patchstack`` package (``git archive REV
patchstack | tar -x -C DIR``), run with ``PYTHONPATH`` at it; ``--env NAME=VALUE`` instead
times this version with and without one setting (a ``PATCHSTACK_NO_*`` switch). Each run
refreshes a fresh ``cp -a`` of FORK (untimed: its cache, work tree and refs as FORK has
them; FORK itself is never changed); the versions alternate in one loop (the first of them
first on even runs, last on odd ones). Prints, per fork, the median CPU (the command and its
git children) and wall seconds of each, and whether every run left the same result: what it
printed, HEAD's tree, the series folder's files (``--series DIR``, relative to the work tree)
and, once per version after the timed runs, ``refresh --json``."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_side import timed, version_args, versions_of  # noqa: E402

DATE = "1700000000 +0000"


def _folder_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def _run(
    fork: Path, room: Path, env: dict[str, str], onto: str, extra: list[str]
) -> tuple[float, float, str]:
    """(wall, CPU, what it left) of one refresh of a fresh copy of ``fork``."""
    copy = room / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-a", str(fork), str(copy)], check=True)
    argv = [sys.executable, "-m", "patchstack", "refresh", "--onto", onto, "--defer-conflicts"]
    proc, wall, cpu = timed([*argv, *extra], copy, env, f"refresh of {fork}")
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=copy, capture_output=True, text=True
    ).stdout.strip()
    left = f"{proc.stdout}\n{tree}\n{_folder_digest(copy / env['BENCH_SERIES'])}"
    return wall, cpu, left


def main() -> None:
    ap = argparse.ArgumentParser()
    version_args(ap)
    ap.add_argument("--series", default="patches", help="the series folder, in the work tree")
    args = ap.parse_args()
    versions = versions_of(args)
    with tempfile.TemporaryDirectory(prefix="refresh-side-") as tmp:
        room = Path(tmp)
        for fork in args.forks:
            got: dict[str, list[tuple[float, float, str]]] = {v: [] for v in versions}
            envs = {}
            for name, setting in versions.items():
                env = {**os.environ, "NO_COLOR": "1", **setting, "BENCH_SERIES": args.series}
                env.update(GIT_COMMITTER_DATE=DATE, GIT_AUTHOR_DATE=DATE)  # the same commit ids
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                envs[name] = env
            loads = []
            for r in range(args.runs):
                for name in list(versions) if r % 2 == 0 else list(reversed(versions)):
                    loads.append(os.getloadavg()[0])
                    got[name].append(_run(fork, room, envs[name], args.onto, []))
            as_json = {_run(fork, room, envs[n], args.onto, ["--json"])[2] for n in versions}
            outputs = {left for runs in got.values() for _w, _c, left in runs}
            print(
                f"{fork.name} (load {min(loads):.1f}-{max(loads):.1f}, same result: "
                f"{len(outputs) == 1}, same --json: {len(as_json) == 1})"
            )
            for name, runs in got.items():
                cpu = statistics.median(c for _w, c, _o in runs)
                wall = statistics.median(w for w, _c, _o in runs)
                each = " ".join(f"{w:.2f}/{c:.2f}" for w, c, _o in runs)
                print(f"  {name}: wall {wall:.2f} s, CPU {cpu:.2f} s (runs wall/CPU {each})")
            shutil.rmtree(room / "copy", ignore_errors=True)


if __name__ == "__main__":
    main()
