"""The Action's refresh bot (command: refresh, action/ghbot.py), run as GitHub runs it
(tests/action_runner.py) against a local fake of GitHub's API, a bare "origin" for the fork
and a local upstream: upstream takes one patch and breaks another; the pull request shows
both and auto-merge holds back; the upstream is never written; a lost race is reported."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox, example_dir, upstream_pull

from .action_runner import ROOT, FakeGitHub, load_yaml, run_action
from .conftest import Repo
from .test_action_runs import action_copy, fake_venv, github_env  # noqa: F401

BOT_WORKFLOW = ROOT / "docs" / "github-refresh-bot.yml"
BRANCH = "patchstack/refresh"


def refs(path: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(path), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def on_github(tmp_path: Path):
    """The example sandbox as a fork on 'GitHub': a bare origin whose main holds the series in
    patches/; (the sandbox, the origin)."""
    box = build_sandbox(str(tmp_path / "box"))
    fork = Repo(box.fork)
    fork.git("add", "patches")
    fork.git("commit", "-q", "-m", "The series")
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", box.fork, str(origin)], check=True)
    return box, origin


@pytest.fixture
def forked(tmp_path) -> dict:
    """A fork on 'GitHub' and an upstream that has since taken communicator-sm120.patch word
    for word and changed the lines nccl-diagnostic-logging.patch edits."""
    box, origin = on_github(tmp_path)
    upstream = Repo(box.upstream)
    taken = Path(example_dir()) / "patches" / "communicator-sm120.patch"
    upstream.git("apply", str(taken))
    upstream.commit_all("communicator: build the fused all-reduce for SM120 too")
    upstream_pull(box)  # moves the lines nccl-diagnostic-logging.patch edits
    return {"box": box, "origin": origin, "upstream": Path(box.upstream), "root": tmp_path}


def checkout(forked: dict, name: str) -> Repo:
    """The job's checkout of the fork (actions/checkout with fetch-depth: 0)."""
    where = forked["root"] / name
    subprocess.run(["git", "clone", "-q", str(forked["origin"]), str(where)], check=True)
    return Repo(where)


def run_bot(action: Path, ws: Repo, temp: Path, gh: FakeGitHub, url: str, **more: str):
    fake_venv(temp)
    inputs = {"command": "refresh", "upstream-url": url, "upstream-branch": "main", **more}
    return run_action(action, ws.path, temp, inputs, {}, github_env(api=gh.url))


