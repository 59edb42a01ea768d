#!/usr/bin/env python3
"""The widest line a new user reads, command by command, on a real fork:

    python tools/trial/widest.py FORK WORK SEQUENCE [--code DIR] [--back N]

FORK is copied to WORK (which must not exist) and left alone; every command runs in WORK in
text mode (no --json), as a user reads it, and prints its widest line of standard output and
of standard error (characters). ``--code DIR``: a version's package folder (``git archive REV
patchstack | tar -x -C DIR``) run with ``PYTHONPATH`` at it; this checkout's without it.
SEQUENCE is one of:

- ``deferring``: ``refresh --onto origin/main --defer-conflicts``;
- ``day-after``: ``refresh --onto origin/main~N --defer-conflicts`` (``--back N``, 300 by
  default: N first-parent commits back), ``status``; the first patch it deferred for its own
  conflict brought back (``push NAME``, each conflicted file resolved as the patch has it,
  ``refresh --continue``: `day_after.bring_back`), ``status``; then ``refresh --onto
  origin/main`` (and, where it stops, ``refresh --abort`` and ``refresh --onto origin/main
  --defer-conflicts``), ``status``;
- ``status``: ``status`` and ``status --verbose``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from day_after import Session, bring_back  # noqa: E402


def widest(text: str) -> tuple[int, str]:
    lines = text.splitlines() or [""]
    line = max(lines, key=len)
    return len(line), line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fork", type=Path)
    ap.add_argument("work", type=Path)
    ap.add_argument("sequence", choices=("deferring", "day-after", "status"))
    ap.add_argument("--code", default=None)
    ap.add_argument("--back", type=int, default=300)
    ap.add_argument("--show", action="store_true", help="print each widest line too")
    a = ap.parse_args()
    work = a.work.resolve()
    if work.exists():
        ap.error(f"{work} exists")
    shutil.copytree(a.fork, work, symlinks=True)
    s = Session(work, [sys.executable, "-m", "patchstack"])
    if a.code:
        s.env["PYTHONPATH"] = os.path.abspath(a.code)
    s.git("update-index", "-q", "--refresh")
    if a.sequence == "deferring":
        s.ps("refresh", "--onto", "origin/main", "--defer-conflicts")
    elif a.sequence == "status":
        s.ps("status")
        s.ps("status", "--verbose")
    else:
        s.phase = "day one"
        s.ps("refresh", "--onto", f"origin/main~{a.back}", "--defer-conflicts")
        s.ps("status")
        patches = json.loads(s.call(("status", "--json"))[1])["patches"]
        roots = [
            p["name"]
            for p in patches
            if (m := p["mark"]) and m["kind"] == "deferred" and not m["root"]
        ]
        if roots:
            bring_back(s, roots[0], 4)
            s.ps("status")
        s.phase = "day after"
        step = s.ps("refresh", "--onto", "origin/main")
        if step["exit"] == 1:
            s.ps("refresh", "--abort")
            s.ps("refresh", "--onto", "origin/main", "--defer-conflicts")
        s.ps("status")
    top = 0
    for step in s.steps:
        if "--json" in step["args"]:  # (bring_back reads status --json: not a screen)
            continue
        for stream in ("stdout", "stderr"):
            n, line = widest(step[stream])
            top = max(top, n)
            print(f"{n:5d}  {stream:<6} [{step['phase']}] patchstack {' '.join(step['args'])}")
            if a.show and n > 100:
                print(f"       {line}")
    print(f"widest line: {top} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
