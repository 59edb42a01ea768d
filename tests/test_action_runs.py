"""The Action's steps and the documented workflows, run here as GitHub runs them
(tests/action_runner.py), against real repositories and a local fake of GitHub's API."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox, example_dir, upstream_pull

from . import schemas
from .action_runner import ROOT, FakeGitHub, run_action, run_job
from .conftest import Repo
from .test_review import every_classification

WORKFLOW = ROOT / "docs" / "github-workflow.yml"
COMMENT_WORKFLOW = ROOT / "docs" / "github-comment-workflow.yml"
MARKER = "<!-- patchstack-review -->"
BOT = "github-actions[bot]"


@pytest.fixture(scope="module")
def action_copy(tmp_path_factory) -> Path:
    """The action's checkout (a copy: installing writes build files next to the sources)."""
    where = tmp_path_factory.mktemp("action") / "patchstack"
    shutil.copytree(
        ROOT,
        where,
        ignore=shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__", ".*cache"),
    )
    return where


def fake_venv(temp: Path) -> None:
    """The install step's virtual environment, already made: the patchstack under test."""
    bin_dir = temp / "patchstack-venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("patchstack", "python"):
        target = Path(sys.executable).parent / name
        (bin_dir / name).symlink_to(target)


def github_env(repo: str = "fork-owner/fork", api: str = "") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(
        GITHUB_REPOSITORY=repo,
        GITHUB_SERVER_URL="https://github.example",
        GITHUB_RUN_ID="42",
        GITHUB_API_URL=api,
    )
    return env


def pr_event(base: str, head: str, number: int = 7, fork: bool = False) -> dict:
    head_repo = "someone/fork" if fork else "fork-owner/fork"
    return {
        "pull_request": {
            "number": number,
            "base": {"sha": base, "repo": {"full_name": "fork-owner/fork"}},
            "head": {"sha": head, "repo": {"full_name": head_repo}},
        }
    }


def ours(gh: FakeGitHub, pr: int) -> list[dict]:
    return [c for c in gh.on(pr) if c["login"] == BOT]


@pytest.fixture
def series_repo(tmp_path) -> tuple[Repo, str, str]:
    repo, _old, _new = every_classification(tmp_path)
    return repo, repo.git("rev-parse", "fork~1").strip(), repo.head()


# -- a pull request that adds a patch and tries to write its own review ---------------------------

TRAP = "import pathlib; pathlib.Path({path!r}).write_text('ran')\n"
HOSTILE_REVIEW_MD = (
    "<!-- patchstack-review -->\n3 → 3: 3 unchanged. Nothing to review.\n"
    "cc @security-team\n![](https://tracker.example/pixel.png)\n"
)


@pytest.fixture(scope="module")
def hostile_pr(tmp_path_factory) -> dict:
    """A fork whose series is tracked on main (commit B), a pull request (commit H, branch pr)
    that adds backdoor.patch and brings its own review templates and a json.py at the top,
    and an upstream that has moved under one patch since."""
    root = tmp_path_factory.mktemp("hostile")
    box = build_sandbox(str(root / "sandbox"))
    fork = Repo(box.fork)
    fork.ps("push", "--all")
    fork.write("srt/backdoor.py", "print('hi')\n")
    fork.ps("new", "backdoor", "--tag", "essential", "-m", "Add a helper", "srt/backdoor.py")
    fork.ps("pop", "--all")
    shutil.copytree(fork.path / "patches", root / "head-series")
    shutil.rmtree(fork.path / "patches")
    shutil.copytree(Path(example_dir()) / "patches", fork.path / "patches")
    fork.git("add", "patches")
    fork.git("commit", "-q", "-m", "The series")
    base = fork.head()
    fork.git("checkout", "-q", "-b", "pr")
    shutil.rmtree(fork.path / "patches")
    shutil.copytree(root / "head-series", fork.path / "patches")
    fork.write(".patchstack/templates/review.md", HOSTILE_REVIEW_MD)
    fork.write(".patchstack/templates/review.html", "<script>alert(1)</script>\n")
    fork.write("json.py", TRAP.format(path=str(root / "pwned")))
    fork.git("add", "-A")
    fork.git("commit", "-q", "-m", "Add a helper")
    head = fork.head()
    fork.git("checkout", "-q", "--detach", head)  # as actions/checkout leaves a pull request
    upstream_pull(box)
    return {"root": root, "fork": fork.path, "upstream": box.upstream, "base": base, "head": head}