def test_the_bot_opens_one_pull_request_showing_what_went_upstream_and_what_was_deferred(
    action_copy,  # noqa: F811
    forked,
    tmp_path,
) -> None:
    gh = FakeGitHub("fork-owner/fork")
    try:
        ws = checkout(forked, "ws1")
        upstream_refs, head, status = refs(forked["upstream"]), ws.head(), ws.status_all()
        run = run_bot(
            action_copy, ws, tmp_path / "t1", gh, str(forked["upstream"]), **{"auto-merge": "safe"}
        )
        assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
        assert run.outputs["refresh-result"] == "updated"
        [pr] = gh.pulls
        assert pr["head"]["ref"] == BRANCH and pr["base"]["ref"] == "main"
        text = pr["body"]
        assert text.startswith("<!-- patchstack-refresh-bot -->")
        assert "### Upstream (1)" in text and "`communicator-sm120.patch`: brought by" in text
        assert "### Deferred (1)" in text
        assert "`nccl-diagnostic-logging.patch`: conflicts in `srt/managers/scheduler.py`" in text
        assert "`patchstack push nccl-diagnostic-logging.patch`" in text
        assert "Auto-merge held back: nccl-diagnostic-logging.patch is deferred" in text
        assert "## patchstack review" in text or "patchstack review" in text
        assert not pr["merged"] and not any(m == "PUT" for m, _p in gh.calls)
        # Published on the fork's own branch, as commits on main: the upstream untouched, the
        # workspace (HEAD, index, files) untouched.
        assert refs(forked["upstream"]) == upstream_refs
        assert ws.head() == head and ws.status_all() == status
        origin = Repo(forked["origin"])
        # publish: ff: a merge of the series commits on main and the new upstream (this
        # branch keeps the upstream base, not the patches applied), with both trees.
        top = origin.git("log", "-1", "--format=%s", BRANCH).strip()
        assert top.endswith(": publish the refreshed fork")
        log = origin.git("log", "--format=%s", f"main..{BRANCH}^2").splitlines()
        assert log and all(s.startswith("patchstack: refresh onto ") for s in log)
        new_base = Repo(forked["upstream"]).head()
        assert origin.git("rev-parse", f"{BRANCH}^1").strip() == new_base
        assert origin.git("diff", "--stat", new_base, BRANCH, "--", ".", ":!patches") == ""
        assert origin.git("diff", f"{BRANCH}^2", BRANCH, "--", "patches") == ""
        series = origin.git("show", f"{BRANCH}:patches/series")
        assert "# deferred: nccl-diagnostic-logging.patch" in series
        assert "# upstream: communicator-sm120.patch" in series
        # The next run (a new job: a new checkout) edits the same pull request.
        ws2 = checkout(forked, "ws2")
        run = run_bot(action_copy, ws2, tmp_path / "t2", gh, str(forked["upstream"]))
        assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
        assert len(gh.pulls) == 1 and len(gh.issues) == 0
        assert refs(forked["upstream"]) == upstream_refs
    finally:
        gh.close()


