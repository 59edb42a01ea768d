"""Where ``refresh --onto REF --defer-conflicts`` spends what it does beyond the work-tree
move, against issue 35's budget, and the floor: what a refresh with rebase's trees cannot
drop.

    python tools/bench/refresh_floor.py [--runs 3] [--code DIR] FORK...

FORK: a clone whose series is imported and pushed (``tools/trial/mkfork.sh``); it is never
changed: every run works on a fresh ``cp -a`` of it (its cache, work tree and refs as FORK
has them). Needs ``/usr/bin/time``. Each run times, in one loop:

- ``git rebase`` of the series' commits onto REF, each conflict skipped, then
  ``format-patch``, and the work-tree move alone (``read-tree -m -u`` from HEAD's tree to
  REF's, git's parallel checkout): `real_drift.rebase` and `real_drift.move`. The budget is
  issue 35's: (rebase - move) / 3, CPU and wall.
- the refresh, with every git process timed by a wrapper on ``PATH`` (its CPU, children
  included, and its wall) and the command's own Python accounted by phase (exclusive
  ``process_time`` and wall of the functions below, patched in this process only: the
  package runs unchanged); each merge the one ``merge-tree`` process answers is charged to
  the phase that asked it, by that process's CPU before and after (``/proc``).

Rows (CPU seconds; wall where the phase is sequential):

- replay: placing the patches (`engine.replay.replay`, Python; its wall includes waiting
  for its merges); replay's merges: the ``merge-tree`` answers it asked; rename proof: what
  lets a merge take the patch's paths alone (``diff-tree --find-copies``: a shortcut's cost);
- patch files: the verdicts and the regenerated files (`engine.verdicts.classify`, and
  ``format-patch``);
- commits: `engine.replay.commit_chain` and the final HEAD (`settle._final_head`),
  ``fast-import``, ``pack-objects`` (the replay's objects into the repository) and the
  ref transaction (``update-ref``);
- start: the interpreter, the imports, reading the series and the stack (the Python before
  the replay, but:)
- proof: the proof of the applied commits (`proof.prove`) and the canonical chain
  (`start._built_chain`), which no rebase makes;
- labels: the knock-on proofs (`knockons.triaged`), the held patches
  (`engine.needs.Needs.held_at`), their merges in "labels' merges", the verdicts of the
  patches the base holds and their evidence walks (`taken.judge`, ``log``), the culprit
  walk (``log -p -U0``, `engine.printed.traced_as_printed`), the ``-U0`` diffs of `madeby`;
- publish: the snapshot, the journal, the series files written (`transaction.publish`
  without its ``read-tree``), `proof.remember_refresh`;
- the move: the refresh's own ``read-tree -m -u``;
- rest: anything else (the Python after the replay outside the phases above, printing;
  git's object reads (``cat-file``), listings).

floor = start + replay + patch files + commits; "room" is budget - floor: below zero, the
target cannot be met by cutting the labels, the publish and the rest to nothing."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

WRAPPER = """#!/bin/sh
exec /usr/bin/time -a -o "$FLOOR_GIT_LOG" -f "%U %S %e $*" {git} "$@"
"""

PHASES = {  # (module, attribute): phase; a class's method as "Class.method"
    ("patchstack.commands.refresh.proof", "prove"): "proof",
    ("patchstack.commands.refresh.start", "_built_chain"): "proof",
    ("patchstack.commands.refresh.start", "replay"): "replay",
    ("patchstack.engine.needs", "Needs.held_at"): "labels",
    ("patchstack.commands.refresh.knockons", "triaged"): "labels",
    ("patchstack.commands.refresh.knockons", "traced_as_printed"): "labels",
    ("patchstack.commands.refresh.settle", "judge"): "labels",
    ("patchstack.commands.refresh.settle", "classify"): "patch files",
    ("patchstack.commands.refresh.settle", "commit_chain"): "commits",
    ("patchstack.commands.refresh.settle", "_final_head"): "commits",
    ("patchstack.commands.refresh.settle", "publish"): "publish",
    ("patchstack.commands.refresh.proof", "remember_refresh"): "publish",
}
ROWS = (
    "start",
    "proof",
    "replay",
    "replay's merges",
    "rename proof",
    "patch files",
    "commits",
    "labels",
    "labels' merges",
    "publish",
    "move",
    "rest",
)
FLOOR = ("start", "replay", "replay's merges", "rename proof", "patch files", "commits")


def _git_phase(argv: str) -> str | None:
    """The phase of a git process, by its arguments (None: merge-tree, charged by request)."""
    words = argv.split()
    verb = next((w for w in words if not w.startswith("-") and "=" not in w), "")
    if verb == "merge-tree":
        return None
    if verb == "read-tree" and "-u" in words:
        return "move"
    if verb == "diff-tree" and any(w.startswith("--find-copies") for w in words):
        return "rename proof"
    if "format-patch" in words:
        return "patch files"
    if verb in ("fast-import", "pack-objects", "update-ref", "commit-tree"):
        return "commits"
    if verb == "log" or (verb == "diff-tree" and "-U0" in words):
        return "labels"
    return "rest"


# -- the probe: runs inside the refreshing process -------------------------------------------


def _probe(out: str, argv: list[str]) -> None:
    import importlib

    started = (0.0, time.perf_counter())  # (the interpreter's start: "start")
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    merges: dict[str, float] = defaultdict(float)
    stack = ["start"]
    mark = list(started)

    def charge() -> None:
        now = (time.process_time(), time.perf_counter())
        cpu[stack[-1]] += now[0] - mark[0]
        wall[stack[-1]] += now[1] - mark[1]
        mark[:] = now

    def wrapped(fn: Any, phase: str) -> Any:
        def inner(*args: Any, **kwargs: Any) -> Any:
            charge()
            if phase == "replay":  # what follows outside the phases is no start
                stack[0] = "rest"
            stack.append(phase)
            try:
                return fn(*args, **kwargs)
            finally:
                charge()
                stack.pop()

        return inner

    for (module, name), phase in PHASES.items():
        mod = importlib.import_module(module)
        owner, _dot, attr = name.rpartition(".")
        holder = getattr(mod, owner) if owner else mod
        setattr(holder, attr, wrapped(getattr(holder, attr), phase))

    from patchstack.git import merge as merge_module

    found: dict[int, int] = {}

    def git_pid(pid: int) -> int:
        """The ``git merge-tree`` process under ``pid`` (the wrapper and ``stdbuf`` between)."""
        if pid not in found:
            children: dict[int, list[int]] = defaultdict(list)
            for p in Path("/proc").iterdir():
                if p.name.isdigit():
                    try:
                        fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
                    except OSError:
                        continue
                    children[int(fields[1])].append(int(p.name))
            todo, found[pid] = [pid], pid
            while todo:
                p = todo.pop()
                try:
                    if b"merge-tree" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[1:]:
                        found[pid] = p
                except OSError:
                    pass
                todo += children.get(p, [])
        return found[pid]

    def ticks(pid: int) -> int:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0
        return int(fields[11]) + int(fields[12])

    ask = merge_module.Merges._ask

    def timed_ask(self: Any, answer: Any, *args: Any, **kwargs: Any) -> Any:
        pid = git_pid(answer.proc.pid)
        before = ticks(pid)
        try:
            return ask(self, answer, *args, **kwargs)
        finally:
            merges[stack[-1]] += ticks(pid) - before

    merge_module.Merges._ask = timed_ask  # type: ignore[method-assign]
    from patchstack.cli.app import main

    code: object = 0
    try:
        main(argv)
    except SystemExit as e:
        code = e.code
    charge()
    clk = os.sysconf("SC_CLK_TCK")
    doc = {"cpu": cpu, "wall": wall, "merge_ticks": {k: v / clk for k, v in merges.items()}}
    Path(out).write_text(json.dumps(doc))
    sys.exit(code if isinstance(code, int) else 1)


# -- the parent ---------------------------------------------------------------------------------


def _refresh(
    fork: Path, room: Path, onto: str, code: str | None
) -> tuple[float, float, dict[str, dict[str, float]]]:
    """(wall, CPU, phase -> {"cpu", "wall"}) of one refresh of a fresh copy of ``fork``."""
    from check_side import timed

    copy = room / "copy"
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-a", str(fork), str(copy)], check=True)
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=copy)
    log, probe = room / "git.log", room / "probe.json"
    log.write_text("")
    bindir = room / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "git").write_text(WRAPPER.format(git=shutil.which("git")))
    (bindir / "git").chmod(0o755)
    env = {**os.environ, "NO_COLOR": "1", "FLOOR_GIT_LOG": str(log)}
    env["PATH"] = f"{bindir}:{env['PATH']}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (code, env.get("PYTHONPATH")) if p)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    argv = [sys.executable, str(Path(__file__).resolve()), "--probe", str(probe), "--"]
    argv += ["refresh", "--onto", onto, "--defer-conflicts"]
    proc, total_wall, total_cpu = timed(argv, copy, env, f"refresh of {fork}")
    got = json.loads(probe.read_text())
    rows: dict[str, dict[str, float]] = {r: {"cpu": 0.0, "wall": 0.0} for r in ROWS}
    for phase, seconds in got["cpu"].items():
        rows[phase]["cpu"] += seconds
    for phase, seconds in got["wall"].items():
        rows[phase]["wall"] += seconds
    merge_cpu = 0.0
    for line in log.read_text().splitlines():
        user, system, elapsed, *words = line.split(" ")
        try:
            spent = float(user) + float(system)
        except ValueError:
            continue
        phase = _git_phase(" ".join(words))
        if phase is None:
            merge_cpu += spent
            continue
        rows[phase]["cpu"] += spent
        if phase == "move":  # (the others run inside a Python phase: their wall is in it)
            rows["move"]["wall"] += float(elapsed)
            rows["publish"]["wall"] -= float(elapsed)
    asked = got["merge_ticks"]
    total = sum(asked.values())
    for phase, share in asked.items():  # the merge-tree process's CPU by who asked
        row = {"replay": "replay's merges", "labels": "labels' merges"}.get(phase, phase)
        rows[row]["cpu"] += merge_cpu * share / total if total else 0.0
    rows["rest"]["cpu"] += total_cpu - sum(r["cpu"] for r in rows.values())
    rows["rest"]["wall"] += total_wall - sum(r["wall"] for r in rows.values())
    return total_wall, total_cpu, rows


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--probe":
        _probe(sys.argv[2], sys.argv[4:])
    import real_drift

    ap = argparse.ArgumentParser()
    ap.add_argument("forks", nargs="+", type=Path)
    ap.add_argument("--onto", default="origin/main")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--code", help="a version's package folder (default: this one)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    code = args.code or str(HERE.parents[1])
    report = {}
    with tempfile.TemporaryDirectory(prefix="refresh-floor-") as tmp:
        room = Path(tmp)
        for fork in args.forks:
            runs: list[dict[str, Any]] = []
            loads = []
            for _ in range(args.runs):
                loads.append(os.getloadavg()[0])
                copy = room / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                subprocess.run(["cp", "-a", str(fork), str(copy)], check=True)
                listed = real_drift.ps(copy, "series", "--json")[0]
                base = json.loads(listed)["base"]
                (room / "scratch").mkdir(exist_ok=True)
                rebased = real_drift.rebase(copy, base, args.onto, room / "scratch")
                move_wall, move_cpu = real_drift.move(copy, args.onto)
                wall, cpu, rows = _refresh(fork, room, args.onto, code)
                runs.append(
                    {
                        "rebase": (rebased["wall"], rebased["cpu"]),
                        "move": (move_wall, move_cpu),
                        "refresh": (wall, cpu),
                        "rows": rows,
                    }
                )
            report[fork.name] = _summary(runs, loads)
            if not args.json:
                _print(fork.name, report[fork.name])
    if args.json:
        print(json.dumps(report, indent=1))


def _summary(runs: list[dict[str, Any]], loads: list[float]) -> dict[str, Any]:
    def med(values: list[float]) -> float:
        return statistics.median(values)

    out: dict[str, Any] = {"load": (min(loads), max(loads)), "runs": len(runs)}
    for k in ("rebase", "move", "refresh"):
        out[k] = {"wall": med([r[k][0] for r in runs]), "cpu": med([r[k][1] for r in runs])}
    out["rows"] = {
        row: {m: med([r["rows"][row][m] for r in runs]) for m in ("cpu", "wall")} for row in ROWS
    }
    for m in ("cpu", "wall"):
        budget = (out["rebase"][m] - out["move"][m]) / 3
        floor = sum(out["rows"][row][m] for row in FLOOR)
        beyond = out["refresh"][m] - out["move"][m]
        out[m] = {
            "budget": budget,
            "floor": floor,
            "room": budget - floor,
            "beyond_move": beyond,
            "ratio": (out["rebase"][m] - out["move"][m]) / beyond if beyond > 0 else None,
        }
    return out


def _print(name: str, s: dict[str, Any]) -> None:
    lo, hi = s["load"]
    print(f"{name} (median of {s['runs']}, load {lo:.1f}-{hi:.1f})")
    for k in ("rebase", "move", "refresh"):
        print(f"  {k:<8} wall {s[k]['wall']:6.2f}  CPU {s[k]['cpu']:6.2f}")
    print("  refresh by phase     CPU    wall")
    for row in ROWS:
        mark = "*" if row in FLOOR else " "
        print(f"  {mark}{row:<18} {s['rows'][row]['cpu']:6.2f}  {s['rows'][row]['wall']:6.2f}")
    for m in ("cpu", "wall"):
        f = s[m]
        ratio = f"{f['ratio']:.2f}" if f["ratio"] is not None else "n/a"
        print(
            f"  {m:<4}: (rebase - move) / 3 = {f['budget']:.2f}; floor (*) {f['floor']:.2f}: "
            f"room {f['room']:+.2f}; refresh - move {f['beyond_move']:.2f} (ratio {ratio})"
        )


if __name__ == "__main__":
    main()
