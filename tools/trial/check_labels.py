#!/usr/bin/env python3
"""Every label a recorded day after printed, checked against git in the kept repository.

    python tools/trial/check_labels.py WORK LABELS.json [--json OUT]

LABELS.json is `day_after.py`'s record. The labels are judged by the label oracle's own code
(`tests/label_oracle.py` holds the definitions, `tests/label_days.py` the two days), replayed
over the record: where the oracle runs a patchstack command, it is handed the recorded output
and sees HEAD and the series folder as they were after it (kept under ``refs/trial/``). So a
label means here what it means for the generated cases:

- a deferred (or reported) conflict: git's cherry-pick of the patch at its place conflicts,
  its place being ``git rebase``'s with the same patches skipped;
- knock-on of R: it applies once R is applied, R's conflict taken as R has it;
- primary: no one missing patch before it, applied, lets it apply;
- upstream: git's pick at its place is empty, and its commit brought the change; no-op: it is
  empty only for want of a missing patch;
- a culprit: ``git log -L``/``-S`` over the conflicting lines names it, or it changed them;
  for a patch still deferred, shown again by the day after's ``check --verbose``, over the
  range from the base its deferral's change was made on;
- held, deferred marks, superseded, a refresh's tree, a patch brought back: as the oracle says.

Prints confirmed / refuted / unknown per kind and each refuted label (a bug: the record's
commands reproduce it). Unknown: what patchstack itself calls unknown (a verdict, a hunk
without upstream commits) and what the oracle cannot place. Exit 1 when a label is refuted."""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))

from day_after import take_patch_side  # noqa: E402  (the record's own policy)

from tests.label_days import Day, bring_back  # noqa: E402
from tests.label_oracle import Git, Oracle, untaken  # noqa: E402

KINDS = (
    "conflict",
    "knock-on",
    "primary",
    "held",
    "culprit",
    "upstream",
    "evidence",
    "no-op",
    "deferred",
    "superseded",
    "unchanged",
    "offset",
    "merged",
    "tree",
    "push",
)


class Diverged(Exception):
    """The oracle asked for a command the record does not hold."""


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


class Replay:
    """The kept repository as the oracle's ``Repo``: commands answered from the record, HEAD
    and the series folder those after the last command answered."""

    def __init__(self, work: Path, record: dict, scratch: Path) -> None:
        self.work = work
        self.steps = record["steps"]
        self.scratch = scratch
        self.at = -1
        self.head = record["head"]
        self.dirs: dict[int, Path] = {}

    @property
    def path(self) -> Path:
        """A folder holding the series folder (and a stop's files) of the current step, its
        ``.git`` the kept repository's."""
        k = max(self.at, 0)
        if k not in self.dirs:
            where = self.scratch / f"step-{k}"
            where.mkdir()
            (where / ".git").symlink_to(self.work / ".git")
            tar = subprocess.run(
                ["git", "archive", "--format=tar", self.steps[k]["files"]],
                cwd=self.work,
                capture_output=True,
                check=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(where)], input=tar, check=True)
            self.dirs[k] = where
        return self.dirs[k]

    def git(self, *args: str, check: bool = True, input: str | None = None) -> str:
        args = tuple(a.replace("HEAD", self.head) for a in args)
        proc = subprocess.run(
            ["git", *args],
            cwd=self.work,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            input=input,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args} failed: {proc.stderr}")
        return proc.stdout

    def tree(self, rev: str = "HEAD") -> str:
        return self.git("rev-parse", f"{rev}^{{tree}}").strip()

    def ps(self, *args: str, code: int | None = 0, **_kw: object) -> Result:
        for k in range(self.at + 1, len(self.steps)):
            if self.steps[k]["args"] == list(args):
                self.at, step = k, self.steps[k]
                self.head = step["head"]
                return Result(step["exit"], step["stdout"], step["stderr"])
        raise Diverged(f"patchstack {' '.join(args)} (after step {self.at})")

    def write(self, rel: str, text: str) -> None:
        """The resolution the record's next command was run with: nothing to do."""