def test_a_lost_race_is_reported_and_nothing_is_clobbered(action_copy, forked, tmp_path) -> None:  # noqa: F811
    gh = FakeGitHub("fork-owner/fork")
    try:
        ws = checkout(forked, "ws")  # the job checks out the fork ...
        maintainer = checkout(forked, "maintainer")  # ... and a maintainer pushes meanwhile
        maintainer.write("NOTE.md", "mine\n")
        maintainer.commit_all("a maintainer's commit")
        maintainer.git("push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
        theirs = maintainer.head()
        run = run_bot(action_copy, ws, tmp_path / "t", gh, str(forked["upstream"]))
        assert run.failed and run.outputs["refresh-result"] == "lost-race"
        assert "lost a race, nothing published" in run.summary
        assert Repo(forked["origin"]).git("rev-parse", BRANCH).strip() == theirs
        assert gh.pulls == [] and gh.issues == []
    finally:
        gh.close()


def test_a_failing_run_opens_one_issue_in_the_fork_and_updates_it(
    action_copy,  # noqa: F811
    forked,
    tmp_path,
) -> None:
    gh = FakeGitHub("fork-owner/fork")
    try:
        missing = str(forked["root"] / "no-such-upstream")
        for i in range(2):
            ws = checkout(forked, f"ws{i}")
            run = run_bot(action_copy, ws, tmp_path / f"t{i}", gh, missing)
            assert run.failed and run.outputs["refresh-result"] == "failed"
        [issue] = gh.issues
        assert issue["body"].startswith("<!-- patchstack-refresh-bot-failure -->")
        assert "git fetch failed" in issue["body"]
        assert gh.pulls == []
    finally:
        gh.close()


def test_the_bot_refuses_an_origin_that_is_the_upstream(action_copy, forked, tmp_path) -> None:  # noqa: F811
    gh = FakeGitHub("fork-owner/fork")
    try:
        ws = checkout(forked, "ws")
        before = refs(forked["origin"])
        run = run_bot(action_copy, ws, tmp_path / "t", gh, str(forked["origin"]))
        assert run.failed and run.outputs["refresh-result"] == "failed"
        assert "is the upstream repository: the bot pushes only to the fork" in gh.issues[0]["body"]
        assert refs(forked["origin"]) == before
    finally:
        gh.close()


# tests/test_bot_publish_ff.py's consumer test merges with auto-merge: safe twice (upstream
# moves only lines around the patches) and checks the same: the README's command runs that one.
@pytest.mark.slow
def test_auto_merge_safe_merges_when_every_verdict_is_safe(action_copy, tmp_path) -> None:  # noqa: F811
    """Upstream moved only lines around the patches (the later, clean upstream commit):
    every verdict is unchanged, offset or merged, so the pull request is merged."""
    box, origin = on_github(tmp_path)
    upstream = Repo(box.upstream)
    upstream.write("srt/new_module.py", "x = 1\n")
    upstream.commit_all("an upstream commit away from the patches")
    gh = FakeGitHub("fork-owner/fork")
    try:
        ws = tmp_path / "ws"
        subprocess.run(["git", "clone", "-q", str(origin), str(ws)], check=True)
        run = run_bot(
            action_copy, Repo(ws), tmp_path / "t", gh, box.upstream, **{"auto-merge": "safe"}
        )
        assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
        assert run.outputs["refresh-result"] == "merged"
        [pr] = gh.pulls
        assert pr["merged"] and "Auto-merge: merged" in pr["body"]
        assert pr["merged_sha"] == Repo(origin).git("rev-parse", BRANCH).strip()
    finally:
        gh.close()


def test_the_documented_bot_workflow_runs_the_refresh_on_a_schedule() -> None:
    flow = load_yaml(BOT_WORKFLOW)
    on = flow.get("on", flow.get(True))
    assert "schedule" in on and "workflow_dispatch" in on
    assert flow["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
        "issues": "write",
    }
    [job] = flow["jobs"].values()
    step = next(s for s in job["steps"] if "patchstack" in str(s.get("uses", "")))
    assert step["with"]["command"] == "refresh"
    checkout_step = job["steps"][0]
    assert checkout_step["with"]["fetch-depth"] == 0


def _ghbot():
    import sys

    sys.path.insert(0, str(ROOT / "action"))
    try:
        import ghbot
    finally:
        sys.path.remove(str(ROOT / "action"))
    return ghbot


def test_the_series_change_splits_what_only_moved_from_what_changed() -> None:
    ghbot = _ghbot()
    before = {
        "series": b"# base: aaa upstream/main\na.patch # essential\nb.patch # essential\n",
        "a.patch": b"a1",
        "b.patch": b"b1",
        "c.patch": b"c1",
    }
    only_base = {**before, "series": before["series"].replace(b"aaa", b"bbb"), "a.patch": b"a2"}
    moved, rest = ghbot.split_change(before, only_base, {"a.patch": "offset"})
    assert (moved, rest) == (["series", "a.patch"], [])
    marked = {
        **only_base,
        "series": only_base["series"] + b"# deferred: b.patch ccc\n",
        "b.patch": b"b2",
    }
    moved, rest = ghbot.split_change(before, marked, {"a.patch": "offset", "b.patch": "merged"})
    assert (moved, rest) == (["a.patch"], ["series", "b.patch"])


def test_auto_merge_holds_back_for_anything_not_proven_safe() -> None:
    ghbot = _ghbot()
    safe = {"patches": [{"name": n, "verdict": v} for n, v in (("a", "offset"), ("b", "merged"))]}
    assert ghbot.holds_back(safe, None) == []
    taken = {"patches": [{"name": "u", "verdict": "upstream", "evidence": {"commit": "c"}}]}
    assert ghbot.holds_back(taken, None) == []
    unproven = {"patches": [{"name": "u", "verdict": "upstream", "evidence": None}]}
    assert ghbot.holds_back(unproven, None) == ["u is upstream without evidence"]
    noop = {"patches": [{"name": "n", "verdict": "no-op"}], "deferred": [{"patch": "d"}]}
    assert ghbot.holds_back(noop, None) == ["n is no-op", "d is deferred"]
    probes = {"ok": False, "results": [{"name": "a", "verdict": "broken"}]}
    assert ghbot.holds_back(safe, probes) == ["the probe of a is broken"]
