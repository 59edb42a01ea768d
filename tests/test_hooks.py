"""The pre-commit hooks (.pre-commit-hooks.yaml), run on real repositories: their commands as
pre-commit runs them (fast), and once through pre-commit itself (slow: it builds the hook's
own virtual environment from this repository)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import upstream_pull

from .action_runner import ROOT, load_yaml
from .conftest import Repo, pushed_sandbox

HOOKS = {h["id"]: h for h in load_yaml(ROOT / ".pre-commit-hooks.yaml")}


def run_hook(hook_id: str, repo: Repo) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it: its entry and args, no file names, in the repository;
    in this process (the entry's program is the console script, `cli.main`, that `Repo.ps`
    drives). The slow test below runs the hooks through pre-commit itself."""
    hook = HOOKS[hook_id]
    argv = shlex.split(hook["entry"]) + list(hook.get("args", []))
    if hook.get("pass_filenames", True) is not False:
        raise AssertionError(f"{hook_id} would get file names")
    assert argv[0] == "patchstack", argv
    result = repo.ps(*argv[1:], code=None)
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def test_the_hooks_run_whatever_the_layout_and_at_the_right_stages() -> None:
    for hook in HOOKS.values():
        assert hook["always_run"] is True and hook["pass_filenames"] is False
        assert "files" not in hook  # patches/ is often untracked, or elsewhere (patchstack.dir)
        assert hook["language"] == "python" and hook["require_serial"] is True
    # At the pre-commit stage the commit being made does not exist yet: both judge commits,
    # so both run where the commits exist (pre-push), and by hand.
    for hook in HOOKS.values():
        assert hook["stages"] == ["pre-push", "manual"]


@pytest.fixture
def fork(tmp_path) -> tuple[Repo, object]:
    box = pushed_sandbox(tmp_path)
    return Repo(box.fork), box


def test_status_fails_when_the_stack_disagrees_with_the_series(fork) -> None:
    repo, _box = fork
    assert run_hook("patchstack-status", repo).returncode == 0
    # A patch commit amended by hand: it no longer matches its patch file.
    path = "srt/layers/communicator.py"
    repo.write(path, repo.read(path) + "# amended\n")
    repo.git("commit", "-q", "-a", "--amend", "--no-edit")
    proc = run_hook("patchstack-status", repo)
    assert proc.returncode == 1 and "differs from its patch file" in proc.stdout
    repo.git("reset", "-q", "--hard", "HEAD@{1}")
    assert run_hook("patchstack-status", repo).returncode == 0
    # A plain commit on top of the stack.
    repo.write("NOTES", "x\n")
    repo.git("add", "NOTES")
    repo.git("commit", "-q", "-m", "notes")
    proc = run_hook("patchstack-status", repo)
    assert proc.returncode == 1 and "that are not patches cover the stack" in proc.stdout
    repo.git("reset", "-q", "--hard", "HEAD~1")
    # The series file reordered by hand: the stack is out of its order.
    series = repo.path / "patches" / "series"
    lines = series.read_text().splitlines(keepends=True)
    first = next(i for i, ln in enumerate(lines) if ln.endswith("# essential\n"))
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    series.write_text("".join(lines))
    proc = run_hook("patchstack-status", repo)
    assert proc.returncode == 1 and "applied in another order than the series" in proc.stdout


def test_hooks_honour_patchstack_dir(fork) -> None:
    repo, _box = fork
    shutil.move(repo.path / "patches", repo.path / ".series")
    proc = run_hook("patchstack-status", repo)
    assert proc.returncode == 2 and "no series file at patches/series" in proc.stderr
    repo.git("config", "patchstack.dir", ".series")
    assert run_hook("patchstack-status", repo).returncode == 0
    assert run_hook("patchstack-check", repo).returncode == 0


def test_check_at_pre_push_fails_when_upstream_moved_under_a_patch(fork) -> None:
    repo, box = fork
    upstream_pull(box)
    assert run_hook("patchstack-check", repo).returncode == 0  # not fetched yet
    repo.git("fetch", "-q")  # the branch's upstream, origin/main, moved
    proc = run_hook("patchstack-check", repo)
    assert proc.returncode == 1 and "nccl-diagnostic-logging.patch" in proc.stdout + proc.stderr


