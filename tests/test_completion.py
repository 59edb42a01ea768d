"""Shell completion through 'patchstack completion SHELL', for 'patchstack' and for
'git patchstack' (git's own bash completion calls _git_patchstack), in a real bash."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.demo import build_sandbox

from .conftest import Repo

GIT_COMPLETION = Path("/usr/share/bash-completion/completions/git")

SCRIPT = r"""
source "$GIT_COMPLETION"
eval "$(patchstack completion bash)"
try() {
  COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}
  read -r -a COMP_WORDS <<< "$COMP_LINE"
  if [[ "$COMP_LINE" == *" " ]]; then COMP_WORDS+=(""); fi
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=()
  if [[ "${COMP_WORDS[0]}" == git ]]; then __git_wrap__git_main
  else _patchstack_completion patchstack; fi
  echo "${COMPREPLY[*]}"
}
try "git patchstack pu"
try "git patchstack show nccl"
try "git patchstack push --only ess"
try "git patchstack refresh --patch oea"
try "patchstack pop kimi"
try "patchstack graph --except opt"
"""


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Repo:
    return Repo(build_sandbox(str(tmp_path_factory.mktemp("completion") / "box")).fork)


def test_bash_completes_git_patchstack_commands_patch_names_and_tags(sandbox) -> None:
    if not GIT_COMPLETION.exists() or shutil.which("bash") is None:
        if os.environ.get("CI"):
            pytest.fail(f"{GIT_COMPLETION} is missing (the git package installs it)")
        pytest.skip("git's bash completion is not installed")
    env = dict(
        os.environ,
        GIT_COMPLETION=str(GIT_COMPLETION),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    )
    proc = subprocess.run(
        ["bash", "--norc", "-c", SCRIPT], cwd=sandbox.path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "push",
        "nccl-env-propagation.patch nccl-diagnostic-logging.patch",
        "essential",
        "oea-routing.patch",
        "kimi-k25-eagle3-delegation.patch",
        "optimization",
    ]


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
