#!/usr/bin/env python3
"""Onboard real branches with ``import branch`` and check the result (issue 25, item 1).

    python tools/bench/branches.py REPO BRANCH... --upstream main [--onto main]
    python tools/bench/branches.py ~/src/sglang dflash jamesliu/kimi-bench --upstream main \
        --onto main --markdown out.md

REPO is any git repository (bare or not); each BRANCH (and --upstream, --onto) is one of its
branches, or any revision of it. For each branch, in a fresh ``git clone --shared`` with the
branch checked out, as a new user has it:

1. ``patchstack import branch BRANCH --upstream UPSTREAM --tag essential``, timed. When it
   stops at a conflict the merge's tree cannot settle, the stop is recorded, the import
   aborted (``--abort``) and run again with ``--take-merge`` (timed too).
2. ``patchstack push --all``; the tree must be the branch's (``BRANCH^{tree}``) and the series
   base the branch's merge base with UPSTREAM.
3. With ``--onto``: ``patchstack refresh --onto ONTO --defer-conflicts``, timed; and
   ``git rebase --onto ONTO BASE`` of the applied stack, ``git rebase --skip`` at every
   conflict, timed: the patches each leaves out and whether the trees are equal.

Python 3.10+, stdlib only; patchstack is run from this checkout (``--patchstack`` to change
it). It is not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY_RE = re.compile(
    r"as (\d+) patch(?:es)?: (\d+) from commits, (\d+) side-branch merges?, (\d+) fixups?"
)
WHOLE_RE = re.compile(r"^(\d+) patch(?:es)? took the merge's version", re.M)
STOP_RE = re.compile(r"import stopped at merge (\w+) \(commit (\d+) of (\d+)\)")


@dataclass
class Result:
    branch: str
    upstream: str
    first_parent: int = 0  # first-parent commits since the upstream's history
    merges: int = 0  # merges among them
    upstream_merges: int = 0  # of the upstream's history
    stop: str = ""  # where the first import stopped (without --take-merge), if it did
    import_secs: float = 0.0  # the import that finished
    take_merge: bool = False  # it needed --take-merge
    took_whole: int = 0
    patches: int = 0
    from_commits: int = 0
    side: int = 0
    fixups: int = 0
    push_secs: float = 0.0
    tree_equal: bool = False
    base_is_merge_base: bool = False
    onto: str = ""
    refresh_secs: float = 0.0
    deferred: int = 0
    upstream_held: int = 0
    rebase_secs: float = 0.0
    rebase_skipped: int = 0
    refresh_tree_equals_rebase: bool | None = None
    error: str = ""
    commands: list[str] = field(default_factory=list)


class Box:
    """A scratch clone of REPO and the commands run in it, with an isolated git config."""

    def __init__(self, workdir: str, repo: str, patchstack: list[str]) -> None:
        self.dir = os.path.join(workdir, "clone")
        cfg = os.path.join(workdir, "gitconfig")
        with open(cfg, "w") as f:
            f.write(
                "[user]\n\tname = Onboarding Bot\n\temail = bot@example.invalid\n"
                "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n"
                "[advice]\n\tdetachedHead = false\n[rerere]\n\tenabled = false\n"
            )
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PATCHSTACK_"))
        }
        self.env.update(
            {
                "GIT_CONFIG_GLOBAL": cfg,
                "GIT_CONFIG_NOSYSTEM": "1",
                "LC_ALL": "C",
                "GIT_EDITOR": "true",
                "PAGER": "cat",
                "PYTHONPATH": os.pathsep.join(
                    p for p in (PROJECT, os.environ.get("PYTHONPATH")) if p
                ),
            }
        )
        self.ps = patchstack
        self.log: list[str] = []
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", repo, self.dir],
            env=self.env,
            check=True,
        )

    def run(self, *args: str, check: bool = True) -> tuple[subprocess.CompletedProcess[str], float]:
        cmd = list(args)
        t0 = time.perf_counter()
        p = subprocess.run(cmd, cwd=self.dir, env=self.env, capture_output=True, text=True)
        secs = time.perf_counter() - t0
        if check and p.returncode != 0:
            raise RuntimeError(
                f"{shlex.join(cmd)} failed ({p.returncode}): {p.stderr.strip()[-800:]}"
            )
        return p, secs

    def git(self, *args: str, check: bool = True) -> str:
        return self.run("git", *args, check=check)[0].stdout.strip()

    def patchstack(
        self, *args: str, check: bool = True
    ) -> tuple[subprocess.CompletedProcess[str], float]:
        self.log.append(shlex.join(["patchstack", *args]))
        return self.run(*self.ps, *args, check=check)

    def ref(self, name: str) -> str:
        """REPO's branch ``name`` as the clone has it (``origin/name``), else ``name``."""
        remote = f"refs/remotes/origin/{name}"
        found = self.run("git", "rev-parse", "-q", "--verify", remote, check=False)[0]
        return f"origin/{name}" if found.returncode == 0 else name

    def in_progress(self) -> bool:
        gitdir = self.git("rev-parse", "--git-dir")
        path = os.path.join(self.dir, gitdir)
        return any(os.path.exists(os.path.join(path, d)) for d in ("rebase-merge", "rebase-apply"))


