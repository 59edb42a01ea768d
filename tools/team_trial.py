#!/usr/bin/env python3
"""The team trial (issue 37): two maintainers and the refresh bot on one series, on real code.

A bare "upstream" made from a mirror (objects shared, never written to), a branch of it
imported as a series (``patchstack import branch``) kept in a repository of its own (the
``patches/`` folder, pushed to a bare ``series.git``), and the fork's code published to a bare
``fork.git``. Then, round after round:

1. Alice and Bob, each in a clone with the merge driver installed, edit, rename, retag and
   add patches (and, in one round, change the same lines of one patch: a conflict);
2. upstream moves on (its main a later first-parent commit);
3. the bot, as the Action's ``publish: ff`` does it, pulls the series, pushes it on its base in
   a scratch checkout, ``refresh --defer-conflicts`` onto upstream, and publishes the refreshed
   fork as a merge of the fork's tip (pushed to fork.git, the series to series.git);
4. Alice and Bob pull the series (``git pull``: the merge driver) and push theirs;
5. a consumer pulls fork.git's main with ``git pull --ff-only``.

Every merge of the series is checked: clean and right (``push --all`` of the merged series
gives the tree that merge-ort makes of both sides' trees over their common one), or a
conflict that git and patchstack both name. Figures and findings go to a JSON report.

    python3 tools/team_trial.py --mirror MIRROR \\
        --branch weight-sync-instrumentation --work /tmp/team-trial --rounds 3 --stride 25

Standard library only; patchstack runs as ``--patchstack`` says (default: this interpreter's
``-m patchstack``). Nothing is written to the mirror.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

IDENT = {
    "GIT_AUTHOR_EMAIL": "trial@example.org",
    "GIT_COMMITTER_EMAIL": "trial@example.org",
    "GIT_AUTHOR_DATE": "2026-12-06T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-12-06T00:00:00Z",
}


class TrialError(Exception):
    pass


@dataclass
class Report:
    figures: dict[str, Any] = field(default_factory=dict)
    merges: list[dict[str, Any]] = field(default_factory=list)
    refreshes: list[dict[str, Any]] = field(default_factory=list)
    pulls: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Trial:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.work).resolve()
        self.ps_cmd = (
            shlex.split(args.patchstack)
            if args.patchstack
            else [
                sys.executable,
                "-m",
                "patchstack",
            ]
        )
        self.report = Report()
        self.trees: dict[str, str | None] = {}  # series tree id -> pushed tree

    # -- running ---------------------------------------------------------------------------

    def run(
        self, cmd: list[str], cwd: Path, check: bool = True, who: str = "trial"
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **IDENT, "GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who}
        env.pop("GIT_DIR", None)
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
        if check and proc.returncode != 0:
            raise TrialError(f"{shlex.join(cmd)} in {cwd}: {proc.returncode}\n{proc.stderr}")
        return proc

    def git(self, cwd: Path, *args: str, check: bool = True, who: str = "trial") -> str:
        return self.run(["git", *args], cwd, check, who).stdout.strip()

    def ps(
        self, cwd: Path, *args: str, check: bool = True, who: str = "trial"
    ) -> subprocess.CompletedProcess[str]:
        return self.run([*self.ps_cmd, *args], cwd, check, who)

    # -- set-up ----------------------------------------------------------------------------

    def setup(self) -> None:
        a = self.args
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        mirror = Path(a.mirror).resolve()
        self.upstream = self.work / "upstream.git"
        self.git(self.work, "clone", "-q", "--bare", "--shared", str(mirror), str(self.upstream))
        tip = self.git(self.upstream, "rev-parse", f"refs/heads/{a.branch}")
        main = self.git(self.upstream, "rev-parse", "refs/heads/main")
        base = self.git(self.upstream, "merge-base", main, tip)
        self.report.figures.update(
            branch=a.branch,
            merge_base=base,
            branch_commits=int(self.git(self.upstream, "rev-list", "--count", f"{base}..{tip}")),
            stride=a.stride,
        )
        self.git(self.upstream, "update-ref", "refs/heads/main", base)
        # The import, in the bot's clone (the first holder of the series).
        self.series_origin = self.work / "series.git"
        self.fork_origin = self.work / "fork.git"
        bot = self.work / "bot"
        self.git(self.work, "clone", "-q", "--shared", str(self.upstream), str(bot))
        self.git(
            bot, "fetch", "-q", "origin", f"refs/heads/{a.branch}:refs/remotes/origin/{a.branch}"
        )
        started = time.monotonic()
        self.ps(bot, "init")
        self.ps(
            bot,
            "import",
            "branch",
            f"origin/{a.branch}",
            "--upstream",
            "origin/main",
            "--tag",
            "essential",
            "--take-merge",
        )
        self.report.figures["import_seconds"] = round(time.monotonic() - started, 1)
        self.ps(bot, "push", "--all")
        names = self.names(bot)
        self.report.figures["patches"] = len(names)
        base = self.base_of(bot)
        later = self.git(
            self.upstream, "rev-list", "--first-parent", "--reverse", f"{base}..{main}"
        )
        later_list = later.splitlines()
        self.steps = [later_list[a.stride * (r + 1) - 1] for r in range(a.rounds)]
        self.report.figures.update(series_base=base, upstream_steps=self.steps)
        self.git(self.upstream, "update-ref", "refs/heads/main", base)
        same = self.git(bot, "rev-parse", "HEAD^{tree}") == self.git(
            bot, "rev-parse", f"origin/{a.branch}^{{tree}}"
        )
        self.report.figures["import_gives_branch_tree"] = same
        if not same:
            self.report.problems.append("push --all of the imported series is not the branch")
        patches = bot / "patches"
        self.git(patches, "init", "-q", "-b", "main")
        self.ps(bot, "merge-driver", "--install")
        self.git(patches, "add", "-A")
        self.git(patches, "commit", "-q", "-m", "the series, imported", who="bot")
        self.git(self.work, "clone", "-q", "--bare", str(patches), str(self.series_origin))
        self.git(patches, "remote", "add", "origin", str(self.series_origin))
        self.git(patches, "fetch", "-q", "origin")
        self.git(patches, "branch", "-q", "-u", "origin/main")
        self.git(self.work, "init", "-q", "--bare", "-b", "main", str(self.fork_origin))
        shared = self.upstream / "objects"
        (self.fork_origin / "objects" / "info" / "alternates").write_text(f"{shared}\n")
        self.git(bot, "push", "-q", str(self.fork_origin), "HEAD:refs/heads/main")
        self.bot = bot
        self.people = {}
        for who in ("alice", "bob"):
            clone = self.work / who
            self.git(self.work, "clone", "-q", "--shared", str(self.fork_origin), str(clone))
            self.git(clone, "remote", "add", "upstream", str(self.upstream))
            self.git(clone, "clone", "-q", str(self.series_origin), "patches")
            self.ps(clone, "merge-driver", "--install")
            self.people[who] = clone
        self.consumer = self.work / "consumer"
        self.git(self.work, "clone", "-q", "--shared", str(self.fork_origin), str(self.consumer))
        self.oracle = self.work / "oracle"
        self.git(
            self.work,
            "clone",
            "-q",
            "--shared",
            "--no-checkout",
            str(self.upstream),
            str(self.oracle),
        )
        # The oracle reads every clone's objects (the blobs a patch's index lines name).
        alternates = self.oracle / ".git" / "objects" / "info" / "alternates"
        more = [str(c / ".git" / "objects") for c in (bot, *self.people.values())]
        alternates.write_text(alternates.read_text() + "".join(f"{m}\n" for m in more))

    def base_of(self, clone: Path) -> str:
        text = (clone / "patches" / "series").read_text()
        return next(ln.split()[2] for ln in text.splitlines() if ln.startswith("# base:"))

    def deferred(self, series_text: str) -> set[str]:
        return {
            ln.split()[2]
            for ln in series_text.splitlines()
            if ln.startswith("# deferred:") and len(ln.split()) > 2
        }

    def names(self, clone: Path) -> list[str]:
        text = (clone / "patches" / "series").read_text()
        return [ln.split()[0] for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]

    def files_of_rev(self, series_repo: Path, name: str) -> list[str]:
        text = self.git(series_repo, "show", f"HEAD:{name}", check=False)
        return [ln[6:] for ln in text.splitlines() if ln.startswith("+++ b/")]

    def files_of(self, clone: Path, name: str) -> list[str]:
        text = (clone / "patches" / name).read_text(errors="replace")
        return [ln[6:] for ln in text.splitlines() if ln.startswith("+++ b/")]

    # -- the oracle ------------------------------------------------------------------------

    def pushed_tree(self, series_repo: Path, rev: str) -> str | None:
        """``push --all`` of the series at ``rev`` of ``series_repo`` on its base: the tree."""
        key = self.git(series_repo, "rev-parse", f"{rev}^{{tree}}")
        if key in self.trees:
            return self.trees[key]
        snap = Path(tempfile.mkdtemp(prefix="series-", dir=self.work))
        archive = subprocess.run(
            ["git", "-C", str(series_repo), "archive", rev], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(snap)], input=archive, check=True)
        base = next(
            ln.split()[2]
            for ln in (snap / "series").read_text().splitlines()
            if ln.startswith("# base:")
        )
        self.git(self.oracle, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
        self.git(self.oracle, "checkout", "-q", "-f", "--detach", base)
        pushed = self.ps(self.oracle, "--dir", str(snap), "push", "--all", check=False)
        tree = self.git(self.oracle, "rev-parse", "HEAD^{tree}") if pushed.returncode == 0 else None
        if tree is None:
            self.ps(self.oracle, "--dir", str(snap), "push", "--abort", check=False)
        shutil.rmtree(snap, ignore_errors=True)
        self.trees[key] = tree
        return tree

    def combined(self, o: str, a: str, b: str) -> str | None:
        """merge-ort of the two sides' trees over the common one (None: it conflicts)."""
        env_git = self.oracle

        def commit(tree: str, *parents: str) -> str:
            ps = [x for p in parents for x in ("-p", p)]
            return self.git(env_git, "commit-tree", tree, *ps, "-m", "side")

        co = commit(o)
        ca, cb = commit(a, co), commit(b, co)
        proc = self.run(["git", "merge-tree", "--write-tree", ca, cb], env_git, check=False)
        return proc.stdout.split()[0] if proc.returncode == 0 else None

    # -- what people do --------------------------------------------------------------------

    def pull_series(self, who: str, clone: Path, label: str) -> dict[str, Any]:
        """Commit ``clone``'s series, merge origin's (``git pull``), check the merge."""
        patches = clone / "patches"
        self.git(patches, "add", "-A")
        self.git(patches, "commit", "-q", "--allow-empty", "-m", f"{who}: {label}", who=who)
        ours = self.git(patches, "rev-parse", "HEAD")
        self.git(patches, "fetch", "-q", "origin")
        theirs = self.git(patches, "rev-parse", "origin/main")
        entry: dict[str, Any] = {"who": who, "what": label}
        if (
            self.run(
                ["git", "merge-base", "--is-ancestor", theirs, ours], patches, False
            ).returncode
            == 0
        ):
            entry["result"] = "nothing to merge"
            self.report.merges.append(entry)
            self.git(patches, "push", "-q", "origin", "HEAD:main")
            self.restack(clone, who)
            return entry
        started = time.monotonic()
        pulled = self.run(
            ["git", "pull", "--no-rebase", "--no-edit", "-q", "origin", "main"],
            patches,
            check=False,
            who=who,
        )
        entry["seconds"] = round(time.monotonic() - started, 1)
        said = pulled.stdout + pulled.stderr
        if pulled.returncode != 0:
            status = self.ps(clone, "status", check=False)
            named_git = "CONFLICT" in said
            named_ps = status.returncode == 2 and "unresolved merge conflict" in status.stderr
            entry.update(
                result="conflict",
                git_names_it=named_git,
                patchstack_names_it=named_ps,
                driver=[ln for ln in said.splitlines() if "patchstack merge-driver" in ln],
            )
            if not (named_git and named_ps):
                self.report.problems.append(f"{who} {label}: a conflict not named by both tools")
            # Settle it: theirs for each conflicted file (what the team would agree on).
            conflicted = self.git(patches, "diff", "--name-only", "--diff-filter=U").split()
            for path in conflicted:
                self.git(patches, "checkout", "--theirs", "--", path)
            self.git(patches, "add", "-A")
            self.git(patches, "commit", "-q", "--no-edit", who=who)
            entry["settled_with_theirs"] = conflicted
        else:
            entry["result"] = "clean"
            merged = self.git(patches, "rev-parse", "HEAD")
            base = self.git(patches, "merge-base", ours, theirs)
            trees = [self.pushed_tree(patches, r) for r in (base, ours, theirs, merged)]
            entry["trees"] = trees
            if None in trees[:3]:
                entry["check"] = "a side's series does not push on its base: not judged"
            elif trees[3] is None:
                entry["check"] = "wrong: the merged series does not push --all"
                self.report.problems.append(f"{who} {label}: merged series does not push")
            else:
                want = self.combined(*trees[:3])  # type: ignore[arg-type]
                if want is None:
                    entry["check"] = "the sides' trees conflict under merge-ort: not judged"
                elif want == trees[3]:
                    entry["check"] = "right"
                else:
                    diff = self.git(self.oracle, "diff", "--name-only", want, trees[3]).split()
                    text = self.git(patches, "show", "HEAD:series")
                    kept = set()
                    for name in self.deferred(text):
                        kept.update(self.files_of_rev(patches, name))
                    if set(diff) <= kept:
                        # A side edited a patch the other deferred: the edit is kept in the
                        # deferred patch's file, out of the tree until it is brought back.
                        entry["check"] = "right (an edit of a deferred patch stays in its file)"
                    else:
                        entry["check"] = "wrong: push --all differs from both sides combined"
                        entry["diff"] = diff[:5]
                        self.report.problems.append(f"{who} {label}: merge tree differs")
        self.report.merges.append(entry)
        self.git(patches, "push", "-q", "origin", "HEAD:main")
        self.restack(clone, who)
        return entry

    def restack(self, clone: Path, who: str) -> None:
        """The maintainer's code follows the merged series: the stack rebuilt on its base."""
        self.ps(clone, "pop", "--all", check=False, who=who)
        self.git(clone, "fetch", "-q", "upstream")
        base = next(
            ln.split()[2]
            for ln in (clone / "patches" / "series").read_text().splitlines()
            if ln.startswith("# base:")
        )
        self.git(clone, "checkout", "-q", "-f", "--detach", base)
        pushed = self.ps(clone, "push", "--all", check=False, who=who)
        if pushed.returncode != 0:
            self.report.problems.append(f"{who}: push --all of the merged series failed")
            self.ps(clone, "push", "--abort", check=False, who=who)

    def edit_diff(self, clone: Path, who: str, name: str, path: str, text: str) -> None:
        target = clone / path
        target.write_text(target.read_text() + text)
        self.ps(clone, "refresh", "--patch", name, who=who)

    def new_patch(self, clone: Path, who: str, name: str) -> None:
        path = f"python/sglang/team_trial_{name}.py"
        (clone / path).write_text(f'"""Added by {who} in the team trial."""\n')
        self.ps(
            clone, "new", name, "--tag", "diagnostic", "-m", f"{name}\n\nBy {who}.", path, who=who
        )

    def only_file(self, clone: Path, exclude: set[str]) -> list[tuple[str, str]]:
        """(patch, a Python file only it touches, and that exists after the stack)."""
        owners: dict[str, list[str]] = {}
        deferred = self.deferred((clone / "patches" / "series").read_text())
        names = [n for n in self.names(clone) if n not in deferred]
        for name in names:
            for f in self.files_of(clone, name):
                owners.setdefault(f, []).append(name)
        out = []
        for name in names:
            for f in self.files_of(clone, name):
                if (
                    owners[f][-1] == name
                    and f.endswith(".py")
                    and name not in exclude
                    and (clone / f).exists()
                ):
                    out.append((name, f))
                    break
        return out

    def to_be_moved(self, clone: Path, r: int) -> tuple[str, str] | None:
        """A patch (with a file of its own) that the refresh onto the next step offsets."""
        checked = self.ps(clone, "check", "--onto", self.steps[r], "--json", check=False)
        try:
            verdicts = {p["name"]: p["verdict"] for p in json.loads(checked.stdout)["patches"]}
        except (json.JSONDecodeError, KeyError):
            return None
        for name, path in self.only_file(clone, set()):
            if verdicts.get(name) in ("offset", "merged"):
                return name, path
        return None

    # -- the bot ---------------------------------------------------------------------------

    def bot_refresh(self, r: int) -> None:
        target = self.steps[r]
        self.git(self.upstream, "update-ref", "refs/heads/main", target)
        bot, patches = self.bot, self.bot / "patches"
        self.git(patches, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", who="bot")
        self.git(bot, "fetch", "-q", "origin")
        self.git(
            bot, "fetch", "-q", str(self.fork_origin), "+refs/heads/main:refs/remotes/fork/main"
        )
        tip = self.git(bot, "rev-parse", "fork/main")
        base = next(
            ln.split()[2]
            for ln in (patches / "series").read_text().splitlines()
            if ln.startswith("# base:")
        )
        # As the Action's publish: ff: the series pushed on its base, its tree the fork tip's.
        self.ps(bot, "pop", "--all", check=False, who="bot")
        self.git(bot, "checkout", "-q", "-f", "--detach", base)
        self.ps(bot, "push", "--all", who="bot")
        entry: dict[str, Any] = {"round": r + 1, "onto": target}
        # (the maintainers' series changes since the last publish are what differs)
        entry["series_changed_since_publish"] = self.git(
            bot, "rev-parse", "HEAD^{tree}"
        ) != self.git(bot, "rev-parse", f"{tip}^{{tree}}")
        behind = self.git(bot, "rev-list", "--count", f"{base}..{target}")
        started = time.monotonic()
        refreshed = self.ps(
            bot,
            "refresh",
            "--onto",
            "origin/main",
            "--defer-conflicts",
            "--json",
            check=False,
            who="bot",
        )
        entry.update(seconds=round(time.monotonic() - started, 1), upstream_commits=int(behind))
        try:
            data = json.loads(refreshed.stdout)
        except json.JSONDecodeError:
            raise TrialError(f"refresh failed: {refreshed.stderr}") from None
        verdicts: dict[str, int] = {}
        for p in data.get("patches", []):
            verdicts[p["verdict"]] = verdicts.get(p["verdict"], 0) + 1
        entry["verdicts"] = verdicts
        entry["verdict_of"] = {p["name"]: p["verdict"] for p in data.get("patches", [])}
        entry["deferred"] = [c["patch"] for c in data.get("deferred", [])]
        top = self.git(bot, "rev-parse", "HEAD")
        published = self.git(
            bot,
            "commit-tree",
            f"{top}^{{tree}}",
            "-p",
            top,
            "-p",
            tip,
            "-m",
            f"Publish the fork refreshed onto {target[:12]}",
        )
        self.git(patches, "add", "-A")
        self.git(patches, "commit", "-q", "-m", f"bot: refresh onto {target[:12]}", who="bot")
        # The placement contract on real code: the refreshed stack is what push --all of the
        # refreshed series gives on the new base.
        pushed_tree = self.pushed_tree(patches, "HEAD")
        entry["refresh_is_push_all"] = pushed_tree == self.git(bot, "rev-parse", "HEAD^{tree}")
        if not entry["refresh_is_push_all"]:
            self.report.problems.append(f"round {r + 1}: refresh differs from push --all")
        pushed = self.run(["git", "push", "-q", "origin", "HEAD:main"], patches, check=False)
        entry["series_push"] = "ok" if pushed.returncode == 0 else "lost the race"
        self.git(bot, "push", "-q", str(self.fork_origin), f"{published}:refs/heads/main")
        entry["published"] = published
        self.report.refreshes.append(entry)

    def consumer_pull(self, r: int) -> None:
        pulled = self.run(["git", "pull", "--ff-only", "-q"], self.consumer, check=False)
        tree = self.git(self.consumer, "rev-parse", "HEAD^{tree}")
        want = self.git(self.fork_origin, "rev-parse", "refs/heads/main^{tree}")
        entry = {
            "round": r + 1,
            "ff_only": pulled.returncode == 0,
            "tree_is_the_fork": tree == want,
        }
        if not (entry["ff_only"] and entry["tree_is_the_fork"]):
            self.report.problems.append(f"round {r + 1}: the consumer's pull --ff-only failed")
        self.report.pulls.append(entry)

    # -- the story -------------------------------------------------------------------------

    def round(self, r: int) -> None:
        alice, bob = self.people["alice"], self.people["bob"]
        names = self.names(alice)
        picks = self.only_file(alice, set())
        if len(picks) < 4:
            raise TrialError("the series has too few patches with a file of their own")
        at = r * 4 % len(picks)
        rotated = picks[at:] + picks[:at]
        (p1, f1), (p2, f2), (p3, _f3), (p4, f4) = rotated[:4]
        # Alice: a description, a retag, a rename, a new patch.
        self.ps(alice, "edit", p1, "-m", f"{p1} (round {r + 1})\n\nAlice says why.", who="alice")
        self.ps(alice, "tag", names[-1], "diagnostic", who="alice")
        renamed = f"{p3.removesuffix('.patch')}-r{r + 1}"
        self.ps(alice, "rename", p3, renamed, who="alice")
        self.new_patch(alice, "alice", f"alice-r{r + 1}")
        # Bob: the diff of Alice's described patch, a retag of the one she renames, a new patch,
        # and (last round) the same lines of one patch as Alice: a conflict.
        self.edit_diff(bob, "bob", p1, f1, f"# bob, round {r + 1}\n")
        self.ps(bob, "tag", p3, "optimization", who="bob")
        self.new_patch(bob, "bob", f"bob-r{r + 1}")
        if r == self.args.rounds - 1:
            self.edit_diff(alice, "alice", p4, f4, "# alice was here\n")
            self.edit_diff(bob, "bob", p4, f4, "# bob was here\n")
        self.pull_series("alice", alice, f"round {r + 1} edits")
        self.pull_series("bob", bob, f"round {r + 1} edits")
        # Upstream moves; the bot refreshes (Bob edits p2 on the old base meanwhile: one the
        # refresh will move, when 'check' finds one, so the driver re-makes it on the new base).
        p2, f2 = self.to_be_moved(bob, r) or (p2, f2)
        self.edit_diff(bob, "bob", p2, f2, f"# bob on the old base, round {r + 1}\n")
        self.bot_refresh(r)
        verdicts = {p: v for p, v in self.report.refreshes[-1]["verdict_of"].items()}
        self.report.refreshes[-1]["bob_edited_on_the_old_base"] = [p2, verdicts.get(p2)]
        self.pull_series("bob", bob, f"round {r + 1}: p2 edited on the old base")
        self.pull_series("alice", alice, f"round {r + 1}: after the bot")
        self.consumer_pull(r)

    def main(self) -> Report:
        started = time.monotonic()
        self.setup()
        for r in range(self.args.rounds):
            self.round(r)
        self.report.figures["seconds"] = round(time.monotonic() - started, 1)
        kinds: dict[str, int] = {}
        for m in self.report.merges:
            key = m["result"] if m["result"] != "clean" else f"clean, {m.get('check')}"
            kinds[key] = kinds.get(key, 0) + 1
        self.report.figures["merges"] = kinds
        return self.report


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirror", required=True)
    p.add_argument("--branch", default="weight-sync-instrumentation")
    p.add_argument("--work", default="/tmp/team-trial")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--stride", type=int, default=25, help="upstream commits a refresh")
    p.add_argument("--patchstack", default="", help="the command that runs patchstack")
    p.add_argument("--out", default="", help="the JSON report (default: WORK/report.json)")
    args = p.parse_args(argv)
    trial = Trial(args)
    try:
        report = trial.main()
    except TrialError as exc:
        trial.report.problems.append(f"stopped: {exc}")
        report = trial.report
    data = {
        "figures": report.figures,
        "refreshes": report.refreshes,
        "merges": report.merges,
        "pulls": report.pulls,
        "problems": report.problems,
    }
    out = Path(args.out or Path(args.work) / "report.json")
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps({k: data[k] for k in ("figures", "problems")}, indent=2))
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
