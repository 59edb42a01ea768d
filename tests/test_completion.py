"""Shell completion through 'patchstack completion SHELL', for 'patchstack' and for
'git patchstack' (git's own bash completion calls _git_patchstack), in a real interactive
bash under a pseudo-terminal."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox

from .conftest import Repo
from .pty_shell import Bash

GIT_COMPLETION = Path("/usr/share/bash-completion/completions/git")


@pytest.fixture(scope="module")
def sandbox(module_env) -> Repo:
    box = Path(module_env.mktemp("completion")) / "box"
    repo = Repo(build_sandbox(str(box)).fork)
    repo.ps("push", "--only", "essential")
    (box / "patches-before").mkdir()
    return repo


def typed_at_a_terminal(sandbox: Repo, lines: tuple[str, ...]) -> dict[str, tuple[str, list[str]]]:
    """Each line typed at an interactive bash in a pty, then TAB as a user presses it: the
    line readline made of it (it completes paths itself when patchstack asks it to) and the
    candidates it listed."""
    if not GIT_COMPLETION.exists() or shutil.which("bash") is None:
        if os.environ.get("CI"):
            pytest.fail(f"{GIT_COMPLETION} is missing (the git package installs it)")
        pytest.skip("git's bash completion is not installed")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    setup = [f"source {GIT_COMPLETION}", 'eval "$(patchstack completion bash)"']
    bash = Bash(sandbox.path, env, setup)
    try:
        return {typed: bash.complete(typed) for typed in lines}
    finally:
        bash.close()


def test_bash_completes_commands_patch_names_and_tags(sandbox) -> None:
    """For 'patchstack' and 'git patchstack'; pop offers the applied patches, push the
    others."""
    got = typed_at_a_terminal(
        sandbox,
        (
            "git patchstack pu",
            "git patchstack show nccl",
            "git patchstack push --only ess",
            "patchstack pop ",
            "git patchstack push ",
        ),
    )
    assert {typed: line for typed, (line, _) in got.items()} == {
        "git patchstack pu": "git patchstack push ",
        "git patchstack show nccl": "git patchstack show nccl-",
        "git patchstack push --only ess": "git patchstack push --only essential ",
        "patchstack pop ": "patchstack pop ",
        "git patchstack push ": "git patchstack push ",
    }
    assert got["git patchstack show nccl"][1] == [  # readline sorts git's
        "nccl-diagnostic-logging.patch",
        "nccl-env-propagation.patch",
    ]
    assert got["patchstack pop "][1] == [
        "kimi-k25-eagle3-delegation.patch",
        "deepseek-v2-eagle3-capture.patch",
        "communicator-sm120.patch",
    ]
    assert got["git patchstack push "][1] == [
        "mla-kv-gather-then-cast.patch",
        "nccl-diagnostic-logging.patch",
        "nccl-env-propagation.patch",
        "oea-routing.patch",
    ]


def test_bash_completes_paths_and_revisions(sandbox) -> None:
    got = typed_at_a_terminal(
        sandbox,
        (
            "patchstack new x --tag essential sr",
            "git patchstack new x --tag essential sr",
            "patchstack review ../pat",
            "patchstack --dir pat",
            "patchstack graph -o REA",
            "patchstack worktree ../up",
            "patchstack import quilt pat",
            "patchstack -C ../fo",
            "patchstack check --onto ori",
            "patchstack import commits origin/main..ma",
        ),
    )
    assert {typed: line for typed, (line, _) in got.items()} == {
        "patchstack new x --tag essential sr": "patchstack new x --tag essential srt/",
        "git patchstack new x --tag essential sr": "git patchstack new x --tag essential srt/",
        "patchstack review ../pat": "patchstack review ../patches-before/",
        "patchstack --dir pat": "patchstack --dir patches/",
        "patchstack graph -o REA": "patchstack graph -o README.md ",
        "patchstack worktree ../up": "patchstack worktree ../upstream/",
        "patchstack import quilt pat": "patchstack import quilt patches/",
        "patchstack -C ../fo": "patchstack -C ../fork/",
        "patchstack check --onto ori": "patchstack check --onto origin/",
        "patchstack import commits origin/main..ma": "patchstack import commits origin/main..main ",
    }
    assert got["patchstack check --onto ori"][1] == ["origin/HEAD", "origin/main"]


def test_every_shell_gets_a_script_with_the_git_side(sandbox) -> None:
    for shell, git_side in (
        ("bash", "_git_patchstack()"),
        ("zsh", "_git-patchstack()"),
        ("fish", "__fish_seen_subcommand_from patchstack"),
    ):
        out = sandbox.ps("completion", shell).stdout
        assert "_PATCHSTACK_COMPLETE" in out and git_side in out, shell
    res = sandbox.ps("completion", "tcsh", code=2)
    assert "patchstack: error: invalid value for '{bash|zsh|fish}'" in res.stderr
    assert "hint: see 'patchstack completion --help'" in res.stderr