def onboard(
    repo: str, branch: str, upstream: str, onto: str | None, workdir: str, ps: list[str]
) -> Result:
    box = Box(workdir, repo, ps)
    rev, up = box.ref(branch), box.ref(upstream)
    res = Result(branch, upstream, onto=onto or "")
    res.first_parent = int(box.git("rev-list", "--count", "--first-parent", f"{up}..{rev}"))
    merges = box.git("rev-list", "--first-parent", "--merges", "--parents", f"{up}..{rev}")
    for line in merges.splitlines():
        res.merges += 1
        second = line.split()[2]
        if (
            box.run("git", "merge-base", "--is-ancestor", second, up, check=False)[0].returncode
            == 0
        ):
            res.upstream_merges += 1
    box.git("checkout", "-q", "-B", "work", rev)
    args = ["import", "branch", rev, "--upstream", up, "--tag", "essential"]
    p, secs = box.patchstack(*args, check=False)
    if p.returncode == 1 and (m := STOP_RE.search(p.stdout)):
        res.stop = f"merge {m.group(1)} (commit {m.group(2)} of {m.group(3)})"
        box.patchstack("import", "branch", "--abort")
        p, secs = box.patchstack(*args, "--take-merge", check=False)
        res.take_merge = True
    if p.returncode != 0:
        res.error = (p.stdout + p.stderr).strip()[-800:]
        return res
    res.import_secs = secs
    m = SUMMARY_RE.search(p.stdout)
    if m:
        res.patches, res.from_commits, res.side, res.fixups = map(int, m.groups())
    w = WHOLE_RE.search(p.stdout)
    res.took_whole = int(w.group(1)) if w else 0
    series = json.loads(box.patchstack("series", "--json")[0].stdout)
    base = series["base"]
    res.base_is_merge_base = base == box.git("merge-base", rev, up)
    # HEAD is the branch: push --all puts the patch commits in place of its commits
    _p, res.push_secs = box.patchstack("push", "--all")
    res.tree_equal = box.git("rev-parse", "HEAD^{tree}") == box.git("rev-parse", f"{rev}^{{tree}}")
    if onto:
        stack = box.git("rev-parse", "HEAD")
        target = box.ref(onto)
        _p, res.refresh_secs = box.patchstack("refresh", "--onto", target, "--defer-conflicts")
        with open(os.path.join(box.dir, "patches", "series"), encoding="utf-8") as f:
            text = f.read()
        res.deferred = len(re.findall(r"^# deferred: ", text, re.M))
        res.upstream_held = len(re.findall(r"^# upstream: ", text, re.M))
        refreshed = box.git("rev-parse", "HEAD^{tree}")
        box.git("checkout", "-q", "--detach", stack)
        t0 = time.perf_counter()
        r = box.run("git", "rebase", "-q", "--onto", target, base, check=False)[0]
        while r.returncode != 0 and box.in_progress():
            res.rebase_skipped += 1
            r = box.run("git", "rebase", "--skip", check=False)[0]
        res.rebase_secs = time.perf_counter() - t0
        if r.returncode == 0:
            res.refresh_tree_equals_rebase = box.git("rev-parse", "HEAD^{tree}") == refreshed
    res.commands = box.log
    return res


