"""Where the stop-by-stop path's time goes, by the steps a command names, without a profiler:
``refresh --onto`` then ``refresh --skip`` at every stop on a copy of FORK, each command run by
``stepped.py``, which reads a clock at the interpreter's start, once the code is imported, at
every step the command names (``replaying the series``, ``writing the work tree``, ...) and at
its exit, and around a few functions (inclusive), in wall time and in CPU time (the process's
own and its finished children's: git).

    python tools/bench/skip_steps.py FORK --onto origin/main [--runs 3] [--json]

Prints the skips summed (the first stop apart), medians over the runs, each step until the
next and each function; divide by the skips for a skip's share. The steps are the product's
own progress labels, so the split is as coarse as they are; the functions' children's CPU is
counted when a child is reaped (a batch process kept open is counted where it ends). Time
``git rebase --skip`` with ``real_drift.py --stops``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_drift import ENV  # noqa: E402

STEPPED = Path(__file__).resolve().parent / "stepped.py"

# Timed inclusively (outermost call), wherever they are called from.
FUNCTIONS = [
    "patchstack.engine.contract:place_fast",
    "patchstack.engine.relocate:Relocator.propose",
    "patchstack.engine.needs:Needs.held_at",
    "patchstack.git.attributes:merge_inputs",
    "patchstack.commands.refresh.knockons:triaged",
    "patchstack.commands.refresh.taking:before_stop",
    "patchstack.journal.snapshot:take_snapshot",
    "patchstack.transaction:publish",
    "patchstack.engine.merging:blame_first",
    "patchstack.engine.verdicts:classify",
    "patchstack.commands.refresh.taken:judge",
    "patchstack.store:Store._load",
    "patchstack.store:Store.save",
]

Times = dict[str, tuple[float, float]]


def spans(marks: list[list[Any]], started: float) -> Times:
    """Each label's (wall, CPU) until the next mark; the interpreter's start from `started`."""
    out: Times = defaultdict(lambda: (0.0, 0.0))
    label0, wall0, cpu0 = "interpreter", started, 0.0
    for label, wall, own, kids in marks:
        w, c = out[label0]
        out[label0] = (w + wall - wall0, c + own + kids - cpu0)
        label0, wall0, cpu0 = label, wall, own + kids
    return dict(out)


def one_run(fork: Path, onto: str, scratch: Path) -> tuple[Times, int]:
    copy = scratch / "fork"
    shutil.rmtree(copy, ignore_errors=True)
    subprocess.run(["cp", "-a", str(fork.resolve()), str(copy)], check=True)
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=copy, env=ENV, check=False)
    summed: Times = defaultdict(lambda: (0.0, 0.0))
    argv, skips = ["refresh", "--onto", onto], 0
    for n in range(1000):
        out = scratch / "marks.json"
        started = time.monotonic()
        cmd = [sys.executable, str(STEPPED), str(out), json.dumps(FUNCTIONS), *argv]
        code = subprocess.run(cmd, cwd=copy, env=ENV, capture_output=True).returncode
        if n:
            skips += 1
            got = json.loads(out.read_text())
            for label, (w, c) in [*spans(got["marks"], started).items(), *got["timed"].items()]:
                w0, c0 = summed[label]
                summed[label] = (w0 + w, c0 + c)
        if code != 1:
            break
        argv = ["refresh", "--skip"]
    return dict(summed), skips


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("fork", type=Path)
    ap.add_argument("--onto", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="skip-steps."))
    try:
        runs = [one_run(args.fork, args.onto, scratch) for _ in range(args.runs)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    labels = list(dict.fromkeys(label for summed, _ in runs for label in summed))
    medians = {
        label: (
            statistics.median(summed.get(label, (0.0, 0.0))[0] for summed, _ in runs),
            statistics.median(summed.get(label, (0.0, 0.0))[1] for summed, _ in runs),
        )
        for label in labels
    }
    skips = runs[0][1]
    if args.json:
        print(json.dumps({"skips": skips, "medians": medians}))
        return
    steps = {k: v for k, v in medians.items() if ":" not in k}
    steps["total"] = (sum(w for w, _ in steps.values()), sum(c for _, c in steps.values()))
    functions = {k: medians[k] for k in FUNCTIONS if k in medians}
    print(f"{skips} skip(s), summed; medians of {args.runs} runs (wall / CPU s, own + git's)")
    n = max(skips, 1)
    for title, rows in (("steps", steps), ("functions, inclusive", functions)):
        print(title + ":")
        for label, (w, c) in rows.items():
            print(f"  {label:48} {w:7.2f} {c:7.2f}   {w / n:5.3f} {c / n:5.3f} a skip")


if __name__ == "__main__":
    main()
