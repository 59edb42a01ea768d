#!/usr/bin/env python3
"""Onboard real branches with ``import branch`` and check the result (issue 25, item 1).

    python tools/bench/branches.py REPO BRANCH... --upstream main [--onto main]
    python tools/bench/branches.py ~/src/sglang dflash jamesliu/kimi-bench --upstream main \
        --onto main --markdown out.md

REPO is any git repository (bare or not); each BRANCH (and --upstream, --onto) is one of its
branches, or any revision of it. For each branch, in fresh ``git clone --shared``s with the
branch checked out, as a new user has it:

1. ``patchstack import branch BRANCH --upstream UPSTREAM --tag essential``, run as a person
   runs it: at each stop (a conflict the merge's own tree cannot settle) the merge's version
   of the files is taken with the command the report names (``git checkout MERGE -- FILES``), then
   ``import branch --continue``; the stops are counted and the import's seconds summed.
2. ``patchstack push --all``; the tree must be the branch's (``BRANCH^{tree}``) and the series
   base the branch's merge base with UPSTREAM.
3. With ``--onto``: ``patchstack refresh --onto ONTO --defer-conflicts``, timed; and
   ``git rebase --onto ONTO BASE`` of the applied stack, ``git rebase --skip`` at every
   conflict, timed: the patches each leaves out and whether the trees are equal.
   (``tools/bench/real_drift.py`` compares a linear range in more depth.)
4. In a clone of its own, the import with ``--take-merge`` (no stop), timed, then 2.

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
WHOLE_RE = re.compile(r"^(\d+) patch(?:es)? took the merge.s version", re.M)
STOP_RE = re.compile(r"import stopped at merge (\w+) \(commit (\d+) of (\d+)\)")
TAKE_RE = re.compile(r"as it is \(.*?\): '(.*?)'\. 'import branch --continue --take-merge'")


@dataclass
class Result:
    branch: str
    upstream: str
    first_parent: int = 0  # first-parent commits since the upstream's history
    merges: int = 0  # merges among them
    upstream_merges: int = 0  # of the upstream's history
    # The import as a person runs it: at each stop, the merge's version of the conflicted
    # files ('git checkout MERGE -- FILES', as the report says), then --continue.
    stops: int = 0
    hand_secs: float = 0.0  # the import and its --continue runs
    patches: int = 0
    from_commits: int = 0
    side: int = 0
    fixups: int = 0
    push_secs: float = 0.0
    tree_equal: bool = False
    base_is_merge_base: bool = False
    # The import with --take-merge, from the same state in a clone of its own.
    take_merge_secs: float = 0.0
    took: int = 0  # patches that took the merge's version
    take_merge_patches: int = 0
    take_merge_tree_equal: bool = False
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
        os.makedirs(workdir, exist_ok=True)
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


def _counts(box: Box, rev: str, up: str, res: Result) -> None:
    res.first_parent = int(box.git("rev-list", "--count", "--first-parent", f"{up}..{rev}"))
    merges = box.git("rev-list", "--first-parent", "--merges", "--parents", f"{up}..{rev}")
    for line in merges.splitlines():
        res.merges += 1
        ancestor = box.run("git", "merge-base", "--is-ancestor", line.split()[2], up, check=False)
        res.upstream_merges += ancestor[0].returncode == 0


def _imported(box: Box, rev: str, up: str, out: str) -> tuple[tuple[int, ...], bool, float]:
    """(patches, from commits, side, fixups), whether the base is REV's merge base with UP,
    and the seconds of ``push --all``; then whether its tree is REV's."""
    m = SUMMARY_RE.search(out)
    counts = tuple(map(int, m.groups())) if m else (0, 0, 0, 0)
    base = json.loads(box.patchstack("series", "--json")[0].stdout)["base"]
    # HEAD is the branch: push --all puts the patch commits in place of its commits.
    _p, secs = box.patchstack("push", "--all")
    return counts, base == box.git("merge-base", rev, up), secs


def _same_tree(box: Box, rev: str) -> bool:
    return box.git("rev-parse", "HEAD^{tree}") == box.git("rev-parse", f"{rev}^{{tree}}")


