"""The GitHub Action, the example workflows and the release workflow: valid against their
published schemas, pinned, and releasing the tags the docs name. (The Action's steps, run as
GitHub runs them against a local fake of its API, are in test_action_runs.py.)

The schemas are SchemaStore's ``github-action`` and ``github-workflow``, as shipped inside
the check-jsonschema package (its ``vendor.github-actions`` / ``vendor.github-workflows``
builtin schemas): nothing is fetched at test time and nothing is copied into this project.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from .action_runner import ROOT, evaluate, load_yaml
from .conftest import Repo

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

WORKFLOWS = sorted((ROOT / "docs").glob("github-*workflow.yml"))
OWN_WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OWNER_REPO = PROJECT["urls"]["Repository"].removeprefix("https://github.com/")


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
    assert [p.name for p in WORKFLOWS] == ["github-comment-workflow.yml", "github-workflow.yml"]
    assert OWN_WORKFLOWS == [RELEASE]
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
                if step.get("uses", "").startswith(f"{OWNER_REPO}@"):
                    uses.append(path.name)
                    assert set(step.get("with", {})) <= declared, (path.name, step)
    assert sorted(uses) == [p.name for p in WORKFLOWS]
    # Every expression in the action names a declared input or a step that exists.
    text = (ROOT / "action.yml").read_text()
    for name in re.findall(r"inputs\.([\w-]+)", text):
        assert name in declared, name
    ids = {s.get("id") for s in action["runs"]["steps"]}
    for sid in re.findall(r"steps\.([\w-]+)\.", text):
        assert sid in ids, sid
    # No run step interpolates an expression into shell code (inputs go through env).
    for step in action["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]


def _uses_lines() -> list[tuple[str, str]]:
    found = []
    for path in [ROOT / "action.yml", *WORKFLOWS, *OWN_WORKFLOWS]:
        for line in path.read_text().splitlines():
            m = re.match(r"\s*(?:- )?uses:\s*(\S+)(.*)$", line)
            if m:
                found.append((path.name, m.group(1) + m.group(2)))
    return found


def test_third_party_actions_are_pinned_by_commit_with_their_tag_named() -> None:
    """A tag can be moved by whoever controls the action; a commit cannot."""
    lines = _uses_lines()
    assert len(lines) >= 10
    for where, line in lines:
        if line.startswith(f"{OWNER_REPO}@"):
            continue  # this action, named by the tag its release makes (below)
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+", line), (where, line)
    # One version of each action everywhere.
    pins: dict[str, set[str]] = {}
    for _where, line in lines:
        name, _, rest = line.partition("@")
        pins.setdefault(name, set()).add(rest)
    assert all(len(v) == 1 for k, v in pins.items() if k != OWNER_REPO), pins


def test_the_documented_workflow_checks_and_reviews_in_one_job_one_run_at_a_time() -> None:
    flow = load_yaml(ROOT / "docs" / "github-workflow.yml")
    assert set(flow["on"]) == {"pull_request", "schedule", "workflow_dispatch"}
    group = flow["concurrency"]["group"]
    assert "github.event.pull_request.number" in group and flow["concurrency"]["cancel-in-progress"]
    assert flow["permissions"] == {"contents": "read", "pull-requests": "write"}
    (job,) = flow["jobs"].values()
    (ours,) = [s for s in job["steps"] if s.get("uses", "").startswith(f"{OWNER_REPO}@")]
    expr = ours["with"]["command"].strip()[3:-2]
    for event, command in (("pull_request", "check review"), ("schedule", "check")):
        assert evaluate(expr, {"github": {"event_name": event}}) == command
    comment = load_yaml(ROOT / "docs" / "github-comment-workflow.yml")
    assert comment["on"]["workflow_run"]["workflows"] == [flow["name"]]
    assert "concurrency" in comment


def test_no_checkout_keeps_its_credentials() -> None:
    """The review reads a pull request: nothing after the checkout needs its token."""
    checkouts = []
    for path in [*WORKFLOWS, *OWN_WORKFLOWS]:
        for name, job in load_yaml(path)["jobs"].items():
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    checkouts.append((path.name, name, step["with"]["persist-credentials"]))
    pushes = {(RELEASE.name, "tags")}  # the release job that pushes the floating tag
    assert checkouts and all(keep is ((f, j) in pushes) for f, j, keep in checkouts), checkouts


def _version() -> tuple[str, str]:
    version = PROJECT["version"]
    return f"v{version}", f"v{version.split('.')[0]}"


def test_the_docs_name_the_tags_a_release_makes() -> None:
    """`uses: ...@vX` is the floating major tag release_tags.sh moves; `rev:` and `git+...@`
    name the release's own tag vX.Y.Z, which the maintainer pushes to release."""
    release, major = _version()
    texts = {p.name: p.read_text() for p in [ROOT / "README.md", *WORKFLOWS]}
    named = set()
    for name, text in texts.items():
        for tag in re.findall(rf"{re.escape(OWNER_REPO)}@(v[\w.]+)", text):
            assert tag in (release, major), (name, tag)
            named.add(tag)
        for tag in re.findall(r"\brev: ([\w.-]*\w)", text):
            assert tag == release, (name, tag)
            named.add(tag)
    assert named == {release, major}
    flow = load_yaml(RELEASE)
    steps = "\n".join(s.get("run", "") for s in flow["jobs"]["tags"]["steps"])
    assert 'bash tools/release_tags.sh "$TAG"' in steps
    assert flow["jobs"]["tags"]["permissions"] == {"contents": "write"}


