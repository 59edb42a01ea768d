"""git's terminal conventions: the pager (under a pseudo-terminal), the colour rules, -C,
aliases listed once, hints in the name the user ran, and a clear word inside .git."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox

from .conftest import Repo, copy_repo
from .pty_shell import run_in_pty

PYTHON = [sys.executable, "-m", "patchstack"]
BIN = str(Path(sys.executable).parent)


@pytest.fixture(scope="module")
def built(module_env) -> Repo:
    repo = Repo(build_sandbox(str(Path(module_env.mktemp("terminal")) / "box")).fork)
    repo.ps("push", "--only", "essential")
    return repo


@pytest.fixture
def fork(built: Repo, tmp_path: Path) -> Repo:
    return copy_repo(built.path, tmp_path / "fork")


def _user_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The sealed test environment as a user's: colour allowed, a pager that records what it
    was given (as 'less', first on PATH) and shows one line of it."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    for default in ("less", "pager"):  # git's default pager; Debian's git says "pager"
        pager = fake / default
        pager.write_text(
            '#!/bin/sh\n{ echo "pager: $0 $*"; echo "LESS=$LESS"; cat; } > "$PAGED"\necho PAGED\n'
        )
        pager.chmod(0o755)
    env = dict(os.environ, PATH=f"{fake}{os.pathsep}{BIN}{os.pathsep}{os.environ['PATH']}")
    for key in ("NO_COLOR", "PAGER", "GIT_PAGER", "LESS", "GIT_PAGER_IN_USE", "FORCE_COLOR"):
        env.pop(key, None)
    env.update(TERM="xterm", PAGED=str(tmp_path / "paged"), **extra)
    return env


def _paged(tmp_path: Path) -> str | None:
    found = tmp_path / "paged"
    if not found.exists():
        return None
    text = found.read_text()
    found.unlink()
    return text


def test_long_output_goes_through_less_FRX_on_a_terminal_only(fork: Repo, tmp_path) -> None:
    env = _user_env(tmp_path)
    code, screen = run_in_pty([*PYTHON, "show", "oea-routing"], fork.path, env, timeout=20)
    paged = _paged(tmp_path)
    assert code == 0 and "PAGED" in screen and "diff --git" not in screen
    assert paged is not None and paged.startswith("pager: ")
    assert "LESS=FRX" in paged and "+# Opportunistic" not in paged  # git's LESS, and colour:
    assert "\x1b[" in paged and "oea-routing" in paged
    # A pipe is not paged, nor a terminal with --no-pager; status pages only with -p.
    piped = subprocess.run(
        [*PYTHON, "show", "oea-routing"], cwd=fork.path, env=env, capture_output=True, text=True
    )
    assert "diff --git" in piped.stdout and _paged(tmp_path) is None
    code, screen = run_in_pty([*PYTHON, "--no-pager", "show", "oea-routing"], fork.path, env)
    assert code == 0 and "diff --git" in screen and _paged(tmp_path) is None
    code, screen = run_in_pty([*PYTHON, "status"], fork.path, env)
    assert code == 0 and "next:" in screen and _paged(tmp_path) is None
    code, screen = run_in_pty([*PYTHON, "-p", "status"], fork.path, env)
    paged = _paged(tmp_path)
    assert code == 0 and paged is not None and "next:" in paged and "next:" not in screen


def test_the_pager_is_git_s_choice_and_can_quit_early(fork: Repo, tmp_path) -> None:
    record = tmp_path / "paged"
    env = _user_env(tmp_path, PAGER=f"cat > {record}; echo PAGER")
    run_in_pty([*PYTHON, "series"], fork.path, env)
    assert "oea-routing" in (_paged(tmp_path) or "")  # $PAGER
    fork.git("config", "core.pager", f"cat > {record}; echo CORE")
    code, screen = run_in_pty([*PYTHON, "series"], fork.path, env)
    assert code == 0 and "CORE" in screen and "oea-routing" in (_paged(tmp_path) or "")
    env["GIT_PAGER"] = "cat"  # GIT_PAGER first; cat is no pager
    code, screen = run_in_pty([*PYTHON, "series"], fork.path, env)
    assert code == 0 and "oea-routing" in screen and _paged(tmp_path) is None
    # Under 'git -p patchstack' git's pager reads the output already: no second one.
    env = _user_env(tmp_path, GIT_PAGER_IN_USE="true")
    code, screen = run_in_pty([*PYTHON, "series"], fork.path, env)
    assert code == 0 and "oea-routing" in screen and _paged(tmp_path) is None
    assert "\x1b[" in screen  # coloured: a pager shows it
    # A pager the user leaves after one line of a patch longer than a pipe holds: no error,
    # no traceback (click ends the command quietly when its output's reader is gone).
    fork.write("big.txt", "".join(f"line {i} of a long file\n" for i in range(4000)))
    fork.ps("new", "big", "--tag", "diagnostic", "big.txt")
    fork.git("config", "--unset", "core.pager")
    env = _user_env(tmp_path, PAGER="head -n 1")
    code, screen = run_in_pty([*PYTHON, "show", "big"], fork.path, env)
    assert code in (0, 1) and screen.count("\n") == 1 and "big.patch" in screen, screen[:1000]


def test_colour_follows_git_s_rules(fork: Repo, tmp_path, monkeypatch) -> None:
    def coloured(*args: str) -> bool:
        return "\x1b[" in fork.ps(*args).stdout

    # On a terminal: colour, but not when TERM=dumb.
    env = _user_env(tmp_path, PAGER="cat")
    assert "\x1b[" in run_in_pty([*PYTHON, "status"], fork.path, env)[1]
    env["TERM"] = "dumb"
    code, screen = run_in_pty([*PYTHON, "status"], fork.path, env)
    assert code == 0 and "\x1b[" not in screen and "next:" in screen
    monkeypatch.delenv("NO_COLOR")
    assert not coloured("series")  # not a terminal
    assert coloured("series", "--color=always") and coloured("series", "--color")
    assert not coloured("--color=always", "series", "--color=never")  # the command's own wins
    fork.git("config", "color.ui", "always")
    assert coloured("series")
    monkeypatch.setenv("NO_COLOR", "1")
    assert coloured("series")  # configuration is stronger than NO_COLOR
    fork.git("config", "color.ui", "auto")
    assert not coloured("series")
    monkeypatch.delenv("NO_COLOR")
    for force in ("FORCE_COLOR", "CLICOLOR_FORCE"):
        monkeypatch.setenv(force, "1")
        assert coloured("series"), force
        monkeypatch.setenv(force, "0")
        assert not coloured("series"), force
        monkeypatch.delenv(force)
    fork.git("config", "color.patchstack", "never")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not coloured("series") and coloured("series", "--color=always")
    # The review takes --color after its arguments, as every command does.
    fork.git("add", "patches")
    fork.git("commit", "-q", "-m", "series")
    res = fork.ps("review", "HEAD", "HEAD", "--color=always")
    assert res.exit_code == 0


def test_colour_configured_is_the_users_from_the_configuration_the_command_read(
    fork: Repo, monkeypatch
) -> None:
    """The colour setting is taken from the command's one ``config --list`` (no git process
    of its own), as the user's own ``git config`` reads it there: not the ``color.ui=false``
    every git process of patchstack is pinned, but the caller's ``GIT_CONFIG_COUNT`` entries
    and ``git -c``'s (read last); ``[color] ui`` without a value is true (auto); the same
    from a subfolder."""

    def coloured(*args: str, cwd: Path | None = None) -> bool:
        return "\x1b[" in fork.ps(*args, cwd=cwd).stdout

    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert coloured("series")  # the pinned color.ui=false is not the user's
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "color.ui")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "never")
    assert not coloured("series") and not coloured("status")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'color.ui'='always'")  # git -c color.ui=always
    monkeypatch.delenv("FORCE_COLOR")
    assert coloured("series") and coloured("status")
    for key in ("GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"):
        monkeypatch.delenv(key)
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS")
    with open(fork.path / ".git" / "config", "a") as f:
        f.write("[color]\n\tpatchstack\n")  # true: auto, and a pipe is not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert coloured("series")
    fork.git("config", "color.patchstack", "never")
    assert not coloured("series")
    assert not coloured("-C", "srt", "series")  # found from a subfolder: the same repository


def test_C_runs_as_if_started_in_dir(fork: Repo) -> None:
    res = fork.ps("-C", "fork", "-C", "srt/models", "series", cwd=fork.path.parent)
    assert "oea-routing" in res.stdout
    res = fork.ps("-C", "", "-C", str(fork.path), "-C", "srt", "status", cwd=fork.path.parent)
    assert "applied: 3 of 7" in res.stdout
    res = fork.ps("-C", "nowhere", "series", code=2)
    assert "cannot change to 'nowhere': No such file or directory" in res.stderr


def test_aliases_are_listed_once_with_their_command(fork: Repo) -> None:
    shown = fork.ps("--help").stdout
    rows = [ln.split()[0].rstrip(",") for ln in shown.split("Commands:")[1].splitlines() if ln]
    assert "delete, drop " in shown and "series, list " in shown
    assert "drop" not in rows and "list" not in rows and len(rows) == len(set(rows))


def test_hints_name_git_patchstack_when_git_runs_it(fork: Repo, tmp_path) -> None:
    env = _user_env(tmp_path)
    res = subprocess.run(
        ["git", "patchstack", "push", "--bogus"], cwd=fork.path, env=env, capture_output=True
    )
    assert res.returncode == 2
    assert b"(see 'git patchstack push --help')" in res.stderr, res.stderr
    fork.write("srt/models/kimi_k25.py", "edited\n")
    res = subprocess.run(
        ["git", "patchstack", "status"], cwd=fork.path, env=env, capture_output=True
    )
    assert b"next: 'git patchstack " in res.stdout, res.stdout
    plain = fork.ps("status").stdout
    assert "next: 'patchstack " in plain


def test_inside_the_git_directory_says_so(fork: Repo) -> None:
    res = fork.ps("status", code=2, cwd=fork.path / ".git" / "refs")
    assert f"inside the git directory {fork.path}/.git, not in a work tree" in res.stderr
    assert f"hint: run patchstack in the work tree: cd {fork.path}" in res.stderr
