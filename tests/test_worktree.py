"""worktree: linked worktrees with a subset of the series applied, side by side."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
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
    made = ess.head()
    fork.ps("push", "--all", cwd=ess.path)
    assert "b 3 diagnostic" in ess.read("b.py")
    log = fork.ps("log", cwd=ess.path).stdout  # its own operation log
    assert "patchstack push --all" in log and "worktree" not in log
    # Making it is an entry of the log where it was made from.
    assert "patchstack worktree ../essential --only essential  [done]" in fork.ps("log").stdout
    fork.ps("undo", cwd=ess.path)  # its own push, nothing of the user's checkout
    assert "diagnostic" not in ess.read("b.py") and ess.head() == made
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


def amend_top(tree: Repo, text: str) -> str:
    """Amend the top patch commit of an experiment tree (as 'git commit --amend' would)."""
    path = tree.git("show", "--name-only", "--format=", "HEAD").split()[0]
    tree.write(path, tree.read(path) + text)
    tree.git("commit", "-qa", "--amend", "--no-edit")
    return tree.head()


def test_remove_refuses_an_amended_patch_commit_and_undo_brings_a_forced_removal_back(
    fork: Repo, tmp_path: Path
) -> None:
    """Issue 26, item 2: the amended commit is refused like 'pop' refuses it; a forced
    removal is an entry of the user's log that keeps it, and 'undo' makes the tree again."""
    fork.ps("worktree", "../exp", "--only", "essential")
    exp = Repo(tmp_path / "exp")
    amended = amend_top(exp, "an amended line\n")
    assert "commit differs from its patch file" in fork.ps("status", cwd=exp.path, code=1).stdout
    before = user_state(fork)
    refused = fork.ps("worktree", "--remove", "../exp", code=2).stderr
    assert "the commit of ess.patch differs from its patch file" in refused
    assert "cd ../exp && patchstack refresh --patch ess.patch" in refused
    assert exp.head() == amended and user_state(fork) == before
    out = fork.ps("worktree", "--remove", "--force", "../exp").stdout
    assert "'patchstack undo' makes it again" in out and not exp.path.exists()
    assert "worktree --remove --force ../exp  [done]" in fork.ps("log").stdout
    kept = fork.git("rev-list", "refs/patchstack/oplog").split()
    assert amended in kept  # the journal keeps the commit (it is on no branch and no reflog)
    out = fork.ps("undo").stdout
    assert "made the worktree ../exp again" in out
    assert exp.head() == amended and exp.read("a.py").endswith("an amended line\n")
    assert user_state(fork) == before  # the user's own checkout is as it was
    assert json.loads(fork.ps("status", "--json", cwd=exp.path, code=1).stdout)["differs"] == [
        "ess.patch"
    ]
    fork.ps("redo")  # the removal again
    assert not exp.path.exists()


def test_remove_refuses_a_patch_the_series_does_not_have(fork: Repo, tmp_path: Path) -> None:
    fork.ps("worktree", "../exp")
    replace_line(fork, "b.py", "b 10 my edit\n", "b 10\n")
    fork.ps("pop", "--all")
    fork.ps("delete", "diag")  # the series no longer has it; ../exp still carries it
    refused = fork.ps("worktree", "--remove", "../exp", code=2).stderr
    assert "../exp has patches applied that the series does not have: diag.patch" in refused
    assert (tmp_path / "exp").is_dir()


def test_a_forced_removal_with_edits_comes_back_with_them(fork: Repo, tmp_path: Path) -> None:
    fork.ps("worktree", "../exp")
    exp = Repo(tmp_path / "exp")
    exp.write("a.py", exp.read("a.py") + "unsaved work\n")
    exp.write("new.txt", "untracked work\n")
    exp.git("add", "new.txt")
    fork.ps("worktree", "--remove", "--force", "../exp")
    fork.ps("undo")
    assert exp.read("a.py").endswith("unsaved work\n") and exp.read("new.txt") == "untracked work\n"
    assert exp.git("status", "--porcelain") == " M a.py\nA  new.txt\n"


def test_undo_where_it_was_made_takes_the_tree_back_and_nothing_else(
    fork: Repo, tmp_path: Path
) -> None:
    """Issue 26, item 9: undo in the user's checkout undoes the making of the tree, never the
    user's earlier, unrelated pop; the tree's own entries stay the tree's."""
    replace_line(fork, "b.py", "b 10 my edit\n", "b 10\n")
    fork.ps("pop", "--only", "diagnostic")
    popped = user_state(fork)
    fork.ps("worktree", "../exp")
    exp = Repo(tmp_path / "exp")
    assert "nothing to undo" in fork.ps("undo", cwd=exp.path, code=2).stderr
    assert (
        f"this worktree was made from {fork.path}" in fork.ps("undo", cwd=exp.path, code=2).stderr
    )
    out = fork.ps("undo").stdout
    assert "undid #" in out and "patchstack worktree ../exp" in out
    assert "removed the worktree ../exp" in out
    assert not exp.path.exists() and user_state(fork) == popped  # the pop stays
    fork.ps("redo")
    fork.ps("pop", cwd=exp.path)  # the tree's own entry
    refused = fork.ps("undo", code=2).stderr  # the tree changed since it was made
    assert "the worktree ../exp changed since 'patchstack worktree ../exp'" in refused
    assert exp.path.is_dir() and user_state(fork) == popped