def markdown(results: list[Result]) -> str:
    head = (
        "| branch | first-parent commits | merges (of upstream) | import s | patches (commits,"
        " side, fixups) | push --all | tree = branch's | base = merge base |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    rows = []
    for r in results:
        if r.error:
            rows.append(
                f"| `{r.branch}` | {r.first_parent} | {r.merges} ({r.upstream_merges}) |"
                f" error: {r.error.splitlines()[-1]} | | | | |"
            )
            continue
        how = f"{r.import_secs:.1f}"
        if r.take_merge:
            how += f" (`--take-merge`: {r.took_whole} patches; without it stops at {r.stop})"
        rows.append(
            f"| `{r.branch}` | {r.first_parent} | {r.merges} ({r.upstream_merges}) | {how} |"
            f" {r.patches} ({r.from_commits}, {r.side}, {r.fixups}) | {r.push_secs:.1f} s |"
            f" {'yes' if r.tree_equal else '**no**'} | {'yes' if r.base_is_merge_base else 'no'} |"
        )
    out = head + "\n".join(rows) + "\n"
    refreshed = [r for r in results if r.onto and not r.error]
    if refreshed:
        out += (
            "\n| branch | onto | refresh --defer-conflicts s | deferred | upstream holds |"
            " git rebase + --skip s | skipped | same tree |\n|---|---|---|---|---|---|---|---|\n"
        )
        for r in refreshed:
            same = {True: "yes", False: "**no**", None: "n/a"}[r.refresh_tree_equals_rebase]
            out += (
                f"| `{r.branch}` | `{r.onto}` | {r.refresh_secs:.1f} | {r.deferred} |"
                f" {r.upstream_held} | {r.rebase_secs:.1f} | {r.rebase_skipped} | {same} |\n"
            )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", help="a git repository holding the branches")
    ap.add_argument("branches", nargs="+", metavar="BRANCH")
    ap.add_argument("--upstream", required=True, help="the upstream branch they merge")
    ap.add_argument("--onto", help="then refresh onto this revision, and rebase for comparison")
    ap.add_argument(
        "--patchstack",
        default=shlex.join([sys.executable, "-m", "patchstack"]),
        help="how to run patchstack (default: this checkout's, with this interpreter)",
    )
    ap.add_argument("--markdown", help="also write the tables to this file")
    ap.add_argument("--json", help="also write the raw results to this file")
    ap.add_argument("--workdir", help="scratch space (default: a temporary folder, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch clones")
    opts = ap.parse_args()
    root = opts.workdir or tempfile.mkdtemp(prefix="ps-branches-")
    results = []
    try:
        for i, branch in enumerate(opts.branches):
            work = os.path.join(root, f"{i:02d}")
            os.makedirs(work, exist_ok=True)
            t0 = time.perf_counter()
            res = onboard(
                opts.repo, branch, opts.upstream, opts.onto, work, shlex.split(opts.patchstack)
            )
            print(
                f"{branch}: {json.dumps(asdict(res))} ({time.perf_counter() - t0:.0f} s in all)",
                file=sys.stderr,
            )
            results.append(res)
            if not opts.keep:
                shutil.rmtree(work, ignore_errors=True)
    finally:
        if not opts.keep and not opts.workdir:
            shutil.rmtree(root, ignore_errors=True)
    text = markdown(results)
    print(text)
    if opts.markdown:
        with open(opts.markdown, "w", encoding="utf-8") as f:
            f.write(text)
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) for r in results], f, indent=1)
    return 0 if all(r.tree_equal for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
