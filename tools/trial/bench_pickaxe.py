#!/usr/bin/env python3
"""check_labels' ``log -S`` questions asked two ways, side by side: one ``git log --no-walk
-S`` per line over the report's named commits (as before), and `check_labels.FastGit.pickaxe`
(each named commit's diff read once). The day-one check's first N primary reports of a
`day_after.py` record; wall and CPU seconds (git's and Python's), and whether they agree.

    python tools/trial/bench_pickaxe.py WORK [REPORTS] [QUESTIONS]
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

import check_labels  # noqa: E402


def main() -> int:
    work = sys.argv[1]
    reports, limit = int(sys.argv[2]) if len(sys.argv) > 2 else 6, None
    if len(sys.argv) > 3:
        limit = int(sys.argv[3])
    record = json.loads(Path(work + ".labels.json").read_text())
    step = next(s for s in record["steps"] if s["args"][:2] == ["check", "--onto"])
    data = json.loads(step["stdout"])
    asks = []
    for rep in [c for c in data["conflicts"] if c["kind"] == "primary"][:reports]:
        named = sorted(
            {c["commit"] for h in rep["hunks"] for c in h["upstream_commits"] if c["commit"]}
        )
        for h in rep["hunks"]:
            for line in set(h["now"]) ^ set(h["expected"]):
                if line.strip() and line.strip() not in "{}":
                    asks.append((line, named))
    asks = asks[:limit]

    def cpu() -> tuple[float, float]:
        kids, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(0)
        return kids.ru_utime + kids.ru_stime, me.ru_utime + me.ru_stime

    def by_git() -> dict[tuple[str, str], bool]:
        seen: dict[tuple[str, str], bool] = {}
        for line, named in asks:
            new = [c for c in named if (line, c) not in seen]
            if new:
                args = ["git", "log", "--format=%H", "--no-walk", "-S" + line, *new]
                out = subprocess.run(args, cwd=work, capture_output=True, text=True)
                seen.update({(line, c): c in out.stdout.split() for c in new})
        return seen

    def by_pickaxe() -> dict[tuple[str, str], bool]:
        fast = check_labels.FastGit(SimpleNamespace(path=Path(work), work=work))
        seen: dict[tuple[str, str], bool] = {}
        for line, named in asks:
            new = [c for c in named if (line, c) not in seen]
            if new:
                seen.update({(line, c): hit for c, hit in fast.pickaxe(line, new).items()})
        return seen

    commits = {c for _line, named in asks for c in named}
    print(f"{len(asks)} questions over {len(commits)} commits")
    said = {}
    for name, ask in (("pickaxe", by_pickaxe), ("log -S", by_git)):
        t, (g, p) = time.time(), cpu()
        said[name] = ask()
        g2, p2 = cpu()
        print(
            f"{name}: wall {time.time() - t:.1f} s, git CPU {g2 - g:.1f} s, python {p2 - p:.1f} s"
        )
    print(f"same answers: {said['pickaxe'] == said['log -S']}")
    return 0 if said["pickaxe"] == said["log -S"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