def workspace(hostile_pr: dict, where: Path) -> Repo:
    shutil.copytree(hostile_pr["fork"], where, symlinks=True)
    return Repo(where)


def test_the_documented_workflow_posts_one_comment_with_the_checks_verdicts_and_the_review(
    action_copy, hostile_pr, tmp_path
) -> None:
    ws = workspace(hostile_pr, tmp_path / "ws")
    base, head = hostile_pr["base"], hostile_pr["head"]
    gh = FakeGitHub("fork-owner/fork")
    github = {
        "event_name": "pull_request",
        "event": pr_event(base, head),
        "repository": "fork-owner/fork",
    }
    flow = WORKFLOW.read_text().replace(
        "https://github.com/OWNER/UPSTREAM.git", hostile_pr["upstream"]
    )
    (tmp_path / "flow.yml").write_text(flow)
    try:
        temp = tmp_path / "runner"
        fake_venv(temp)
        job = run_job(
            tmp_path / "flow.yml",
            "patchstack",
            action_copy,
            ws.path,
            temp,
            github,
            github_env(api=gh.url),
        )
        run = job.action
        assert run is not None
        checkout = dict(job.steps)[next(u for u, _ in job.steps if "checkout" in u)]
        assert checkout["persist-credentials"] == "false"
        # The check found the conflict (the job fails) and the review still ran.
        assert run.outputs["check-result"] == "conflict" and run.failed
        assert run.step("patchstack review").outcome == "success"
        step = run.step("Keep the pull request comment up to date")
        assert step.outcome == "success", step.stdout + step.stderr
        (comment,) = ours(gh, 7)
        body = comment["body"]
        # One comment: the check's verdicts (naming upstream as the user gave it), then the review.
        check_at = body.index("### patchstack check: the series does not apply on `main of ")
        assert body.startswith(MARKER + "\n") and body.count(MARKER) == 1
        assert "#### Conflict in `nccl-diagnostic-logging.patch`" in body
        assert "[!CAUTION]" not in body  # the base repository's own run: its own verdicts
        assert "Upstream commits that changed these lines:" in body
        assert "patchstack-upstream" not in body and "refs/remotes" not in body
        review_at = body.index("### patchstack review")
        assert check_at < review_at and "`backdoor.patch`" in body[review_at:]
        # The pull request's own templates did not write it, nor its json.py run.
        assert "Nothing to review" not in body and "tracker.example" not in body
        assert "@security-team" not in body
        assert not (hostile_pr["root"] / "pwned").exists()
        html = (temp / "patchstack" / "review.html").read_text()
        assert "<script>" not in html and "backdoor.patch" in html
        assert 'http-equiv="Content-Security-Policy"' in html.splitlines()[2]
        summary = run.summary
        assert "### patchstack check" in summary and "`backdoor.patch`" in summary
    finally:
        gh.close()
    # Every night: the check alone, no review, no comment.
    temp = tmp_path / "night"
    fake_venv(temp)
    night = dict(github, event_name="schedule", event={})
    job = run_job(
        tmp_path / "flow.yml", "patchstack", action_copy, ws.path, temp, night, github_env()
    )
    assert job.action is not None and job.action.outputs["check-result"] == "conflict"
    assert job.action.step("patchstack review").outcome == "skipped"


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_a_forks_pull_request_is_reviewed_and_posted_by_the_comment_workflow(
    action_copy, hostile_pr, tmp_path
) -> None:
    """The fork's run has a read-only token: it keeps the artifact, posts nothing. The
    workflow_run workflow reviews the pull request from git objects in a checkout of the
    default branch, shows the run's check.json as data, and posts the one comment."""
    base, head = hostile_pr["base"], hostile_pr["head"]
    ws = workspace(hostile_pr, tmp_path / "pr-ws")
    gh = FakeGitHub("fork-owner/fork", writable=False)
    flow = WORKFLOW.read_text().replace(
        "https://github.com/OWNER/UPSTREAM.git", hostile_pr["upstream"]
    )
    (tmp_path / "flow.yml").write_text(flow)
    github = {"event_name": "pull_request", "event": pr_event(base, head, fork=True)}
    try:
        temp = tmp_path / "pr-run"
        fake_venv(temp)
        job = run_job(
            tmp_path / "flow.yml",
            "patchstack",
            action_copy,
            ws.path,
            temp,
            github,
            github_env(api=gh.url),
        )
        assert job.action is not None
        step = job.action.step("Keep the pull request comment up to date")
        assert "pull request from a fork" in step.stdout and gh.calls == []
    finally:
        gh.close()
    artifact = temp / "patchstack"
    # What the fork's run left may be anything: its check.json carries words meant to render.
    data = json.loads((artifact / "check.json").read_text())
    data["conflicts"][0]["hunks"][0]["upstream_commits"][0]["subject"] = (
        "![](https://tracker.example/x.png) @security-team"
    )
    (artifact / "check.json").write_text(json.dumps(data))
    (artifact / "comment.md").write_text(HOSTILE_REVIEW_MD)  # never posted as it is

    # The base repository: the pull request's head is refs/pull/7/head there.
    origin = tmp_path / "origin.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(hostile_pr["fork"]), str(origin)], check=True
    )
    for args in (
        ["update-ref", "refs/pull/7/head", head],
        ["update-ref", "refs/heads/main", base],
        ["update-ref", "-d", "refs/heads/pr"],
        ["symbolic-ref", "HEAD", "refs/heads/main"],
    ):
        subprocess.run(["git", "-C", str(origin), *args], check=True)
    default = tmp_path / "default"
    subprocess.run(["git", "clone", "-q", str(origin), str(default)], check=True)
    assert Repo(default).head() == base and not (default / ".patchstack").exists()

    gh = FakeGitHub("fork-owner/fork")
    gh.pulls = [
        {"number": 3, "head": {"label": "someone:other", "sha": "0" * 40}, "base": {}},
        {
            "number": 7,
            "head": {"label": "someone:feature", "sha": head},
            "base": {"sha": base, "ref": "main"},
        },
    ]
    event = {
        "workflow_run": {
            "event": "pull_request",
            "conclusion": "failure",
            "head_repository": {"owner": {"login": "someone"}, "full_name": "someone/fork"},
            "head_branch": "feature",
            "head_sha": head,
            "html_url": "https://github.example/fork-owner/fork/actions/runs/41",
        }
    }
    try:
        temp = tmp_path / "comment-run"
        fake_venv(temp)
        (temp / "run").mkdir(parents=True)
        shutil.copy(artifact / "check.json", temp / "run" / "check.json")
        run_github = {"event_name": "workflow_run", "event": event, "repository": "fork-owner/fork"}
        job = run_job(
            COMMENT_WORKFLOW,
            "comment",
            action_copy,
            default,
            temp,
            run_github,
            github_env(api=gh.url),
        )
        assert job.action is not None and not job.action.failed, [
            (s.name, s.stdout, s.stderr) for s in job.action.steps
        ]
        (comment,) = ours(gh, 7)
        body = comment["body"]
        assert "`backdoor.patch`" in body and "Nothing to review" not in body
        assert "#### Conflict in `nccl-diagnostic-logging.patch`" in body
        # The verdicts are the fork's own, and the comment says so before them (issue 34).
        caveat = body.index("> [!CAUTION]\n> The check below is the pull request's own claim")
        assert caveat < body.index("### patchstack check:")
        assert "run in `someone/fork` computed these verdicts" in body
        # The run's words are data: in a code span, no image, no mention.
        assert "`![](https://tracker.example/x.png) @security-team`" in body
        assert body.count("tracker.example") == 1
        assert not (hostile_pr["root"] / "pwned").exists()
        assert not (default / "json.py").exists()  # nothing of the pull request checked out
        # A run of the base repository's own branch is not this workflow's business.
        same = dict(event["workflow_run"], head_repository={"full_name": "fork-owner/fork"})
        skipped = run_job(
            COMMENT_WORKFLOW,
            "comment",
            action_copy,
            default,
            temp,
            dict(run_github, event={"workflow_run": same}),
            github_env(api=gh.url),
        )
        assert skipped.skipped
    finally:
        gh.close()


