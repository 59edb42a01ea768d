#!/usr/bin/env python3
"""``status`` and ``pop --all`` of versions side by side on ONE generated repository:

    python tools/bench/status_pop_side.py --code OLD --code NEW --patches 1000 --runs 7
    python tools/bench/status_pop_side.py --env PATCHSTACK_NO_BATCH_COMMAND=1 --runs 7

Each ``--code`` is a folder holding a version's ``patchstack`` package (``git archive REV
patchstack | tar -x -C DIR``), run with ``PYTHONPATH`` at it; ``--env NAME=VALUE`` times this
checkout with and without one setting. The fixture is ``run.py``'s (``gen.generate``, 10,000
files by default), built once (``--workdir DIR`` keeps it and reuses it). Each run, for each
version in turn (the order reversed on odd runs): a fresh clone at the base, the series copied,
``push --all`` by that version (untimed), then ``status``, ``pop --all`` (timed), and, as the
bound of issue 35, ``--version`` and ``git reset --keep <base>`` from the same top. Prints
median CPU (user+sys of the command and its children) and wall seconds, min-max, per version.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import gen  # noqa: E402
from run import Env, Fixture, Workspace, tree_check  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--code", action="append", default=[], help="a version's package folder")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE: this version with it")
    ap.add_argument("--patches", type=int, default=1000)
    ap.add_argument("--files", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seed", type=int, default=8)
    ap.add_argument("--workdir", default=None, help="keep (and reuse) the fixture here")
    a = ap.parse_args()
    versions: dict[str, dict[str, str]] = {}
    for c in a.code:
        compileall.compile_dir(os.path.join(c, "patchstack"), quiet=1)
        versions[c] = {"PYTHONPATH": os.path.abspath(c)}
    if a.env or not versions:
        versions["this"] = {"PYTHONPATH": PROJECT}
    for setting in a.env:
        name, _, value = setting.partition("=")
        versions[setting] = {"PYTHONPATH": PROJECT, name: value}
    workdir = a.workdir or os.path.join("/tmp", f"status-pop-side-{a.patches}")
    fixdir = os.path.join(workdir, "fixture")
    os.makedirs(workdir, exist_ok=True)
    env = Env(workdir, [sys.executable, "-m", "patchstack"])
    infofile = os.path.join(workdir, "info.json")
    if os.path.exists(infofile):
        with open(infofile) as f:
            info = json.load(f)
    else:
        t0 = time.perf_counter()
        info = gen.generate(fixdir, n_files=a.files, sizes=[a.patches], n_upstream=300, seed=a.seed)
        with open(infofile, "w") as f:
            json.dump(info, f)
        print(f"fixture built in {time.perf_counter() - t0:.1f} s", flush=True)
    fx = Fixture(env, fixdir, info)
    n = a.patches
    ws = Workspace(env, fixdir, "side")
    sdir = os.path.join(fixdir, "side-series")
    got: dict[tuple[str, str], list[tuple[float, float]]] = {}
    outs: dict[tuple[str, str], set[str]] = {}

    def timed(ver: str, key: str, cmd: list[str], extra: dict, ok=(0,)) -> None:
        r = env.run(cmd, ws.path, extra)
        if r.rc not in ok:
            raise RuntimeError(f"{ver} {key}: exit {r.rc}: {r.err.strip()[:300]}")
        got.setdefault((ver, key), []).append((r.cpu, r.secs))
        outs.setdefault((ver, key), set()).add(r.out)

    names = list(versions)
    for run in range(a.runs):
        for ver in names if run % 2 == 0 else list(reversed(names)):
            extra = {**versions[ver], "PATCHSTACK_DIR": sdir}
            ps = [sys.executable, "-m", "patchstack"]
            ws.fresh()
            ws.reset(fx.base)
            if os.path.exists(sdir):
                shutil.rmtree(sdir)
            shutil.copytree(fx.series_dir(n), sdir)
            r = env.run([*ps, "push", "--all"], ws.path, extra)
            if r.rc != 0:
                raise RuntimeError(f"{ver} push --all: {r.err.strip()[:300]}")
            timed(ver, "--version", [*ps, "--version"], extra)
            timed(ver, "status", [*ps, "status"], extra, ok=(0, 1))
            timed(ver, "status (again)", [*ps, "status"], extra, ok=(0, 1))
            timed(ver, "pop --all", [*ps, "pop", "--all"], extra)
            if tree_check(ws, fx.base_tree) != "ok":
                raise RuntimeError(f"{ver}: pop --all left a tree other than the base's")
            ws.reset(fx.chain[n - 1])
            timed(ver, "git reset --keep <base>", ["git", "reset", "-q", "--keep", fx.base], {})
        print(f"run {run + 1}/{a.runs} done (load {os.getloadavg()[0]:.2f})", flush=True)

    print(f"\n{n} patches, {a.runs} runs each, alternated; medians (min-max)")
    print(f"{'version':<44} {'command':<26} {'CPU s':>22} {'wall s':>22}")
    for ver in names:
        keys = ("--version", "status", "status (again)", "pop --all", "git reset --keep <base>")
        for key in keys:
            rs = got[(ver, key)]
            cpu = [c for c, _ in rs]
            wall = [w for _, w in rs]
            print(
                f"{ver[-44:]:<44} {key:<26} "
                f"{statistics.median(cpu):7.3f} ({min(cpu):.3f}-{max(cpu):.3f}) "
                f"{statistics.median(wall):7.3f} ({min(wall):.3f}-{max(wall):.3f})"
            )
        for attr, what in ((0, "CPU"), (1, "wall")):
            med = {
                k: statistics.median(x[attr] for x in got[(ver, k)])
                for k in ("--version", "pop --all", "git reset --keep <base>")
            }
            bound = med["--version"] + 1.5 * med["git reset --keep <base>"]
            print(
                f"  pop --all {med['pop --all']:.3f} s {what} / bound (--version + 1.5x reset"
                f" --keep) {bound:.3f} s = {med['pop --all'] / bound:.2f}x"
            )
    if len(names) == 2:  # each run's second version less its first, run by run (paired)
        first, second = names
        print(f"\n{second[-30:]} less {first[-30:]}, run by run: median (min-max)")
        for key in ("status", "status (again)", "pop --all"):
            for attr, what in ((0, "CPU"), (1, "wall")):
                pairs = zip(got[(first, key)], got[(second, key)], strict=True)
                d = [b[attr] - a[attr] for a, b in pairs]
                print(
                    f"  {key:<16} {what:<5} {statistics.median(d):+.3f} s"
                    f" ({min(d):+.3f} to {max(d):+.3f})"
                )
    same = all(len(outs[(v, "status")]) == 1 for v in names)
    print(f"status printed the same bytes in every run of each version: {same}")
    if len({next(iter(outs[(v, "status")])) for v in names}) > 1:
        print("the versions' status outputs differ")
    print(f"load now: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
