"""The first stop's floor (issue 35): ``git rebase --onto`` to its first stop and ``refresh
--onto`` (the package of ``--code``, default this one) to its first stop, alternated in one
loop, each from a fresh ``cp -a`` copy of FORK, both traced (``GIT_TRACE2_EVENT``), the
refresh's phases timed by `stop_timeline`'s wrapped functions. Medians of RUNS runs.

Both commands move the work tree from the fork's HEAD to the new base (git) or to the stop's
tree, which is the new base plus the stopped patch's merge (patchstack): the same files. Each
one's move is its largest ``unpack_trees`` region (git's checkout of the new base; the
stop's ``read-tree -m -u``). What the target leaves patchstack beyond its own move is git's
time less git's move ("git's rest"). What patchstack cannot drop before its move, each
measured in its own run:

- start: the interpreter, the imports and the command line up to ``refresh`` (git's own
  start is in git's rest);
- the stopped patch's merge: git's ``merge`` region (merge-ort) is counted, not patchstack's
  (the same merge, as git makes it);
- follow: `Relocator.propose_later`, where a patch's file upstream deleted: which of its
  hunks the stop carries and where, which it prints (git shows a modify/delete conflict);
- the snapshot the stop is undone to (`before_stop`) and the one after its publish
  (`transaction._after`): what ``--abort`` and ``undo`` put back.

    python tools/bench/first_floor.py FORK [RUNS] [--code DIR]
"""

from __future__ import annotations

import argparse
import json
import os
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
from stop_timeline import PHASES, RUNNER  # noqa: E402


def regions(trace: Path, category: str, label: str) -> list[float]:
    """The seconds of each ``region_leave`` of ``category``/``label`` in a trace2 event file."""
    found = []
    for line in trace.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "region_leave" and (e.get("category"), e.get("label")) == (
            category,
            label,
        ):
            found.append(float(e["t_rel"]))
    return found


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return proc.returncode, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fork", type=Path)
    ap.add_argument("runs", type=int, nargs="?", default=3)
    ap.add_argument("--code", type=Path, help="the package's folder's parent (default: this)")
    args = ap.parse_args()
    src = args.fork.resolve()
    onto = rd.git(src, "rev-parse", "origin/main")
    base = json.loads(rd.ps(src, "series", "--json")[0])["base"]
    scratch = Path(tempfile.mkdtemp(prefix="first-floor."))
    rows: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        rows.setdefault(key, []).append(value)

    try:
        for _ in range(args.runs):
            for who in ("git", "patchstack"):
                fork, trace = scratch / "fork", scratch / "trace.json"
                shutil.rmtree(fork, ignore_errors=True)
                trace.unlink(missing_ok=True)
                subprocess.run(["cp", "-a", str(src), str(fork)], check=True)
                rd.git(fork, "update-index", "-q", "--refresh")
                env = dict(rd.ENV, GIT_TRACE2_EVENT=str(trace))
                if who == "git":
                    argv = ["git", "rebase", "-q", "--reapply-cherry-picks", "--onto", onto, base]
                    code, wall, cpu = timed(argv, fork, env)
                    moves = regions(trace, "unpack_trees", "unpack_trees")
                    merges = regions(trace, "merge", "incore_nonrecursive")
                    note("git: wall", wall)
                    note("git: CPU", cpu)
                    note("git: its move", max(moves))
                    note("git: its merge (merge-ort)", sum(merges))
                    note("git: rest (wall - move)", wall - max(moves))
                    continue
                out = scratch / "spans.json"
                if args.code:
                    env["PYTHONPATH"] = str(args.code.resolve())
                argv = [sys.executable, "-c", RUNNER, json.dumps(PHASES), str(out)]
                code, wall, cpu = timed([*argv, "refresh", "--onto", onto], fork, env)
                if code != 1:
                    sys.exit(f"refresh did not stop (exit {code})")
                spans = json.loads(out.read_text())["spans"]
                took: dict[str, tuple[float, float]] = {}  # name: (first start, summed)
                for start, seconds, name in sorted(spans):
                    was = took.get(name.rsplit(".", 1)[-1], (start, 0.0))
                    took[name.rsplit(".", 1)[-1]] = (was[0], was[1] + seconds)
                move = max(regions(trace, "unpack_trees", "unpack_trees"))
                note("patchstack: wall", wall)
                note("patchstack: CPU", cpu)
                note("patchstack: its move", move)
                note("patchstack: rest (wall - move)", wall - move)
                note("start (interpreter, imports, to refresh)", took["refresh"][0])
                note("follow (propose_later)", took.get("propose_later", (0, 0.0))[1])
                snap = took.get("before_stop", (0, 0.0))[1] + took.get("_after", (0, 0.0))[1]
                note("snapshots (before_stop + _after)", snap)
                note("patchstack's merge (Placer.merge)", took.get("merge", (0, 0.0))[1])
                # the rest of the rest, in the order it runs (beyond the floor's items)
                r0, r1 = took["refresh"], took["replay"]
                pub = took["publish"]
                rel = took.get("_relabel_tree", (0, 0.0))[1]
                note("beyond: before the replay (proof, engine, prefetch)", r1[0] - r0[0])
                merge = took.get("merge", (0, 0.0))[1]
                note("beyond: the replay less its merge", r1[1] - merge)
                ours_less = merge - rows["git: its merge (merge-ort)"][-1]
                note("beyond: its merge less git's (labels: relabel)", ours_less)
                note("  (of which the labels rewritten)", rel)
                prep = pub[0] - (r1[0] + r1[1])
                prep -= (
                    took.get("propose_later", (0, 0.0))[1] + took.get("before_stop", (0, 0.0))[1]
                )
                note("beyond: the stop before its publish", prep)
                note(
                    "beyond: the publish less move and _after",
                    pub[1] - move - took.get("_after", (0, 0.0))[1],
                )
                note("beyond: after the publish, exit, interpreter boot", wall - pub[0] - pub[1])
            print(f"  run done, load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    start, follow = rows["start (interpreter, imports, to refresh)"], rows["follow (propose_later)"]
    snaps, merge = rows["snapshots (before_stop + _after)"], rows["git: its merge (merge-ort)"]
    rows["floor: start + git's merge + follow + snapshots"] = [
        sum(four) for four in zip(start, merge, follow, snaps, strict=True)
    ]
    rows["floor without follow"] = [sum(three) for three in zip(start, merge, snaps, strict=True)]
    rows["floor - room (git's rest), run by run"] = [
        f - r
        for f, r in zip(
            rows["floor: start + git's merge + follow + snapshots"],
            rows["git: rest (wall - move)"],
            strict=True,
        )
    ]
    med = {k: statistics.median(v) for k, v in rows.items()}
    for k, v in rows.items():
        print(f"{k:50s} {med[k]:6.2f}   ({', '.join(f'{x:.2f}' for x in v)})")
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