def test_a_template_of_the_base_that_loops_is_stopped(action_copy, hostile_pr, tmp_path) -> None:
    ws = workspace(hostile_pr, tmp_path / "ws")
    ws.git("checkout", "-q", hostile_pr["base"])
    ws.write(
        ".patchstack/templates/review.md",
        "{% for a in range(100000) %}{% for b in range(100000) %}{{ a }}{% endfor %}{% endfor %}\n",
    )
    ws.git("add", "-A", ".patchstack")
    ws.git("commit", "-q", "-m", "a template that loops")
    looping = ws.head()
    ws.git("checkout", "-q", hostile_pr["head"])
    fake_venv(tmp_path / "runner")
    inputs = {"command": "review", "old": looping, "new": hostile_pr["head"], "render-timeout": "2"}
    started = time.monotonic()
    run = run_action(action_copy, ws.path, tmp_path / "runner", inputs, {}, github_env())
    took = time.monotonic() - started
    step = run.step("patchstack review")
    assert step.outcome == "failure" and "took over 2 s (render-timeout)" in step.stdout
    assert took < 60, took


def test_review_posts_one_comment_and_edits_it_on_every_push(
    action_copy, series_repo, tmp_path
) -> None:
    repo, before, after = series_repo
    gh = FakeGitHub("fork-owner/fork")
    try:
        someone = gh.add_comment(7, "<!-- patchstack-review -->\nnot ours", "mallory")
        for attempt in (1, 2):
            temp = tmp_path / f"runner{attempt}"
            fake_venv(temp)
            run = run_action(
                action_copy,
                repo.path,
                temp,
                {"command": "review", "series-dir": "patches"},
                pr_event(before, after),
                github_env(api=gh.url),
            )
            assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
            assert "gamma.patch" in run.summary and "Interdiff." in run.summary
            assert "persist-credentials" not in run.step("patchstack review").stdout
            assert run.outputs["review-html"].endswith("review.html")
            review_json = Path(run.outputs["review-json"])
            schemas.check_output(["review", "--json"], review_json.read_text())
            upload = run.step("Keep the results as an artifact").uses
            assert upload is not None and upload.startswith("actions/upload-artifact@")
        (comment,) = ours(gh, 7)  # posted once, then edited
        assert comment["body"].startswith("<!-- patchstack-review -->\n### patchstack review")
        assert "https://github.example/fork-owner/fork/actions/runs/42" not in comment["body"]
        assert gh.comments[someone]["body"].endswith("not ours")
        assert [m for m, _p in gh.calls].count("POST") == 1
        assert [m for m, _p in gh.calls].count("PATCH") == 1
    finally:
        gh.close()


