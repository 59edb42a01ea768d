"""The pre-commit hooks (.pre-commit-hooks.yaml), run on real repositories: their commands as
pre-commit runs them (fast), and once through pre-commit itself (slow: it builds the hook's
own virtual environment from this repository)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox, upstream_pull

from .action_runner import ROOT, load_yaml
from .conftest import Repo

HOOKS = {h["id"]: h for h in load_yaml(ROOT / ".pre-commit-hooks.yaml")}


def run_hook(hook_id: str, repo: Repo) -> subprocess.CompletedProcess[str]:
    """The hook as pre-commit runs it: its entry and args, no file names, in the repository."""
    hook = HOOKS[hook_id]
    argv = shlex.split(hook["entry"]) + list(hook.get("args", []))
    if hook.get("pass_filenames", True) is not False:
        raise AssertionError(f"{hook_id} would get file names")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(argv, cwd=repo.path, env=env, capture_output=True, text=True)


def test_the_hooks_run_whatever_the_layout_and_at_the_right_stages() -> None:
    for hook in HOOKS.values():
        assert hook["always_run"] is True and hook["pass_filenames"] is False
        assert "files" not in hook  # patches/ is often untracked, or elsewhere (patchstack.dir)
        assert hook["language"] == "python" and hook["require_serial"] is True
    assert "pre-push" in HOOKS["patchstack-check"]["stages"]
    assert "pre-commit" not in HOOKS["patchstack-check"]["stages"]
    assert {"pre-commit", "pre-push"} <= set(HOOKS["patchstack-status"]["stages"])


@pytest.fixture
def fork(tmp_path) -> tuple[Repo, object]:
    box = build_sandbox(str(tmp_path / "sandbox"))
    repo = Repo(box.fork)
    repo.ps("push", "--all")
    return repo, box


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


@pytest.mark.slow
def test_pre_commit_runs_the_hooks_from_this_repository(fork, tmp_path) -> None:
    """pre-commit try-repo: the hook environment is built from this repository's own files
    (as a fork's .pre-commit-config.yaml would get them), then both hooks run."""
    pytest.importorskip("pre_commit")
    repo, box = fork
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), PRE_COMMIT_COLOR="never")
    env.pop("NO_COLOR", None)

    def pre_commit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), *args, "--all-files"],
            cwd=repo.path,
            env=env,
            capture_output=True,
            text=True,
        )

    proc = pre_commit("patchstack-status")
    assert proc.returncode == 0 and "Passed" in proc.stdout, proc.stdout + proc.stderr
    upstream_pull(box)
    repo.git("fetch", "-q")
    proc = pre_commit("patchstack-check", "--hook-stage", "pre-push")
    assert proc.returncode == 1 and "Failed" in proc.stdout, proc.stdout + proc.stderr
    assert "conflict in patch nccl-diagnostic-logging.patch" in proc.stdout