def test_a_new_tree_at_the_path_of_a_plainly_removed_one_starts_its_own_log(
    fork: Repo, tmp_path: Path
) -> None:
    fork.ps("worktree", "../exp")
    exp = Repo(tmp_path / "exp")
    fork.ps("pop", cwd=exp.path)
    assert "patchstack pop" in fork.ps("log", cwd=exp.path).stdout
    fork.git("worktree", "remove", "--force", str(exp.path))  # git's own, not patchstack's
    fork.ps("worktree", "../exp")
    assert "pop" not in fork.ps("log", cwd=exp.path).stdout
    assert "nothing to undo" in fork.ps("undo", cwd=exp.path, code=2).stderr
    assert len(exp.git("log", "--oneline", "HEAD").splitlines()) == 4  # both patches applied


def test_a_failing_post_checkout_hook_is_named_and_fixing_it_works(
    fork: Repo, tmp_path: Path
) -> None:
    """Issue 26, item 11: the hook, not the folder, is the cause; the advised fix works."""
    hook = fork.path / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho 'no license server' >&2\nexit 3\n")
    hook.chmod(0o755)
    before = user_state(fork)
    refused = fork.ps("worktree", "../exp", code=2).stderr
    assert "the post-checkout hook failed (exit 3)" in refused and "no license server" in refused
    assert f"fix the hook ({hook})" in refused and "new or empty folder" not in refused
    assert not (tmp_path / "exp").exists() and fork.git("worktree", "list").count("\n") == 1
    assert user_state(fork) == before and "worktree" not in fork.ps("log").stdout
    hook.write_text("#!/bin/sh\nexit 0\n")
    fork.ps("worktree", "../exp")
    assert (tmp_path / "exp" / "a.py").exists()


def run(repo: Repo, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTACK_TEST_")}
    return subprocess.run(
        [sys.executable, "-m", "patchstack", *args],
        cwd=repo.path,
        env={**clean, **env},
        capture_output=True,
        text=True,
    )


def test_interrupted_making_and_removing_say_what_happened(fork: Repo, tmp_path: Path) -> None:
    """Issue 26, item 9: Ctrl-C while the tree is made says it was made and that undo here
    removes it (and it does); Ctrl-C while it is removed says it was removed; kill -9 while it
    is made leaves an interrupted entry that status names with the half-made tree, and undo
    removes it."""
    replace_line(fork, "b.py", "b 10 my edit\n", "b 10\n")
    fork.ps("pop", "--only", "diagnostic")
    popped = user_state(fork)
    exp = tmp_path / "exp"
    got = run(fork, "worktree", "../exp", PATCHSTACK_TEST_SIGNAL_AT="tree-made:INT")
    assert got.returncode == 130, got.stderr
    assert "the worktree ../exp was made (HEAD" in got.stderr
    assert "'patchstack undo' removes it" in got.stderr and "nothing was changed" not in got.stderr
    got = run(fork, "undo", PATCHSTACK_TEST_SIGNAL_AT="tree-removed:TERM")  # undo, interrupted
    assert (
        got.returncode == 143 and "the worktree ../exp was removed; 'patchstack redo'" in got.stderr
    )
    assert not exp.exists() and user_state(fork) == popped
    fork.ps("worktree", "../exp")
    got = run(fork, "worktree", "--remove", "../exp", PATCHSTACK_TEST_SIGNAL_AT="tree-removed:INT")
    assert got.returncode == 130, got.stderr
    assert "the worktree ../exp was removed; 'patchstack undo' makes it again" in got.stderr
    assert not exp.exists()
    fork.ps("undo")
    assert (exp / "a.py").exists()
    got = run(fork, "worktree", "--remove", "../exp", PATCHSTACK_TEST_KILL_AT="tree-removed")
    assert got.returncode == -signal.SIGKILL and not exp.exists()
    assert "it was removing the worktree ../exp" in fork.ps("status", code=None).stderr
    assert "made the worktree ../exp again" in fork.ps("undo").stdout
    assert (exp / "a.py").exists()
    fork.ps("worktree", "--remove", "../exp")
    got = run(fork, "worktree", "../exp", PATCHSTACK_TEST_KILL_AT="tree-added")
    assert got.returncode == -signal.SIGKILL
    assert exp.is_dir()  # half-made: checked out, no note
    status = fork.ps("status", code=None).stderr
    assert "'patchstack worktree ../exp'" in status and "was interrupted" in status
    assert "it was making the worktree ../exp, which may be half-made" in status
    assert "run 'patchstack undo'" in status
    inside = fork.ps("status", cwd=exp, code=None).stderr  # in the half-made tree itself
    assert "this worktree is half-made: 'patchstack worktree ../exp'" in inside
    assert f"run 'patchstack undo' in {fork.path}" in inside
    assert "half-made" in fork.ps("push", cwd=exp, code=2).stderr  # refused there
    assert "removed the worktree ../exp" in fork.ps("undo").stdout
    assert not exp.exists() and fork.git("worktree", "list").count("\n") == 1
    assert user_state(fork) == popped