def test_a_pull_request_from_a_fork_gets_the_summary_and_no_comment(
    action_copy, series_repo, tmp_path
) -> None:
    repo, before, after = series_repo
    # A checkout that kept its token (persist-credentials left true): the review warns.
    repo.git("config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic eDp5")
    gh = FakeGitHub("fork-owner/fork", writable=False)
    try:
        fake_venv(tmp_path / "runner")
        run = run_action(
            action_copy,
            repo.path,
            tmp_path / "runner",
            {"command": "review"},
            pr_event(before, after, fork=True),
            github_env(api=gh.url),
        )
        assert not run.failed
        assert "gamma.patch" in run.summary
        assert "set persist-credentials: false" in run.step("patchstack review").stdout
        step = run.step("Keep the pull request comment up to date")
        assert "pull request from a fork" in step.stdout and gh.calls == []
        # A token that cannot write (same repository, read-only): a notice, not a failure;
        # with comment: always, a failure. (The comment step's script, run on its own.)
        md = tmp_path / "runner" / "patchstack" / "comment.md"
        event = tmp_path / "runner" / "event.json"
        event.write_text(json.dumps(pr_event(before, after)))
        env = {**github_env(api=gh.url), "GITHUB_EVENT_PATH": str(event), "GITHUB_TOKEN": "t0ken"}
        for mode, code, said in (("auto", 0, "cannot write comments (403)"), ("always", 1, "403")):
            proc = subprocess.run(
                [sys.executable, "-I", str(action_copy / "action" / "ghaction.py"), "comment"]
                + [str(md), "--mode", mode],
                env=env,
                capture_output=True,
                text=True,
            )
            assert proc.returncode == code and said in proc.stdout, proc.stdout + proc.stderr
    finally:
        gh.close()


