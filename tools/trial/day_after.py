#!/usr/bin/env python3
"""A new user's two days on a real fork, every command's output recorded.

    python tools/trial/day_after.py FORK WORK DAY1 DAY2 [-o LABELS.json] [--bring-back N]

FORK is a clone with a series pushed (``tools/trial/mkfork.sh MIRROR BRANCH DIR`` makes one); it is
copied to WORK (which must not exist) and left alone. In WORK, as a maintainer would:

- day one: ``status``, ``check --onto DAY1``, ``refresh --onto DAY1 --defer-conflicts``,
  ``status``;
- each patch day one deferred for its own conflict (primary, no root) is brought back:
  ``push NAME``; where it stops on NAME, each conflicted file is resolved as the patch has it,
  hunk by hunk (the side after ``=======``; a file the stop's proposal resolved is kept as
  shown), and ``refresh --continue``; a stop on another patch is ``refresh --skip``ped; a
  conflict that is not in lines (a file left absent) is ``refresh --abort``ed;
- day two: ``status``, ``check --onto DAY2``, ``refresh --onto DAY2 --defer-conflicts``,
  ``status``, ``check --onto DAY2 --verbose`` (each patch still deferred, its conflict shown
  again); then ``check`` and ``status`` once more, as the user reads them.

This is the order in which the label oracle (`tests/label_days.py`) drives its generated
cases, so that `check_labels.py` replays this record through the same code. Each step keeps
the command, its exit status, output, seconds, HEAD after it and a tree of the series folder
(with the conflicted files at a stop) under ``refs/trial/`` in WORK, so nothing the record
names is collected by git."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.label_oracle import resolve_markers  # noqa: E402  (the oracle's policy, one place)

IDENTITY = {
    "GIT_AUTHOR_NAME": "patchstack trial",
    "GIT_AUTHOR_EMAIL": "trial@example.org",
    "GIT_COMMITTER_NAME": "patchstack trial",
    "GIT_COMMITTER_EMAIL": "trial@example.org",
}


def take_patch_side(text: str) -> str | None:
    """A conflicted file at a stop resolved as the patch has it: each marked hunk the patch's
    side (`resolve_markers`); a file without markers as it stands (the stop's built-in
    proposal resolved each of its hunks); None for a file the stop left empty or absent (a
    conflict not in lines: the push is aborted)."""
    if not text:
        return None
    fixed = resolve_markers(text)
    return text if fixed is None and "\n<<<<<<< " not in "\n" + text else fixed


class Session:
    """WORK and the record of every command run in it."""

    def __init__(self, work: Path, patchstack: list[str]) -> None:
        self.work = work
        self.patchstack = patchstack
        self.env = {**IDENTITY, **os.environ, "NO_COLOR": "1"}
        self.steps: list[dict] = []
        self.phase = ""

    def git(self, *args: str, env: dict[str, str] | None = None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.work,
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
        )
        if proc.returncode != 0:
            raise SystemExit(f"day_after: git {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def rev(self, name: str) -> str:
        return self.git("rev-parse", "--verify", name + "^{commit}").strip()

    def ps(self, *args: str, keep: tuple[str, ...] = ()) -> dict:
        """One patchstack command, recorded; ``keep``: work-tree files to keep with it."""
        start = time.monotonic()
        code, stdout, stderr = self.call(args)
        step = {
            "phase": self.phase,
            "args": list(args),
            "exit": code,
            "stdout": stdout,
            "stderr": stderr,
            "seconds": round(time.monotonic() - start, 2),
            "head": self.rev("HEAD"),
        }
        step["files"] = self.keep_files(len(self.steps), step["head"], keep)
        self.steps.append(step)
        print(
            f"[{self.phase}] patchstack {' '.join(args)}: exit {code}, {step['seconds']}s",
            file=sys.stderr,
        )
        if code not in (0, 1):
            print(stderr.strip()[-2000:], file=sys.stderr)
        return step

    def call(self, args: tuple[str, ...]) -> tuple[int, str, str]:
        """The real CLI in a process of its own: exit status, output, errors."""
        proc = subprocess.run(
            [*self.patchstack, *args], cwd=self.work, capture_output=True, text=True, env=self.env
        )
        return proc.returncode, proc.stdout, proc.stderr

    def json(self, *args: str) -> dict:
        step = self.ps(*args, "--json")
        if step["exit"] not in (0, 1):
            raise SystemExit(f"day_after: patchstack {' '.join(args)} failed: {step['stderr']}")
        data: dict = json.loads(step["stdout"])
        return data

    def keep_files(self, n: int, head: str, extra: tuple[str, ...]) -> str:
        """A tree of the series folder and ``extra`` as they are now, kept by a ref."""
        with tempfile.TemporaryDirectory() as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            paths = [p for p in ("patches", *extra) if (self.work / p).exists()]
            if paths:
                self.git("add", "-f", "--", *paths, env=env)
            tree = self.git("write-tree", env=env).strip()
        commit = self.git("commit-tree", tree, "-p", head, "-m", f"trial step {n}").strip()
        self.git("update-ref", f"refs/trial/step-{n}", commit)
        return tree

    def stack(self, base: str) -> dict[str, str]:
        """The applied patches over ``base``: name -> commit, oldest first."""
        out = self.git("log", "--reverse", "-z", "--format=%H%x01%B", f"{base}..HEAD")
        found = {}
        for record in filter(None, out.split("\0")):
            commit, message = record.lstrip("\n").split("\x01", 1)
            for line in message.splitlines():
                if line.startswith("Patchstack-Patch: "):
                    found[line.split(": ", 1)[1].strip()] = commit
        return found


def day(s: Session, label: str, ref: str, again: bool = False) -> dict:
    """status, check --onto REF, refresh --onto REF --defer-conflicts, status; ``again``:
    then ``check --onto REF --verbose``, each deferred patch's conflict shown again."""
    s.phase = label
    s.json("status")
    s.json("check", "--onto", ref)
    data = s.json("refresh", "--onto", ref, "--defer-conflicts")
    s.json("status")
    if again:
        s.json("check", "--onto", ref, "--verbose")
    return data