def test_the_release_workflow_publishes_with_trusted_publishing() -> None:
    flow = load_yaml(RELEASE)
    assert flow["on"] == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}
    publish = flow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["needs"] == "build"
    assert publish["steps"][-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    assert "with" not in publish["steps"][-1]  # no password: OpenID Connect
    build = "\n".join(s.get("run", "") for s in flow["jobs"]["build"]["steps"])
    assert "python -m build" in build and "twine check --strict" in build
    assert flow["jobs"]["tags"]["needs"] == "publish"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m build" in ci and "twine check --strict" in ci


def _release_repo(tmp_path: Path) -> tuple[Repo, Path]:
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = Repo(tmp_path / "work")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    repo.git("remote", "add", "origin", str(remote))
    return repo, remote


def _release(repo: Repo, version: str) -> subprocess.CompletedProcess[str]:
    repo.write("pyproject.toml", f'[project]\nname = "patchstack"\nversion = "{version}"\n')
    repo.git("add", "pyproject.toml")
    repo.git("commit", "-q", "-m", f"release {version}")
    repo.git("tag", f"v{version}")
    return subprocess.run(
        ["bash", str(ROOT / "tools" / "release_tags.sh"), f"v{version}"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )


def _remote_tags(remote: Path) -> dict[str, str]:
    out = subprocess.run(
        ["git", "ls-remote", "--tags", str(remote)], capture_output=True, text=True
    ).stdout
    pairs = (ln.split() for ln in out.splitlines())
    return {ref.removeprefix("refs/tags/"): sha for sha, ref in pairs}


def test_a_release_moves_the_floating_major_tag(tmp_path) -> None:
    repo, remote = _release_repo(tmp_path)
    proc = _release(repo, "0.1.0")
    assert proc.returncode == 0 and "v0 -> v0.1.0" in proc.stdout, proc.stderr
    assert _remote_tags(remote) == {"v0": repo.head()}
    assert _release(repo, "0.2.0").returncode == 0
    second = repo.head()
    assert _remote_tags(remote)["v0"] == second
    # A fix for an older minor version leaves v0 at the newest release.
    repo.git("checkout", "-q", "-b", "maint", "v0.1.0")
    proc = _release(repo, "0.1.1")
    assert proc.returncode == 0 and "v0.2.0 is newer" in proc.stdout
    assert _remote_tags(remote)["v0"] == second
    # A new major version gets its own tag; the old one stays.
    repo.git("checkout", "-q", "main")
    assert _release(repo, "1.0.0").returncode == 0
    assert _remote_tags(remote) == {"v0": second, "v1": repo.head()}
    # Not a release (a pre-release, a tag that is not the version): nothing moves.
    repo.git("tag", "v1.1.0rc1")
    run = ["bash", str(ROOT / "tools" / "release_tags.sh")]
    proc = subprocess.run([*run, "v1.1.0rc1"], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == 2 and "not a release tag" in proc.stderr
    repo.git("tag", "v1.2.0")
    proc = subprocess.run([*run, "v1.2.0"], cwd=repo.path, capture_output=True, text=True)
    assert proc.returncode == 2 and "not the version in pyproject.toml" in proc.stderr
    assert _remote_tags(remote) == {"v0": second, "v1": repo.head()}


def test_the_install_pins_every_runtime_dependency_and_runs_nothing_of_the_workspace() -> None:
    from packaging.requirements import Requirement

    pins = {}
    for line in (ROOT / "action" / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version and re.fullmatch(r"[\d.]+", version), line
            pins[name.lower()] = version
    for dep in PROJECT["dependencies"]:
        req = Requirement(dep)
        assert req.name.lower() in pins, dep
        assert req.specifier.contains(pins[req.name.lower()]), (dep, pins[req.name.lower()])
    assert "setuptools" in pins  # builds patchstack without fetching another version
    install = (ROOT / "action" / "install.sh").read_text()
    assert "--requirement" in install and "--only-binary :all:" in install
    assert "--no-deps --no-build-isolation" in install
    # Every interpreter the Action starts runs isolated: the workspace is a pull request's.
    runs = install + "\n".join(
        s.get("run", "") for s in load_yaml(ROOT / "action.yml")["runs"]["steps"]
    )
    starts = re.findall(r'(?:python"?|\$python"?)\s+(-\S+)?', runs)
    assert starts and all(flag == "-I" for flag in starts), starts
    assert not list((ROOT / "action").glob("*.sh"))[1:], "only install.sh is shell"


def test_the_action_finds_the_comment_review_writes() -> None:
    from patchstack.review.render import MARKER

    text = (ROOT / "action" / "ghcomment.py").read_text()
    assert f'MARKER = "{MARKER}"' in text


def test_expression_evaluator() -> None:
    ctx = {"inputs": {"command": "check review", "comment": "auto"}, "steps": {}}
    assert evaluate("contains(inputs.command, 'check')", ctx) is True
    assert evaluate("!cancelled() && inputs.comment != 'never'", ctx) is True
    assert evaluate("inputs.command == 'comment' || steps.x.outcome == 'success'", ctx) is False
