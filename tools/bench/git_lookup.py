"""The CPU one git process costs started by a bare ``git`` (looked up in each folder of
``PATH`` before git's at each start) and by its absolute path (`process.git_program`), side by
side: rounds that alternate the two, each round ``--each`` processes of ``git rev-parse HEAD``
in a scratch repository, with the test suite's ``PATH`` (the interpreter's folder first, as
tests/conftest.py puts it). CPU from getrusage: this process's (the spawning) and the waited
children's (the exec attempts, git)::

    python tools/bench/git_lookup.py --rounds 10 --each 200
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--each", type=int, default=200)
    opts = ap.parse_args()
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = dict(os.environ, PATH=path, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    git = shutil.which("git", path=path)
    assert git, "no git on PATH"
    before = (
        path.split(os.pathsep).index(os.path.dirname(git))
        if os.path.dirname(git) in path.split(os.pathsep)
        else -1
    )
    with tempfile.TemporaryDirectory() as repo:
        subprocess.run(["git", "init", "-q", repo], check=True, env=env)
        subprocess.run(
            ["git", "-c", "user.name=a", "-c", "user.email=b", "commit", "-q", "--allow-empty",
             "-m", "x"], cwd=repo, check=True, env=env,
        )  # fmt: skip
        took: dict[str, list[tuple[float, float]]] = {"git": [], git: []}
        for _ in range(opts.rounds):
            for program in took:
                own, kids = _cpu()
                for _ in range(opts.each):
                    subprocess.run([program, "rev-parse", "HEAD"], cwd=repo, env=env,
                                   capture_output=True, check=True)  # fmt: skip
                own2, kids2 = _cpu()
                took[program].append(((own2 - own) / opts.each, (kids2 - kids) / opts.each))
    print(f"PATH: {len(path.split(os.pathsep))} folders, git's is folder {before + 1}; "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for program, rows in took.items():
        own = statistics.median(r[0] for r in rows) * 1e3
        kids = statistics.median(r[1] for r in rows) * 1e3
        print(f"{program!r:>16}: median of {opts.rounds} rounds, ms a process: "
              f"{own:.3f} spawning + {kids:.3f} child = {own + kids:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
