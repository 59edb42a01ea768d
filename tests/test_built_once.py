"""`built_once`, the shared set-ups: each call gets a sealed copy of its own, whose git links
(a clone's remote, a linked worktree) point into the copy and whose stat data git trusts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo

BUILDS: list[Path] = []


@built_once
def clone_and_worktree(tmp_path: Path) -> tuple[Repo, Repo]:
    BUILDS.append(tmp_path)
    up = make_repo(tmp_path / "up", {"a.txt": "a\n"})
    subprocess.run(["git", "clone", "-q", str(up.path), str(tmp_path / "fork")], check=True)
    fork = Repo(tmp_path / "fork")
    fork.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"))
    return up, fork


def test_each_call_gets_its_own_copy_linked_to_itself(tmp_path: Path) -> None:
    up1, fork1 = clone_and_worktree(tmp_path / "one")
    up2, fork2 = clone_and_worktree(tmp_path / "two")
    assert len(BUILDS) == 1 and fork1.path == tmp_path / "one" / "fork"
    assert fork1.git("remote", "get-url", "origin").strip() == str(up1.path)
    assert str(tmp_path / "one" / "side") in fork1.git("worktree", "list")
    assert Repo(tmp_path / "one" / "side").git("rev-parse", "--git-common-dir").strip() == str(
        fork1.path / ".git"
    )
    assert fork1.git("diff-files") == ""  # the copy's stat data is git's again
    up1.write("a.txt", "changed\n")
    up1.commit_all("upstream changes a.txt")
    fork1.git("pull", "-q", "--ff-only")
    assert fork1.read("a.txt") == "changed\n"
    assert fork2.read("a.txt") == "a\n" and up2.read("a.txt") == "a\n"
    assert fork2.git("status", "--porcelain") == ""


@built_once
def leaves_its_path(tmp_path: Path) -> None:
    (tmp_path / "where.txt").write_text(str(tmp_path))


def test_a_set_up_that_writes_its_path_elsewhere_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="holds its folder's path"):
        leaves_its_path(tmp_path)