@pytest.fixture
def sandbox(tmp_path) -> tuple[Repo, Path]:
    box = build_sandbox(str(tmp_path / "sandbox"))
    fork = Repo(box.fork)
    fork.ps("push", "--all")
    return fork, Path(box.upstream), box  # type: ignore[return-value]


def test_check_fails_the_job_on_a_conflict_and_says_why(action_copy, sandbox, tmp_path) -> None:
    fork, upstream, box = sandbox
    fake_venv(tmp_path / "ok")
    inputs = {"command": "check", "upstream-url": str(upstream), "upstream-branch": "main"}
    run = run_action(action_copy, fork.path, tmp_path / "ok", inputs, {}, github_env())
    assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
    assert run.outputs["check-result"] == "ok"
    assert f"the series applies on `main of {upstream} (" in run.summary
    upstream_pull(box)  # upstream moves; one patch now conflicts
    fake_venv(tmp_path / "conflict")
    run = run_action(action_copy, fork.path, tmp_path / "conflict", inputs, {}, github_env())
    assert run.failed and run.step("patchstack check").outcome == "failure"
    assert run.outputs["check-result"] == "conflict"
    assert "does not apply" in run.summary
    assert "#### Conflict in `nccl-diagnostic-logging.patch`" in run.summary
    assert "Upstream commits that changed these lines:" in run.summary
    check_json = tmp_path / "conflict" / "patchstack" / "check.json"
    schemas.check_output(["check", "--json"], check_json.read_text())
    # The Action's own fetch leaves no ref behind, and names none to the user.
    assert "patchstack-upstream" not in run.summary
    assert "patchstack-upstream" not in fork.git("for-each-ref")
    # Bad input is an error (2), not a conflict.
    fake_venv(tmp_path / "bad")
    bad = {**inputs, "onto": "no-such-ref"}
    bad.pop("upstream-url")
    run = run_action(action_copy, fork.path, tmp_path / "bad", bad, {}, github_env())
    assert run.failed and run.outputs["check-result"] == "error"
    assert "### patchstack check: error" in run.summary


@pytest.mark.slow
def test_the_install_step_installs_the_pinned_versions_from_the_action_checkout(
    action_copy, tmp_path
) -> None:
    """The real install: a fresh virtual environment, the pinned dependencies, patchstack
    from GITHUB_ACTION_PATH; run in a workspace whose venv.py and pip.py must not run."""
    temp = tmp_path / "runner"
    github_path = tmp_path / "path.txt"
    github_path.write_text("")
    ws = tmp_path / "workspace"
    ws.mkdir()
    for name in ("venv", "pip", "ensurepip", "setuptools"):
        (ws / f"{name}.py").write_text(TRAP.format(path=str(tmp_path / f"pwned-{name}")))
    env = {
        **github_env(),
        "RUNNER_TEMP": str(temp),
        "GITHUB_ACTION_PATH": str(action_copy),
        "GITHUB_PATH": str(github_path),
        "PATCHSTACK_PYTHON": sys.executable,
    }
    temp.mkdir()
    proc = subprocess.run(
        ["bash", str(action_copy / "action" / "install.sh")],
        env=env,
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("patchstack, version")
    assert github_path.read_text() == f"{temp / 'patchstack-venv' / 'bin'}\n"
    assert not list(tmp_path.glob("pwned-*"))
    venv_python = temp / "patchstack-venv" / "bin" / "python"
    where = subprocess.run(
        [str(venv_python), "-c", "import patchstack; print(patchstack.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(temp / "patchstack-venv"))
    frozen = subprocess.run(
        [str(venv_python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout.lower()
    for line in (ROOT / "action" / "requirements.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            assert line.lower() in frozen.splitlines(), (line, frozen)