def bring_back(s: Session, name: str, rounds: int) -> str:
    """``push NAME``, its conflict taken as the patch has it, others skipped; the outcome."""
    s.phase = f"push {name}"
    s.json("status")
    step = s.ps("push", name)
    for _ in range(rounds):
        if step["exit"] != 1:
            break
        status = s.json("status")
        stopped = status["stopped"]
        if stopped is None:
            return "refused"
        # the stop's files, kept with the status that names them (as the oracle reads them)
        kept = tuple(stopped["conflicted"])
        s.steps[-1]["files"] = s.keep_files(len(s.steps) - 1, s.rev("HEAD"), kept)
        if stopped["patch"] != name:
            step = s.ps("refresh", "--skip")
            continue
        fixed = {}
        for path in stopped["conflicted"]:
            file = s.work / path
            fixed[path] = take_patch_side(file.read_text() if file.is_file() else "")
        if None in fixed.values():
            s.ps("refresh", "--abort")
            return "aborted (a conflict not in lines)"
        for path, text in fixed.items():
            (s.work / path).write_text(text or "")
        step = s.ps("refresh", "--continue")
    return "applied" if step["exit"] == 0 else f"exit {step['exit']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fork", type=Path, help="a clone with a series pushed (left alone)")
    ap.add_argument("work", type=Path, help="where to copy it and work (must not exist)")
    ap.add_argument("day1", help="upstream revision of day one")
    ap.add_argument("day2", help="upstream revision of the day after")
    ap.add_argument("-o", "--out", type=Path, help="the record (default: WORK.labels.json)")
    ap.add_argument("--bring-back", type=int, default=-1, help="at most N patches (default all)")
    ap.add_argument(
        "--patchstack", default=f"{sys.executable} -m patchstack", help="the command to run"
    )
    args = ap.parse_args(argv)
    work = args.work.resolve()
    out = args.out or work.with_name(work.name + ".labels.json")
    if work.exists():
        ap.error(f"{work} exists: day_after works on a fresh copy")
    shutil.copytree(args.fork, work, symlinks=True)
    s = Session(work, args.patchstack.split())
    s.git("update-index", "-q", "--refresh")
    first = s.json("status")
    s.steps.clear()  # the record starts with day one's own status
    base = first["base"]
    record: dict = {
        "fork": str(args.fork.resolve()),
        "work": str(work),
        "patchstack": args.patchstack,
        "days": [
            {"label": "day one", "ref": args.day1, "old": base, "new": s.rev(args.day1)},
            {"label": "day after", "ref": args.day2, "new": s.rev(args.day2)},
        ],
        "head": s.rev("HEAD"),
        "original": s.stack(base),
        "brought_back": {},
        "steps": s.steps,
    }
    s.git("update-ref", "refs/trial/day1", record["days"][0]["new"])
    s.git("update-ref", "refs/trial/day2", record["days"][1]["new"])
    one = day(s, "day one", "refs/trial/day1")
    primaries = [r["patch"] for r in one["deferred"] if r["kind"] == "primary" and not r["root"]]
    if args.bring_back >= 0:
        primaries = primaries[: args.bring_back]
    rounds = 2 * len(first["patches"]) + 2
    for name in primaries:
        record["brought_back"][name] = bring_back(s, name, rounds)
    record["days"][1]["old"] = record["days"][0]["new"]
    day(s, "day after", "refs/trial/day2", again=True)
    s.phase = "reading"
    s.json("check")
    s.ps("status")
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"day_after: {len(s.steps)} commands recorded in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
