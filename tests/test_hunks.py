"""new -p (git's hunk selector, scripted answers) and new --from-commit (a commit made by hand
on top of the stack becomes a patch at its place)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line
from .test_edit import full, undo_restores


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    repo = make_repo(module_env.mktemp("hunks") / "fork", {"a.py": numbered(40, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 20\n", "a 20 base\n")
    repo.ps("new", "first", "--tag", "essential")
    repo.write("notes.txt", "untracked, mine\n")
    return repo.path


@pytest.fixture
def fork(built: Path, tmp_path: Path) -> Repo:
    return copy_repo(built, tmp_path / "fork")


def test_new_interactive_takes_only_the_chosen_hunks(fork: Repo) -> None:
    replace_line(fork, "a.py", "a 3\n", "a 3 essential\n")
    replace_line(fork, "a.py", "a 35\n", "a 35 optimization\n")
    fork.git("add", "a.py")  # staged edits start from HEAD too
    before = full(fork)
    result = fork.ps("new", "ess", "--tag", "essential", "-p", input="y\nn\n")
    assert "(1/2) Stage this hunk" in result.stdout
    assert "new patch ess.patch [essential]: 1 file(s)" in result.stdout
    patch = fork.read("patches/ess.patch")
    assert "+a 3 essential" in patch and "a 35" not in patch
    # The other hunk stays uncommitted, in the work tree only.
    assert "a 35 optimization" in fork.read("a.py")
    diff = fork.git("diff")
    assert "+a 35 optimization" in diff and "a 3 essential" not in diff
    assert fork.git("diff", "--cached") == ""
    assert names(fork) == ["first.patch", "ess.patch"]
    undo_restores(fork, before)
    result = fork.ps("new", "none", "--tag", "essential", "-p", input="n\nn\n", code=2)
    assert "no hunk was chosen" in result.stderr
    assert full(fork) == before
    fork.ps("new", "opt", "--tag", "optimization", "--interactive", "a.py", input="n\ny\n")
    assert "+a 35 optimization" in fork.read("patches/opt.patch")


def test_a_commit_made_by_hand_becomes_a_patch_at_its_place(fork: Repo) -> None:
    replace_line(fork, "a.py", "a 10\n", "a 10 by hand\n")
    fork.git("commit", "-qam", "Fix by hand\n\nWith a why.")
    replace_line(fork, "a.py", "a 30\n", "a 30 later\n")
    fork.git("commit", "-qam", "Later fix")
    replace_line(fork, "a.py", "a 38\n", "a 38 uncommitted\n")
    result = fork.ps("push", "--all", code=2)
    assert "on top of the applied patch" in result.stderr
    before, top = full(fork), fork.tree()
    result = fork.ps("new", "later", "--tag", "diagnostic", "--from-commit", "HEAD", code=2)
    assert "is not right above the top applied patch" in result.stderr
    result = fork.ps("new", "f", "--tag", "essential", "--from-commit", "HEAD~2", code=2)
    assert "already a patch" in result.stderr
    assert full(fork) == before
    fork.ps("new", "hand", "--tag", "essential", "--from-commit", "HEAD~1")
    assert fork.tree() == top and "a 38 uncommitted" in fork.read("a.py")
    assert fork.git("log", "-1", "--format=%s", "HEAD") == "Later fix\n"
    assert fork.git("log", "-1", "--format=%s%n%b", "HEAD~1").startswith(
        "Fix by hand\nWith a why.\n\nPatchstack-Patch: hand.patch\nPatchstack-Tag: essential"
    )
    patch = fork.read("patches/hand.patch")
    assert "Subject: [PATCH] Fix by hand\n\nWith a why.\n---\n" in patch
    assert "From: Test Author <author@example.org>" in patch
    undo_restores(fork, before)
    fork.ps("new", "hand", "--tag", "essential", "--from-commit", "HEAD~1")
    fork.ps("new", "later", "--tag", "diagnostic", "--from-commit", "HEAD", "-m", "Later")
    assert names(fork) == ["first.patch", "hand.patch", "later.patch"]
    status = json.loads(fork.ps("status", "--json").stdout)
    assert [p["matches"] for p in status["patches"]] == ["exact"] * 3
    fork.git("checkout", "a.py")
    fork.ps("pop", "--all")
    fork.ps("push", "--all")
    assert fork.tree() == top
