"""The GitHub Action and the example workflows: valid against their published schemas, and
the action's steps run here, as GitHub runs them, against real repositories.

The schemas are SchemaStore's ``github-action`` and ``github-workflow``, as shipped inside
the check-jsonschema package (its ``vendor.github-actions`` / ``vendor.github-workflows``
builtin schemas): nothing is fetched at test time and nothing is copied into this project.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox, upstream_pull

from . import schemas
from .action_runner import ROOT, FakeGitHub, evaluate, load_yaml, run_action
from .conftest import Repo
from .test_review import every_classification

WORKFLOWS = sorted((ROOT / "docs").glob("github-*-workflow.yml"))
OWN_WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def schema_check(schema: str, paths: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, paths)],
        capture_output=True,
        text=True,
    )


def test_action_and_workflows_match_the_published_schemas(tmp_path) -> None:
    proc = schema_check("vendor.github-actions", [ROOT / "action.yml"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = schema_check("vendor.github-workflows", WORKFLOWS + OWN_WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(WORKFLOWS) == 3 and len(OWN_WORKFLOWS) == 1
    # The check can fail: a step without its 'runs-on' job key is refused.
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  x:\n    steps:\n      - run: true\n")
    assert schema_check("vendor.github-workflows", [broken]).returncode != 0


def test_the_workflows_use_the_action_with_inputs_it_declares() -> None:
    action = load_yaml(ROOT / "action.yml")
    declared = set(action["inputs"])
    uses = []
    for path in WORKFLOWS:
        text = path.read_text()
        assert "pip install patchstack" not in text
        for job in load_yaml(path)["jobs"].values():
            for step in job["steps"]:
                if step.get("uses", "").startswith("OWNER/patchstack@"):
                    uses.append(path.name)
                    assert set(step.get("with", {})) <= declared, (path.name, step)
    assert sorted(uses) == [p.name for p in WORKFLOWS]
    # Every expression in the action names a declared input or a step that exists.
    text = (ROOT / "action.yml").read_text()
    import re

    for name in re.findall(r"inputs\.([\w-]+)", text):
        assert name in declared, name
    ids = {s.get("id") for s in action["runs"]["steps"]}
    for sid in re.findall(r"steps\.([\w-]+)\.", text):
        assert sid in ids, sid
    # No run step interpolates an expression into shell code (inputs go through env).
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]


def test_the_release_workflow_publishes_with_trusted_publishing() -> None:
    flow = load_yaml(ROOT / ".github" / "workflows" / "release.yml")
    assert flow["on"] == {"push": {"tags": ["v*"]}}
    publish = flow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == "build"
    assert publish["steps"][-1]["uses"] == "pypa/gh-action-pypi-publish@release/v1"
    assert "with" not in publish["steps"][-1]  # no password: OpenID Connect
    build = "\n".join(s.get("run", "") for s in flow["jobs"]["build"]["steps"])
    assert "python -m build" in build and "twine check --strict" in build
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m build" in ci and "twine check --strict" in ci


def test_the_action_finds_the_comment_review_writes() -> None:
    from patchstack.review.render import MARKER

    text = (ROOT / "action" / "ghaction.py").read_text()
    assert f'MARKER = "{MARKER}"' in text


def test_expression_evaluator() -> None:
    ctx = {"inputs": {"command": "check review", "comment": "auto"}, "steps": {}}
    assert evaluate("contains(inputs.command, 'check')", ctx) is True
    assert evaluate("!cancelled() && inputs.comment != 'never'", ctx) is True
    assert evaluate("inputs.command == 'comment' || steps.x.outcome == 'success'", ctx) is False


# -- running the steps ---------------------------------------------------------------------------


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


@pytest.fixture
def series_repo(tmp_path) -> tuple[Repo, str, str]:
    repo, _old, _new = every_classification(tmp_path)
    return repo, repo.git("rev-parse", "fork~1").strip(), repo.head()


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
            assert run.outputs["review-html"].endswith("review.html")
            review_json = Path(run.outputs["review-json"])
            schemas.check_output(["review", "--json"], review_json.read_text())
            assert run.step("Keep the results as an artifact").uses == "actions/upload-artifact@v4"
        ours = [c for c in gh.on(7) if c["login"] == "github-actions[bot]"]
        assert len(ours) == 1  # posted once, then edited
        assert ours[0]["body"].startswith("<!-- patchstack-review -->\n### patchstack review")
        assert "https://github.example/fork-owner/fork/actions/runs/42" not in ours[0]["body"]
        assert gh.comments[someone]["body"].endswith("not ours")
        assert [m for m, _p in gh.calls].count("POST") == 1
        assert [m for m, _p in gh.calls].count("PATCH") == 1
    finally:
        gh.close()


def test_a_pull_request_from_a_fork_gets_the_summary_and_no_comment(
    action_copy, series_repo, tmp_path
) -> None:
    repo, before, after = series_repo
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
        step = run.step("Keep the pull request comment up to date")
        assert "pull request from a fork" in step.stdout and gh.calls == []
        # A token that cannot write (same repository, read-only): a notice, not a failure;
        # with comment: always, a failure. (The comment step's script, run on its own.)
        md = tmp_path / "runner" / "patchstack" / "review.md"
        event = tmp_path / "runner" / "event.json"
        event.write_text(json.dumps(pr_event(before, after)))
        env = {**github_env(api=gh.url), "GITHUB_EVENT_PATH": str(event), "GITHUB_TOKEN": "t0ken"}
        for mode, code, said in (("auto", 0, "cannot write comments (403)"), ("always", 1, "403")):
            proc = subprocess.run(
                [sys.executable, str(action_copy / "action" / "ghaction.py"), "comment", str(md)]
                + ["--mode", mode],
                env=env,
                capture_output=True,
                text=True,
            )
            assert proc.returncode == code and said in proc.stdout, proc.stdout + proc.stderr
    finally:
        gh.close()


def test_the_workflow_run_side_posts_to_the_pull_request_of_the_run(
    action_copy, series_repo, tmp_path
) -> None:
    repo, before, after = series_repo
    gh = FakeGitHub("fork-owner/fork")
    gh.pulls = [
        {"number": 3, "head": {"label": "someone:other", "sha": "0" * 40}},
        {"number": 9, "head": {"label": "someone:feature", "sha": after}},
    ]
    review = tmp_path / "artifact" / "review.md"
    review.parent.mkdir()
    review.write_text("<!-- patchstack-review -->\nthe review\n")
    event = {
        "workflow_run": {
            "head_repository": {"owner": {"login": "someone"}},
            "head_branch": "feature",
            "head_sha": after,
        }
    }
    try:
        fake_venv(tmp_path / "runner")
        run = run_action(
            action_copy,
            repo.path,
            tmp_path / "runner",
            {"command": "comment", "comment-file": str(review)},
            event,
            github_env(api=gh.url),
        )
        assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
        assert [c["body"] for c in gh.on(9)] == ["<!-- patchstack-review -->\nthe review\n"]
        assert run.step("patchstack review").outcome == "skipped"
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
    assert "the series applies on" in run.summary
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
    # Bad input is an error (2), not a conflict.
    fake_venv(tmp_path / "bad")
    bad = {**inputs, "onto": "no-such-ref"}
    bad.pop("upstream-url")
    run = run_action(action_copy, fork.path, tmp_path / "bad", bad, {}, github_env())
    assert run.failed and run.outputs["check-result"] == "error"


@pytest.mark.slow
def test_the_install_step_installs_from_the_action_checkout(action_copy, tmp_path) -> None:
    """The real install: a fresh virtual environment, patchstack from GITHUB_ACTION_PATH."""
    temp = tmp_path / "runner"
    github_path = tmp_path / "path.txt"
    github_path.write_text("")
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
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("patchstack, version")
    assert github_path.read_text() == f"{temp / 'patchstack-venv' / 'bin'}\n"
    venv_python = temp / "patchstack-venv" / "bin" / "python"
    where = subprocess.run(
        [str(venv_python), "-c", "import patchstack; print(patchstack.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    assert where.startswith(str(temp / "patchstack-venv"))