class Lines:
    """Every line of a commit's files, as `Git.all_lines` has them, asked line by line
    (``git grep``) rather than read whole: a real tree has thousands of files."""

    def __init__(self, git: FastGit, commit: str) -> None:
        self.git, self.commit = git, commit

    def __contains__(self, line: object) -> bool:
        return isinstance(line, str) and line in self.git.present(self.commit, {line})

    def __rsub__(self, other: set[str]) -> set[str]:
        lines = set(other)
        if self.git.span and self.commit != self.git.span[0]:
            return lines - self.git.anywhere(self.git.span, self.commit, lines)
        return lines - self.git.present(self.commit, lines)


def _ere(line: str) -> str:
    """``line`` as a POSIX extended regular expression that matches it literally."""
    out = []
    for c in line:
        if c == "\\" or c == "^":
            out.append("\\" + c)
        elif c in ".[]()*+?{}|$":
            out.append(f"[{c}]")
        else:
            out.append(c)
    return "".join(out)


class FastGit(Git):
    """The oracle's git, the same answers sooner on a large repository: lines looked up by
    ``git grep``, ranges listed once, ``log -S`` over a range asked only of the commits a
    report names (all that `Oracle.culprits` reads of it), output decoded leniently."""

    def __init__(self, repo) -> None:  # type: ignore[no-untyped-def]
        super().__init__(repo)
        self.lists: dict[tuple[str, ...], str] = {}
        self.focus: set[str] | None = None
        self.picked: dict[tuple[str, str], bool] = {}  # (-S needle, commit): does -S keep it
        self.diffs: dict[str, list[tuple[bytes, bytes]] | None] = {}  # `_diffs`
        self.found: dict[tuple[str, str], bool] = {}
        # (old, C): `Oracle.not_brought` asks each upstream version from old up to C's parent
        # whether it has the lines a patch removes; `anywhere` answers for all at once
        self.span: tuple[str, str] | None = None
        self.seen: dict[tuple[str, str, str], bool] = {}

    def run(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> str:
        if args[0] == "rev-list" and env is None:
            if args not in self.lists:
                self.lists[args] = self._run(args, check, env)
            return self.lists[args]
        if args[0] == "log" and len(args) == 4 and args[2].startswith("-S") and self.focus:
            span = set(self.run("rev-list", args[3]).split())
            asked = sorted(self.focus & span)
            new = [c for c in asked if (args[2], c) not in self.picked]
            if new:  # the range's walk filtered by -S, on these commits alone
                for c, hit in self.pickaxe(args[2][2:], new).items():
                    self.picked[(args[2], c)] = hit
            hits = [c for c in asked if self.picked[(args[2], c)]]
            return "\n".join(hits) + "\n" if hits else ""
        return self._run(args, check, env)

    def pickaxe(self, needle: str, commits: list[str]) -> dict[str, bool]:
        """Which of ``commits`` ``git log -S NEEDLE`` keeps: a file pair of its diff whose
        sides hold the string a different number of times. The needle is one line, so the
        lines both sides share count alike: the removed and the added lines decide. Each
        commit's diff is read once for every needle (``log -S`` diffed whole commits again
        for each: seconds apiece on upstream's large ones). A merge, which ``log -S`` judges
        by its own rules, and a commit changing a binary file (whose bytes ``-S`` counts and
        the diff does not show) are asked of git."""
        self.diffs.update(self._diffs([c for c in commits if c not in self.diffs]))
        said: dict[str, bool] = {}
        merges = [c for c in commits if self.diffs[c] is None]
        if merges:
            out = self._run(("log", "--format=%H", "--no-walk", "-S" + needle, *merges), True, None)
            said.update({c: c in out.split() for c in merges})
        text = needle.encode()
        for c in commits:
            pairs = self.diffs[c]
            if pairs is not None:
                said[c] = any(gone.count(text) != come.count(text) for gone, come in pairs)
        return said

    def _diffs(self, commits: list[str]) -> dict[str, list[tuple[bytes, bytes]] | None]:
        """Each commit's file pairs as ``log -p`` makes them (renames as ``log -S`` sees
        them): the removed and the added lines of each; None for a merge or a commit that
        changes a binary file."""
        if not commits:
            return {}
        proc = subprocess.run(
            ["git", "log", "--no-walk=unsorted", "-p", "-U0", "--no-color", "--no-ext-diff"]
            + ["--format=%x00%H %P", *commits],
            cwd=self.repo.work,
            capture_output=True,
            check=True,
        )
        out: dict[str, list[tuple[bytes, bytes]] | None] = {}
        for record in proc.stdout.split(b"\0")[1:]:
            head, _nl, body = record.partition(b"\n")
            ids = head.decode().split()
            pairs: list[tuple[list[bytes], list[bytes]]] = []
            in_hunk = binary = False
            for line in body.split(b"\n"):
                if line.startswith(b"diff --git "):
                    pairs.append(([], []))
                    in_hunk = False
                elif not in_hunk and line.startswith(b"Binary files "):
                    binary = True
                elif line.startswith(b"@@ ") and pairs:
                    in_hunk = True
                elif in_hunk and line[:1] in (b"-", b"+"):
                    pairs[-1][line[:1] == b"+"].append(line[1:])
            merge = len(ids) > 2
            out[ids[0]] = (
                None if merge or binary else [(b"\n".join(a), b"\n".join(b)) for a, b in pairs]
            )
        missing = set(commits) - set(out)
        if missing:
            raise AssertionError(f"git log -p did not show {sorted(missing)[:3]}")
        return out

    def _run(self, args: tuple[str, ...], check: bool, env: dict[str, str] | None) -> str:
        proc = subprocess.run(
            ["git", *args],
            cwd=self.repo.work,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            env={**os.environ, **(env or {})},
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args}: {proc.stderr}")
        return proc.stdout

    def all_lines(self, commit: str) -> Lines:  # type: ignore[override]
        return Lines(self, commit)

    def present(self, commit: str, lines: set[str]) -> set[str]:
        """Which of ``lines`` some file of ``commit`` has."""
        ask = [ln for ln in lines if (commit, ln) not in self.found]
        if ask:
            got: set[str] = set()
            text = [ln for ln in ask if ln.strip()]
            if text:
                with tempfile.NamedTemporaryFile("w", suffix=".pat") as f:
                    f.write("".join(ln + "\n" for ln in text))
                    f.flush()
                    got |= set(self._grep(commit, "-F", "-f", f.name)) & set(text)
            for ln in ask:
                if not ln.strip():  # blank: a regular expression for the whole line
                    pattern = "^" + "".join(f"[{c}]" if c != "\t" else "\t" for c in ln) + "$"
                    got |= {ln} if self._grep(commit, "-q", "-e", pattern, quiet=True) else set()
            for ln in ask:
                self.found[(commit, ln)] = ln in got
        return {ln for ln in lines if self.found[(commit, ln)]}

    def anywhere(self, span: tuple[str, str], version: str, lines: set[str]) -> set[str]:
        """Which of ``lines`` some version of ``old..C^`` has (``version`` one of them): the
        union `Oracle.not_brought`'s loop takes, version by version. On a linear range each
        line a version has and ``old`` lacks was added by a commit of the range, which has it
        too: the commits whose diff adds or removes one (``log -G``) are the ones to ask. A
        range with merges is asked version by version."""
        old, full = span
        versions = self.run("rev-list", f"{old}..{full}^").split()
        if version not in versions or self.run("rev-list", "--merges", f"{old}..{full}^"):
            return self.present(version, lines)
        ask = [ln for ln in lines if (old, full, ln) not in self.seen]
        if ask:
            got: set[str] = set()
            pattern = "^(" + "|".join(_ere(ln) for ln in ask) + ")$"
            touched = self._run(
                ("log", "--text", "--format=%H", "-G" + pattern, f"{old}..{full}^"), True, None
            ).split()
            for commit in touched:
                got |= self.present(commit, set(ask) - got)
                if got == set(ask):
                    break
            for ln in ask:
                self.seen[(old, full, ln)] = ln in got
        return {ln for ln in lines if self.seen[(old, full, ln)]}

    def _grep(self, commit: str, *args: str, quiet: bool = False) -> list[str] | bool:
        proc = subprocess.run(
            ["git", "grep", "-a", "-h", *args, commit, "--"],
            cwd=self.repo.work,
            capture_output=True,
            encoding="utf-8",
            errors="replace",
        )
        if proc.returncode not in (0, 1):
            raise AssertionError(f"git grep: {proc.stderr}")
        if quiet:
            return proc.returncode == 0
        return proc.stdout.split("\n")


def kind_of(finding: str) -> str:
    """The kind of label a finding of the oracle refutes (its sentences name it)."""
    text = finding.split(": ", 1)[-1]
    for needle, kind in (
        ("culprit ", "culprit"),
        ("knock-on of", "knock-on"),
        ("primary, but", "primary"),
        ("upstream in ", "evidence"),
        ("no-op, but", "no-op"),
        ("upstream, but", "upstream"),
        ("held, but", "held"),
        ("superseded by", "superseded"),
        ("the tree is not", "push" if finding.startswith("push ") else "tree"),
        ("deferred at", "deferred"),
        ("marked ", "deferred"),
    ):
        if needle in text:
            return kind
    for verdict in ("unchanged", "offset", "merged"):
        if f": {verdict}, but" in finding:
            return verdict
    return "conflict"


class Counting(Oracle):
    """The oracle, counting what it confirms and what it cannot tell."""

    def __init__(self, repo: Replay, hints: set[str], limit: int) -> None:
        super().__init__(repo)  # type: ignore[arg-type]
        self.git = FastGit(repo)
        self.unknown: dict[str, list[str]] = {}
        self.hints, self.limit = hints, limit
        self.undecided: set[str] = set()  # patches (commits) brought_by could not afford

    def cannot(self, kind: str, why: str) -> None:
        self.unknown.setdefault(kind, []).append(why)

    def fail(self, where: str, text: str, item: str = "") -> None:
        super().fail(where, text, item)
        print(f"check_labels: refuted: {self.findings[-1]}", file=sys.stderr, flush=True)

    def culprits(self, where, report, old, new, merged=None) -> None:  # type: ignore[no-untyped-def]
        for hunk in report["hunks"]:
            if not [c for c in hunk["upstream_commits"] if c["commit"]]:
                self.cannot("culprit", f"{where}: {report['patch']} {hunk['path']}: none named")
        self.git.focus = {
            self.git.rev(c["commit"])
            for h in report["hunks"]
            for c in h["upstream_commits"]
            if c["commit"]
        }
        try:
            super().culprits(where, report, old, new, merged)
        finally:
            self.git.focus = None

    def brought_by(self, patch: str, old: str, new: str) -> str:
        """`Oracle.brought_by`, whose callers ask only whether some commit brought it: the
        upstream commits the record names are asked first (one that did is an answer); the
        whole range only up to ``limit`` commits (a pick each, seconds on a real fork), else
        the patch is undecided and its upstream and no-op verdicts unknown."""
        span = self.git.run("rev-list", "--first-parent", f"{old}..{new}").split()
        for commit in [c for c in span if c in self.hints]:
            if not self.not_brought(patch, commit, old, new):
                return commit
        if len(span) > self.limit:
            self.undecided.add(patch)
            return ""
        return super().brought_by(patch, old, new)

    def verdicts(self, where, entries, ref, commits, self_noop, old, new) -> None:  # type: ignore[no-untyped-def]
        kept = []
        for e in entries:
            if commits.get(e["name"]) in self.undecided and e["verdict"] in ("upstream", "no-op"):
                self.cannot(
                    e["verdict"],
                    f"{where}: {e['name']}: no commit of the record "
                    f"brought it, and {old[:10]}..{new[:10]} is over --scan-limit",
                )
            else:
                kept.append(e)
        super().verdicts(where, kept, ref, commits, self_noop, old, new)

    def not_brought(self, patch: str, full: str, old: str, new: str) -> str:
        self.git.span = (old, full)
        try:
            return super().not_brought(patch, full, old, new)
        finally:
            self.git.span = None

    def knock_on(self, where, name, root, onto, patches, waits) -> None:  # type: ignore[no-untyped-def]
        order = [n for n, _c in patches]
        if root in order and name in order and order.index(root) < order.index(name):
            chain = self.git.chain(onto, patches[: order.index(name) + 1], frozenset(waits))
            left = untaken(chain, {root, *waits})
            if left:
                self.cannot("knock-on", f"{where}: {name}: {left[0]}'s conflict is not in lines")
                return
        super().knock_on(where, name, root, onto, patches, waits)


class Judged(Day):
    """One day, each conflict it reports judged on its own too (`Day` compares the sets)."""

    def primary(self, where: str, name: str, files: set[str], applied: set[str]) -> None:
        self.o.saw("primary")
        super().primary(where, name, files, applied)

    def held_primary(
        self, where: str, name: str, root: str, applied: set[str], waits: set[str]
    ) -> None:
        self.o.saw("primary")
        super().held_primary(where, name, root, applied, waits)

    def each_conflict(self, where: str, reports: list[dict]) -> None:
        for r in reports:
            name = r["patch"]
            if r.get("held") or name in self.taken:
                continue
            self.o.saw("conflict")
            if r["kind"] == "primary" and not r["root"] and name not in self.ref.conflicts:
                self.o.fail(where, f"{name}: conflict, but git: it applies at its place")

    def check(self) -> None:
        super().check()
        step = self.o.repo.steps[self.o.repo.at]
        self.each_conflict(f"{self.label} check", json.loads(step["stdout"])["conflicts"])

    def refresh(self) -> dict:
        data = super().refresh()
        self.o.saw("tree")
        self.each_conflict(f"{self.label} refresh", data["deferred"])
        return data


def printed(record: dict) -> dict[str, int]:
    """How many labels of each kind the recorded --json outputs print."""
    out: dict[str, int] = {}

    def add(kind: str) -> None:
        out[kind] = out.get(kind, 0) + 1

    for step in record["steps"]:
        if "--json" not in step["args"] or step["exit"] not in (0, 1):
            continue
        data = json.loads(step["stdout"])
        if step["args"][0] in ("check", "refresh"):
            for p in data["patches"]:
                add(p["verdict"])
            for r in data.get("conflicts", []) + data.get("deferred", []):
                add("held" if r.get("held") else r["kind"])
                for h in r["hunks"]:
                    for c in h["upstream_commits"]:
                        add("culprit" if c["commit"] else "culprit unknown")
        elif step["args"][0] == "status":
            for p in data["patches"]:
                if p.get("mark"):
                    add("mark " + p["mark"]["kind"])
    return out


def hints(record: dict) -> set[str]:
    """Every upstream commit the record names as having brought a patch's change."""
    found = set()
    for step in record["steps"]:
        if "--json" not in step["args"] or step["exit"] not in (0, 1):
            continue
        data = json.loads(step["stdout"])
        for p in data.get("patches", []):
            found.add(((p.get("evidence") or {}).get("commit")) or "")
            found.add(((p.get("mark") or {}).get("evidence")) or "")
    return found - {""}


def judge(work: Path, record: dict, limit: int = 200) -> Counting:
    with tempfile.TemporaryDirectory(prefix="check-labels-") as scratch:
        replay = Replay(work, record, Path(scratch))
        o = Counting(replay, hints(record), limit)
        one, two = record["days"]
        try:
            day = Judged(o, one["label"], one["old"], one["new"], "refs/trial/day1")
            day.check()
            print(f"check_labels: day one's check judged: {o.judged}", file=sys.stderr, flush=True)
            day.refresh()
            print(f"check_labels: day one judged: {o.judged}", file=sys.stderr, flush=True)
            for name in record["brought_back"]:
                before = len(o.findings)
                try:
                    bring_back(o, name, one["new"], record["original"], take_patch_side)
                except Diverged as e:  # the oracle would have aborted: it cannot judge it
                    record["brought_back"][name] += f"; the oracle asked for {e}"
                if name not in o.brought and len(o.findings) == before:
                    o.judged["push"] -= 1  # it stopped short of comparing trees
                    o.cannot("push", f"push {name}: {record['brought_back'][name]}")
            print(f"check_labels: pushes judged: {o.judged}", file=sys.stderr, flush=True)
            day = Judged(o, two["label"], two["old"], two["new"], "refs/trial/day2")
            day.check()
            day.refresh()
            if any(s["args"][-2:] == ["--verbose", "--json"] for s in record["steps"]):
                day.again()  # (a record from before day_after.py recorded it has none)
        except Diverged as e:
            o.cannot("replay", f"the oracle asked for {e}, which the record does not hold")
    return o


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("work", type=Path, help="the repository day_after.py kept")
    ap.add_argument("labels", type=Path, help="its record")
    ap.add_argument("--json", type=Path, help="write the verdicts here too")
    ap.add_argument(
        "--scan-limit",
        type=int,
        default=200,
        help="ask at most N upstream commits one by one which brought a patch (default 200)",
    )
    args = ap.parse_args(argv)
    record = json.loads(args.labels.read_text())
    o = judge(args.work.resolve(), record, args.scan_limit)
    refuted: dict[str, list[str]] = {}
    for f in o.findings:
        refuted.setdefault(kind_of(f), []).append(f)
    kinds = [k for k in KINDS if k in o.judged or k in refuted or k in o.unknown]
    kinds += sorted((o.judged.keys() | refuted.keys() | o.unknown.keys()) - set(kinds))
    table = {}
    print(f"{'label':<12} {'confirmed':>9} {'refuted':>8} {'unknown':>8}")
    for k in kinds:
        bad, unknown = len(refuted.get(k, [])), len(o.unknown.get(k, []))
        row = {"confirmed": max(o.judged.get(k, 0) - bad, 0), "refuted": bad, "unknown": unknown}
        table[k] = row
        print(f"{k:<12} {row['confirmed']:>9} {row['refuted']:>8} {row['unknown']:>8}")
    shown = printed(record)
    print("printed: " + ", ".join(f"{k} {n}" for k, n in sorted(shown.items())))
    for f in o.findings:
        print(f"refuted: {f}")
    for k, whys in o.unknown.items():
        for why in whys:
            print(f"unknown ({k}): {why}")
    if o.findings:
        print(
            "reproduce: python tools/trial/day_after.py "
            f"{record['fork']} WORK {record['days'][0]['ref']} {record['days'][1]['ref']}; "
            "python tools/trial/check_labels.py WORK WORK.labels.json"
        )
    if args.json:
        verdicts = {"table": table, "printed": shown, "refuted": o.findings, "unknown": o.unknown}
        args.json.write_text(json.dumps(verdicts, indent=1) + "\n")
    return 1 if o.findings else 0


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1)  # a long run: 'kill -USR1 PID' shows where it is
    raise SystemExit(main())