def onboard(
    repo: str, branch: str, upstream: str, onto: str | None, workdir: str, ps: list[str], most: int
) -> Result:
    res = Result(branch, upstream, onto=onto or "")
    box = Box(os.path.join(workdir, "by-hand"), repo, ps)
    rev, up = box.ref(branch), box.ref(upstream)
    _counts(box, rev, up, res)
    box.git("checkout", "-q", "-B", "work", rev)
    args = ["import", "branch", rev, "--upstream", up, "--tag", "essential"]
    p, res.hand_secs = box.patchstack(*args, check=False)
    while p.returncode == 1 and STOP_RE.search(p.stdout) and res.stops < most:
        res.stops += 1
        found = TAKE_RE.search(" ".join(p.stderr.split()))
        if found is None:
            res.error = "a stop without the merge's version to take: " + p.stderr[-400:]
            return res
        box.run("sh", "-c", found.group(1))  # the command the report names
        p, secs = box.patchstack("import", "branch", "--continue", check=False)
        res.hand_secs += secs
    refreshed = False
    if p.returncode != 0:
        what = f"gave up after {res.stops} stops" if res.stops >= most else "failed"
        res.error = f"by hand: {what}: " + " ".join((p.stdout + p.stderr).split())[-300:]
    else:
        counts, res.base_is_merge_base, res.push_secs = _imported(box, rev, up, p.stdout)
        res.patches, res.from_commits, res.side, res.fixups = counts
        res.tree_equal = _same_tree(box, rev)
        if onto:
            _refresh_and_rebase(box, box.ref(onto), res)
            refreshed = True
    res.commands = box.log
    box = Box(os.path.join(workdir, "take-merge"), repo, ps)
    box.git("checkout", "-q", "-B", "work", rev)
    p, res.take_merge_secs = box.patchstack(*args, "--take-merge", check=False)
    if p.returncode != 0:
        res.error += " --take-merge failed: " + " ".join((p.stdout + p.stderr).split())[-300:]
        return res
    w = WHOLE_RE.search(p.stdout)
    res.took = int(w.group(1)) if w else 0
    counts, base_ok, _secs = _imported(box, rev, up, p.stdout)
    res.take_merge_patches = counts[0]
    res.take_merge_tree_equal = _same_tree(box, rev)
    res.commands += box.log[-3:-2]
    if onto and not refreshed:  # the series the by-hand import did not finish: this one's
        res.base_is_merge_base = base_ok
        _refresh_and_rebase(box, box.ref(onto), res)
    return res


def _refresh_and_rebase(box: Box, target: str, res: Result) -> None:
    """refresh --onto TARGET --defer-conflicts of the applied stack, and git rebase of it
    with --skip at every conflict: what each leaves out, and their trees."""
    stack = box.git("rev-parse", "HEAD")
    base = json.loads(box.patchstack("series", "--json")[0].stdout)["base"]
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


def markdown(results: list[Result]) -> str:
    head = (
        "| branch | first-parent commits | merges (of upstream) | stops by hand | import s |"
        " patches (commits, side, fixups) | tree = branch's | base = merge base |"
        " `--take-merge` s | patches that took the merge's version | tree = branch's |\n"
        + "|---" * 11
        + "|\n"
    )
    rows = []
    yes = {True: "yes", False: "**no**"}
    for r in results:
        if r.error.startswith("by hand: gave up"):
            rows.append(
                f"| `{r.branch}` | {r.first_parent} | {r.merges} ({r.upstream_merges}) |"
                f" more than {r.stops} | over {r.hand_secs:.0f} (gave up) | | | |"
                f" {r.take_merge_secs:.1f} | {r.took} of {r.take_merge_patches} |"
                f" {yes[r.take_merge_tree_equal]} |"
            )
            continue
        if r.error:
            rows.append(
                f"| `{r.branch}` | {r.first_parent} | {r.merges} ({r.upstream_merges}) |"
                f" error: {r.error[-200:]} |" + " |" * 7
            )
            continue
        rows.append(
            f"| `{r.branch}` | {r.first_parent} | {r.merges} ({r.upstream_merges}) | {r.stops} |"
            f" {r.hand_secs:.1f} | {r.patches} ({r.from_commits}, {r.side}, {r.fixups}) |"
            f" {yes[r.tree_equal]} | {yes[r.base_is_merge_base]} | {r.take_merge_secs:.1f} |"
            f" {r.took} of {r.take_merge_patches} | {yes[r.take_merge_tree_equal]} |"
        )
    out = head + "\n".join(rows) + "\n"
    refreshed = [r for r in results if r.onto and r.refresh_secs]
    if refreshed:
        out += (
            "\n| branch | onto | refresh --defer-conflicts s | deferred | upstream holds |"
            " git rebase + --skip s | skipped | same tree |\n" + "|---" * 8 + "|\n"
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
    ap.add_argument(
        "--max-stops", type=int, default=100, help="give up the import by hand after N stops"
    )
    opts = ap.parse_args()
    root = opts.workdir or tempfile.mkdtemp(prefix="ps-branches-")
    results = []
    try:
        for i, branch in enumerate(opts.branches):
            work = os.path.join(root, f"{i:02d}")
            os.makedirs(work, exist_ok=True)
            t0 = time.perf_counter()
            ps = shlex.split(opts.patchstack)
            res = onboard(opts.repo, branch, opts.upstream, opts.onto, work, ps, opts.max_stops)
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
    good = all((r.tree_equal or r.error) and r.take_merge_tree_equal for r in results)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
