"""Progress on a terminal (under a pseudo-terminal): each step of a long command on its own
line, the work tree's writing one of them, nothing for a quick command, nothing in a pipe.
``PATCHSTACK_PROGRESS_DELAY=0`` shows it from the start (by default, after a second)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox

from .conftest import Repo, copy_repo
from .pty_shell import run_in_pty, screen

PYTHON = [sys.executable, "-m", "patchstack"]


@pytest.fixture(scope="module")
def built(module_env) -> Repo:
    repo = Repo(build_sandbox(str(Path(module_env.mktemp("progress")) / "box")).fork)
    repo.ps("push", "--only", "essential")
    return repo


@pytest.fixture
def fork(built: Repo, tmp_path: Path) -> Repo:
    return copy_repo(built.path, tmp_path / "fork")


def _env(**extra: str) -> dict[str, str]:
    return dict(os.environ, TERM="xterm", PAGER="cat", **extra)


def _steps(lines: list[str], command: str) -> list[str]:
    """The finished steps shown: 'pop: writing the work tree' for 'pop: writing ...: 0.3 s,
    done.'; a counted one with its count."""
    found = []
    for line in lines:
        m = re.fullmatch(rf"{command}: (.*?): (?:\d+\.\d s|(\d+% \(\d+/\d+\))), done\.", line)
        if m:
            found.append(m.group(1) + (f" {m.group(2)}" if m.group(2) else ""))
    return found


def test_every_step_of_a_long_command_has_its_line(fork: Repo) -> None:
    env = _env(PATCHSTACK_PROGRESS_DELAY="0")
    code, seen = run_in_pty([*PYTHON, "pop", "--all"], fork.path, env)
    lines = screen(seen)
    assert code == 0, seen
    assert _steps(lines, "pop") == [
        "checking the applied commits",
        "saving the state before",
        "writing the work tree",
        "recording the operation",
    ], lines
    assert lines.index(next(ln for ln in lines if ln.startswith("popped 3 patch(es)"))) > 3
    code, seen = run_in_pty([*PYTHON, "push", "--all"], fork.path, env)
    steps = _steps(screen(seen), "push")
    assert code == 0 and steps[0] == "checking the applied commits", seen
    assert re.fullmatch(r"building commits 100% \((\d+)/\1\)", steps[1]), steps
    assert steps[2:] == [
        "saving the state before",
        "writing the work tree",
        "recording the operation",
    ]
    code, seen = run_in_pty([*PYTHON, "undo"], fork.path, env)
    assert "writing the work tree" in _steps(screen(seen), "undo"), seen


def test_a_quick_command_or_a_pipe_shows_none(fork: Repo) -> None:
    code, seen = run_in_pty([*PYTHON, "status"], fork.path, _env())
    assert code == 0 and "next:" in seen and "status:" not in seen and "done." not in seen
    piped = subprocess.run(
        [*PYTHON, "pop", "--all"],
        cwd=fork.path,
        env=_env(PATCHSTACK_PROGRESS_DELAY="0"),
        capture_output=True,
        text=True,
    )
    assert piped.returncode == 0 and piped.stderr == "" and "popped" in piped.stdout
