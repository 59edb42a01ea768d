"""The refresh bot publishes fast-forward (issue 37, ``publish: ff``, the default): a fork
whose main is the upstream base with the series applied and the series folder committed; two
bot runs against the fake GitHub (which merges the pull request as GitHub does), each onto a
later upstream, the second on top of the first's merge; a consumer's clone follows main with
``git pull --ff-only`` every time and gets the refreshed fork, the tree that the refreshed
series pushed on the new upstream gives."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .action_runner import FakeGitHub
from .conftest import Repo, pushed_sandbox
from .test_action_runs import action_copy, fake_venv  # noqa: F401
from .test_refresh_bot import BRANCH, run_bot

OFFSET = ("srt/models/kimi_k25.py", "srt/layers/moe/topk.py", "srt/entrypoints/engine.py")


def _clone(src: Path, where: Path, *extra: str) -> Repo:
    subprocess.run(["git", "clone", "-q", *extra, str(src), str(where)], check=True)
    return Repo(where)


def _applied_fork(tmp_path: Path) -> tuple[Repo, Path]:
    """The example fork as a team keeps it on GitHub: main is the base with every patch
    applied, and the series folder; (the upstream, the bare origin)."""
    box = pushed_sandbox(tmp_path)
    fork = Repo(Path(box.fork))
    fork.git("add", "patches")
    fork.git("commit", "-q", "-m", "The series")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", box.fork, str(origin)], check=True)
    return Repo(Path(box.upstream)), origin


def _upstream_moves(upstream: Repo, n: int) -> None:
    """Lines above the patches (every patch only moves) and a file of its own."""
    for path in OFFSET:
        upstream.write(path, f"# upstream note {n}\n" + upstream.read(path))
    upstream.write(f"srt/added_{n}.py", f"N = {n}\n")
    upstream.commit_all(f"upstream commit {n}")


def _pushed_on(upstream: Repo, series: Path, where: Path) -> Repo:
    """The oracle: upstream's head, this series folder, 'patchstack push --all'."""
    fresh = _clone(upstream.path, where)
    subprocess.run(["cp", "-r", str(series), str(fresh.path / "patches")], check=True)
    fresh.ps("push", "--all")
    return fresh


def test_a_consumer_pulls_ff_only_across_two_bot_refreshes(action_copy, tmp_path) -> None:  # noqa: F811
    upstream, origin = _applied_fork(tmp_path)
    consumer = _clone(origin, tmp_path / "consumer")
    gh = FakeGitHub("fork-owner/fork", git_dir=origin)
    try:
        for n in (1, 2):  # the second merges onto the first's merge
            _upstream_moves(upstream, n)
            ws = _clone(origin, tmp_path / f"ws{n}")
            safe = {"auto-merge": "safe"}
            run = run_bot(action_copy, ws, tmp_path / f"t{n}", gh, str(upstream.path), **safe)
            assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
            assert run.outputs["refresh-result"] == "merged", run.summary
            pr = gh.pulls[-1]
            assert pr["merged"] and "Auto-merge: merged" in pr["body"]
            assert pr["merged_sha"] == Repo(origin).git("rev-parse", BRANCH).strip()
            pull = ["git", "pull", "--ff-only", "-q"]
            pulled = subprocess.run(pull, cwd=consumer.path, capture_output=True, text=True)
            assert pulled.returncode == 0, pulled.stderr
            assert f"# base: {upstream.head()}" in consumer.read("patches/series")
            assert f"# upstream note {n}" in consumer.read("srt/models/kimi_k25.py")
            assert consumer.read(f"srt/added_{n}.py") == f"N = {n}\n"
            oracle = _pushed_on(upstream, consumer.path / "patches", tmp_path / f"oracle{n}")
            code = ["--", ".", ":!patches"]
            assert consumer.git("diff", "--stat", oracle.head(), "HEAD", *code) == ""
            # The bot's merge: the refreshed fork first (the patches on the new upstream,
            # first-parent), the branch before it second.
            top = Repo(origin).git("rev-parse", f"{BRANCH}^1").strip()
            assert Repo(origin).git("rev-parse", f"{top}^{{tree}}") == oracle.tree() + "\n"
        assert len(gh.pulls) == 2 and all(p["merged"] for p in gh.pulls)
    finally:
        gh.close()


def test_a_branch_with_a_commit_that_is_no_patch_is_refused(action_copy, tmp_path) -> None:  # noqa: F811
    upstream, origin = _applied_fork(tmp_path)
    maintainer = _clone(origin, tmp_path / "maintainer")
    maintainer.write("srt/utils.py", maintainer.read("srt/utils.py") + "HOTFIX = 1\n")
    maintainer.commit_all("a hotfix, not a patch")
    maintainer.git("push", "-q", "origin", "HEAD:main")
    _upstream_moves(upstream, 1)
    gh = FakeGitHub("fork-owner/fork", git_dir=origin)
    try:
        ws = _clone(origin, tmp_path / "ws")
        before = Repo(origin).git("for-each-ref")
        run = run_bot(action_copy, ws, tmp_path / "t", gh, str(upstream.path))
        assert run.failed and run.outputs["refresh-result"] == "failed"
        [issue] = gh.issues
        assert "srt/utils.py differ from the base with the series applied" in issue["body"]
        assert Repo(origin).git("for-each-ref") == before and gh.pulls == []
        # publish: series publishes the series files alone (the hotfix stays as it is).
        run = run_bot(action_copy, ws, tmp_path / "t2", gh, str(upstream.path), publish="series")
        assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
        assert "HOTFIX = 1" in Repo(origin).git("show", f"{BRANCH}:srt/utils.py")
    finally:
        gh.close()
