"""worktree: linked worktrees with a subset of the series applied, side by side."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import SEALED, Repo, make_repo, numbered, replace_line


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two upstream commits; an essential and a diagnostic patch, both applied, and a user
    who has an uncommitted edit and an untracked file. Each test gets a copy."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in SEALED.items():
            mp.setenv(key, value)
        root = tmp_path_factory.mktemp("worktree")
        files = {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")}
        repo = make_repo(root / "fork", files)
        repo.git("tag", "old")
        replace_line(repo, "b.py", "b 20\n", "b 20 upstream\n")
        repo.commit_all("upstream moves")
        repo.ps("init")
        replace_line(repo, "a.py", "a 3\n", "a 3 essential\n")
        repo.ps("new", "ess", "--tag", "essential")
        replace_line(repo, "b.py", "b 3\n", "b 3 diagnostic\n")
        repo.ps("new", "diag", "--tag", "diagnostic")
        replace_line(repo, "b.py", "b 10\n", "b 10 my edit\n")
        repo.write("notes.txt", "mine\n")
        return repo.path


@pytest.fixture
def fork(template: Path, tmp_path: Path) -> Repo:
    shutil.copytree(template, tmp_path / "fork", symlinks=True)
    return Repo(tmp_path / "fork")


def user_state(repo: Repo) -> tuple[object, ...]:
    git_dir = repo.path / ".git"
    return (
        repo.state(),
        (git_dir / "index").read_bytes(),
        repo.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"),
        repo.git("log", "-g", "--format=%H", "HEAD"),
    )


def test_two_subsets_side_by_side_each_an_ordinary_stack(fork: Repo, tmp_path: Path) -> None:
    before = user_state(fork)
    out = fork.ps("worktree", "../essential", "--only", "essential").stdout
    assert "made ../essential: 1 patch(es) on the series base" in out
    assert "  + ess.patch" in out and "next: cd ../essential && patchstack status" in out
    fork.ps("worktree", "../everything")
    assert user_state(fork) == before
    ess, every = Repo(tmp_path / "essential"), Repo(tmp_path / "everything")
    assert "a 3 essential" in ess.read("a.py") and "diagnostic" not in ess.read("b.py")
    assert "b 3 diagnostic" in every.read("b.py") and "my edit" not in every.read("b.py")
    assert not (ess.path / "notes.txt").exists()
    # patchstack works there, on the same series, and says exactly what is applied.
    status = json.loads(fork.ps("status", "--json", cwd=ess.path).stdout)
    assert status["applied"] == ["ess.patch"] and status["unapplied"] == ["diag.patch"]
    assert status["differs"] == [] and status["edits"] == [] and status["branch"] is None
    assert status["stack_base"] == status["base"]
    fork.ps("push", "--all", cwd=ess.path)
    assert "b 3 diagnostic" in ess.read("b.py")
    log = fork.ps("log", cwd=ess.path).stdout  # its own operation log, from its making on
    assert "patchstack push --all" in log
    assert "patchstack worktree ../essential --only essential  [done]" in log
    fork.ps("undo", "2", cwd=ess.path)  # back to the bare base it was made on
    assert "essential" not in ess.read("a.py") and ess.head() == status["stack_base"]
    fork.ps("redo", cwd=ess.path)
    assert "b 3 diagnostic" in ess.read("b.py")
    fork.ps("pop", "--only", "diagnostic", cwd=ess.path)
    assert user_state(fork) == before
    assert "push --all" not in fork.ps("log").stdout  # not in the user's log
    # The list names both, with what is applied now.
    listed = json.loads(fork.ps("worktree", "--list", "--json").stdout)
    assert [(Path(e["path"]).name, e["patches"], e["selection"]) for e in listed] == [
        ("essential", ["ess.patch"], ["--only", "essential"]),
        ("everything", ["ess.patch", "diag.patch"], []),
    ]
    text = fork.ps("worktree", "--list").stdout
    assert "../essential  1 patch(es) on " in text and "(--only essential)" in text
    fork.ps("worktree", "--remove", "../essential")
    fork.ps("worktree", "--remove", "../everything")
    assert not ess.path.exists() and not every.path.exists()
    assert "no worktrees made by" in fork.ps("worktree", "--list").stdout
    assert user_state(fork) == before
    assert fork.git("for-each-ref", "refs/patchstack/worktrees") == ""  # their logs went too


def test_onto_an_older_base(fork: Repo, tmp_path: Path) -> None:
    out = fork.ps("worktree", "../old", "--onto", "old", "--except", "diagnostic").stdout
    assert "1 patch(es) on old (" in out
    old = Repo(tmp_path / "old")
    assert "a 3 essential" in old.read("a.py") and "upstream" not in old.read("b.py")
    status = json.loads(fork.ps("status", "--json", cwd=old.path).stdout)
    assert status["applied"] == ["ess.patch"]
    assert status["stack_base"] == fork.git("rev-parse", "old").strip() != status["base"]


def test_remove_refuses_to_lose_edits_or_commits(fork: Repo, tmp_path: Path) -> None:
    fork.ps("worktree", "../exp", "--only", "essential")
    exp = Repo(tmp_path / "exp")
    exp.write("a.py", exp.read("a.py") + "an experiment\n")
    result = fork.ps("worktree", "--remove", "../exp", code=2)
    assert "../exp has uncommitted edits or untracked files: a.py" in result.stderr
    exp.git("commit", "-qam", "an experiment")
    result = fork.ps("worktree", "--remove", "../exp", code=2)
    assert "1 commit(s) that are on no branch and are not patches" in result.stderr
    assert exp.read("a.py").endswith("an experiment\n")
    exp.git("branch", "keep")
    fork.ps("worktree", "--remove", "../exp")
    assert not exp.path.exists()
    assert "an experiment" in fork.git("log", "-1", "--format=%s", "keep")


def test_remove_with_force_and_a_folder_already_gone(fork: Repo, tmp_path: Path) -> None:
    fork.ps("worktree", "../a")
    (tmp_path / "a" / "a.py").write_text("edited\n")
    fork.ps("worktree", "--remove", "--force", "../a")
    fork.ps("worktree", "../b")
    shutil.rmtree(tmp_path / "b")
    assert "[folder missing" in fork.ps("worktree", "--list").stdout
    fork.ps("worktree", "--remove", "../b")
    assert fork.git("worktree", "list").count("\n") == 1


def test_refusals_change_nothing(fork: Repo, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    before = user_state(fork)
    assert "exists and is not an empty folder" in fork.ps("worktree", "../full", code=2).stderr
    assert "inside the work tree" in fork.ps("worktree", "inner", code=2).stderr
    assert "unknown revision" in fork.ps("worktree", "../x", "--onto", "nope", code=2).stderr
    assert "unknown tag 'opt'" in fork.ps("worktree", "../x", "--only", "opt", code=2).stderr
    assert "give the worktree's folder" in fork.ps("worktree", code=2).stderr
    assert "--list takes no DIR" in fork.ps("worktree", "--list", "../x", code=2).stderr
    fork.git("worktree", "add", "-q", "--detach", str(tmp_path / "plain"))
    refused = fork.ps("worktree", "--remove", "../plain", code=2).stderr
    assert "was not made by 'patchstack worktree'" in refused
    assert "is not a linked worktree" in fork.ps("worktree", "--remove", "../nope", code=2).stderr
    assert user_state(fork) == before
    assert not (tmp_path / "x").exists() and not (fork.path / "inner").exists()


def test_a_patch_that_does_not_apply_there_is_reported_and_nothing_made(
    fork: Repo, tmp_path: Path
) -> None:
    replace_line(fork, "b.py", "b 10 my edit\n", "b 10\n")
    fork.ps("pop", "--all")
    replace_line(fork, "a.py", "a 3\n", "a 3 upstream\n")
    fork.commit_all("upstream changes line 3")
    result = fork.ps("worktree", "../new", "--onto", "HEAD", "--only", "essential", code=1)
    assert "conflict in patch ess.patch" in result.stderr and "a.py" in result.stderr
    assert not (tmp_path / "new").exists()
    assert os.listdir(tmp_path).count("new") == 0
    assert fork.git("worktree", "list").count("\n") == 1