def _hook_source(tmp_path: Path) -> tuple[Path, str]:
    """This project's tracked files (as they are now) committed in a repository of their own:
    what a fork's .pre-commit-config.yaml names with repo: and rev:."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, text=True
    )
    src = tmp_path / "hooks-src"
    if listed.returncode == 0:
        for rel in filter(None, listed.stdout.split("\0")):
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel, follow_symlinks=False)
    else:  # the unpacked sdist: no git, the whole folder is the project
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "hooks"]):
        subprocess.run(["git", *args], cwd=src, check=True, capture_output=True)
    rev = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=src, check=True, capture_output=True, text=True
    ).stdout.strip()
    return src, rev


@pytest.mark.slow
def test_pre_commit_runs_the_hooks_at_push_where_the_commits_exist(fork, tmp_path) -> None:
    """The hooks installed by pre-commit itself, from a repo: and rev: as a fork names them,
    for the commit and the push stages; then real commits and real pushes. A commit made by
    hand on top of the stack is the push's business: no commit is refused for the one
    before it, and the push that would publish it is."""
    pytest.importorskip("pre_commit")
    repo, box = fork
    src, rev = _hook_source(tmp_path)
    config = tmp_path / "pre-commit-config.yaml"  # outside the work tree: not an edit
    config.write_text(
        f"repos:\n  - repo: {src}\n    rev: {rev}\n    hooks:\n"
        "      - id: patchstack-status\n      - id: patchstack-check\n"
    )
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), PRE_COMMIT_COLOR="never")
    env.pop("NO_COLOR", None)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=repo.path, env=env, capture_output=True, text=True)

    hook_types = ["--hook-type", "pre-commit", "--hook-type", "pre-push"]
    proc = run(sys.executable, "-m", "pre_commit", "install", "-c", str(config), *hook_types)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    remote = tmp_path / "published.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo.git("remote", "add", "published", str(remote))

    # Two commits by hand on top of the stack: pre-commit judges neither (the first one did
    # not exist when its hook ran, so the second would be refused for it).
    for name in ("NOTES", "TODO"):
        repo.write(name, f"{name}\n")
        repo.git("add", name)
        proc = run("git", "commit", "-q", "-m", f"add {name}")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run("git", "push", "-q", "published", "HEAD:refs/heads/fork")
    assert proc.returncode == 1 and "patchstack status" in proc.stdout, proc.stdout + proc.stderr
    assert "that are not patches cover the stack" in proc.stdout
    assert repo.git("ls-remote", str(remote)) == ""  # nothing was published
    repo.git("reset", "-q", "--hard", "HEAD~2")

    # Upstream moved under a patch: the check refuses the push, with the conflict report;
    # by hand (the manual stage) too; the commit stage runs neither hook.
    before = repo.git("rev-parse", "origin/main").strip()
    upstream_pull(box)
    repo.git("fetch", "-q", "origin")
    proc = run("git", "push", "-q", "published", "HEAD:refs/heads/fork")
    assert proc.returncode == 1 and "Failed" in proc.stdout, proc.stdout + proc.stderr
    assert re.search(r"conflict +nccl-diagnostic-logging\.patch", proc.stdout), proc.stdout
    manual = [sys.executable, "-m", "pre_commit", "run", "-c", str(config), "--hook-stage"]
    proc = run(*manual, "manual")
    assert proc.returncode == 1 and "nccl-diagnostic-logging.patch" in proc.stdout
    proc = run(*manual, "pre-commit")
    assert proc.returncode == 0 and "patchstack" not in proc.stdout, proc.stdout

    # Where the stack agrees with the series and the series applies, the push goes through.
    repo.git("update-ref", "refs/remotes/origin/main", before)
    proc = run("git", "push", "-q", "published", "HEAD:refs/heads/fork")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert repo.head() in repo.git("ls-remote", str(remote))
