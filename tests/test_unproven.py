"""Never claim, fold or drop what is not proven: foreign git operations in progress, commits and
patch files changed by hand, commits on top of the stack, and base lines that name no commit."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line


@built_once
def fork_with_upstream(tmp_path, conflict: bool = True) -> Repo:
    """main carries patch mine.patch (a.py line 10); upstream changes line 10 too (conflict)
    or line 30 (clean), in a clone that main tracks as origin/main."""
    up = make_repo(tmp_path / "upstream", {"a.py": numbered(40, "a"), "b.py": numbered(40, "b")})
    subprocess.run(["git", "clone", "-q", str(up.path), str(tmp_path / "fork")], check=True)
    repo = Repo(tmp_path / "fork")
    repo.ps("init")
    replace_line(repo, "a.py", "a 10\n", "a 10 fork\n")
    repo.ps("new", "mine", "--tag", "essential", "-m", "Mine")
    replace_line(repo, "b.py", "b 5\n", "b 5 diag\n")
    repo.ps("new", "diag", "--tag", "diagnostic", "-m", "Diag")
    line = "a 10\n" if conflict else "a 30\n"
    replace_line(up, "a.py", line, line.replace("\n", " upstream\n"))
    up.git("commit", "-qam", "upstream edits a.py")
    repo.git("fetch", "-q")
    return repo


def test_a_git_merge_in_progress_stops_every_command(tmp_path) -> None:
    repo = fork_with_upstream(tmp_path)
    proc = subprocess.run(
        ["git", "-c", "pull.rebase=false", "pull", "-q", "--no-edit"],
        cwd=repo.path, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode != 0 and "CONFLICT" in proc.stdout + proc.stderr
    text = repo.read("a.py")
    repo.write(
        "a.py",
        text.split("<<<<<<<")[0]
        + "a 10 fork upstream\n"
        + text.split(">>>>>>> ")[1].split("\n", 1)[1],
    )
    repo.git("add", "a.py")  # resolved, not committed: MERGE_HEAD is still there
    before = repo.state()
    for args in (("refresh",), ("push",), ("pop",), ("new", "x", "--tag", "essential"),
                 ("refresh", "--onto", "origin/main"), ("undo",)):  # fmt: skip
        result = repo.ps(*args, code=2)
        assert "a git merge is in progress (.git/MERGE_HEAD)" in result.stderr, args
        assert "git commit" in result.stderr and "git merge --abort" in result.stderr
        assert repo.state() == before
    status = repo.ps("status", code=1)
    assert status.stdout.startswith("a git merge is in progress")
    assert len(status.stdout.splitlines()) < 20
    assert json.loads(repo.ps("status", "--json", code=1).stdout)["operation"] == "merge"
    # Once git has finished, refresh takes the merge apart: the patch file holds the fork's
    # line only, never upstream's code.
    repo.git("commit", "-q", "--no-edit")
    repo.ps("refresh")
    patch = (repo.path / "patches" / "mine.patch").read_text()
    assert "+a 10 fork upstream" in patch and "upstream edits" not in patch
    assert repo.git("rev-list", "--merges", "HEAD") == ""


@pytest.mark.parametrize("operation", ["rebase", "bisect", "cherry-pick"])
def test_other_operations_in_progress_are_named(tmp_path, operation: str) -> None:
    repo = fork_with_upstream(tmp_path)
    if operation == "rebase":
        env = dict(os.environ, GIT_SEQUENCE_EDITOR="sed -i 's/^pick/edit/'")
        subprocess.run(["git", "rebase", "-q", "-i", "HEAD~2"], cwd=repo.path, env=env,
                       capture_output=True, check=True)  # fmt: skip
    elif operation == "bisect":
        repo.git("bisect", "start", "HEAD", "HEAD~2")
    else:
        repo.git("checkout", "-q", "-b", "side", "HEAD~2")
        replace_line(repo, "a.py", "a 10\n", "a 10 side\n")
        repo.git("commit", "-qam", "side")
        repo.git("checkout", "-q", "main")
        repo.git("cherry-pick", "side", check=False)
    before = repo.state()
    for args in (("push",), ("pop",), ("refresh",), ("new", "y", "--tag", "essential")):
        result = repo.ps(*args, code=2)
        assert f"a git {operation} is in progress" in result.stderr, (args, result.stderr)
        assert repo.state() == before
    assert repo.ps("status", code=1).stdout.startswith(f"a git {operation} is in progress")


def test_an_amended_patch_commit_is_never_dropped(tmp_path) -> None:
    repo = fork_with_upstream(tmp_path, conflict=False)
    repo.git("checkout", "-q", "HEAD~1")  # amend mine.patch's commit, then put diag back
    replace_line(repo, "a.py", "a 11\n", "a 11 amended\n")
    repo.git("commit", "-q", "--amend", "-a", "--no-edit")
    repo.git("cherry-pick", "main")
    repo.git("checkout", "-q", "-B", "main")
    status = repo.ps("status", code=1)
    assert "mine.patch" in status.stdout and "commit differs from its patch file" in status.stdout
    before = repo.state()
    refused = (
        ("pop", "--all"),
        ("pop", "mine"),
        ("pop", "--only", "essential"),
        ("push", "--onto", "origin/main"),
        ("refresh", "--onto", "origin/main"),
    )
    for args in refused:
        result = repo.ps(*args, code=2)
        assert "the commit of mine.patch differs from its patch file" in result.stderr, args
        assert "refresh --patch mine.patch" in result.stderr
        assert "--discard-changes" in result.stderr
        assert repo.state() == before
    # Popping only what is above it is fine: the amended commit stays.
    repo.ps("pop")
    assert "a 11 amended" in repo.read("a.py")
    repo.ps("push")
    # refresh (no base move) adopts the commit into the patch file.
    repo.ps("refresh", "--patch", "mine")
    assert "+a 11 amended" in (repo.path / "patches" / "mine.patch").read_text()
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    assert "a 11 amended" in repo.read("a.py")


def test_discard_changes_drops_them_on_purpose(tmp_path) -> None:
    repo = fork_with_upstream(tmp_path, conflict=False)
    replace_line(repo, "b.py", "b 6\n", "b 6 amended\n")
    repo.git("commit", "-q", "--amend", "-a", "--no-edit")
    repo.ps("pop", "--all", "--discard-changes")
    repo.ps("push", "--all")
    assert "b 6 amended" not in repo.read("b.py") and "b 5 diag" in repo.read("b.py")
    repo.ps("undo")
    repo.ps("undo")
    assert "b 6 amended" in repo.read("b.py")  # and undo brings it back


def test_a_hand_edited_patch_file_is_applied_never_reverted(tmp_path) -> None:
    repo = fork_with_upstream(tmp_path, conflict=False)
    path = repo.path / "patches" / "mine.patch"
    text = path.read_text()
    assert "+a 10 fork\n" in text
    path.write_text(text.replace("+a 10 fork\n", "+a 10 fork, edited by hand\n"))
    status = repo.ps("status", code=1)
    assert "patch file edited since it was applied" in status.stdout
    assert (
        json.loads(repo.ps("status", "--json", code=1).stdout)["patches"][0]["matches"] == "edited"
    )
    # push applies the new version (the patch above is rebuilt on it).
    repo.ps("push")
    assert "a 10 fork, edited by hand" in repo.read("a.py") and "b 5 diag" in repo.read("b.py")
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []
    # refresh onto the moved upstream keeps the edit.
    path.write_text(path.read_text().replace("edited by hand", "edited again"))
    repo.ps("refresh", "--onto", "origin/main")
    assert "+a 10 fork, edited again" in path.read_text()
    assert "a 10 fork, edited again" in repo.read("a.py") and "a 30 upstream" in repo.read("a.py")


def test_the_base_line_must_name_a_commit(repo: Repo) -> None:
    repo.ps("init")
    series = repo.path / "patches" / "series"
    tree = repo.tree()
    series.write_text(f"# base: {tree}\n")
    result = repo.ps("status", code=2)
    assert f"patches/series:1: the base {tree[:12]} names a tree, not a commit" in result.stderr
    series.write_text("# base: HEAD; rm -rf x\n")
    result = repo.ps("status", code=2)
    assert "patches/series:1: malformed base line" in result.stderr
    assert repo.ps("push", code=2).stderr.count("malformed base line") == 1


def test_after_a_pull_merge_only_an_ambiguous_resolution_stops(tmp_path) -> None:
    repo = fork_with_upstream(tmp_path)
    replace_line(repo, "a.py", "a 12\n", "a 12 later\n")
    repo.ps("new", "later", "--tag", "optimization", "-m", "Later")  # also changes a.py
    repo.git("-c", "pull.rebase=false", "pull", "-q", "--no-edit", check=False)
    text = repo.read("a.py")
    repo.write(
        "a.py",
        text.split("<<<<<<<")[0]
        + "a 10 fork upstream\n"
        + text.split(">>>>>>> ")[1].split("\n", 1)[1],
    )
    repo.git("commit", "-qam", "merge upstream")
    result = repo.ps("refresh", code=1)
    assert "conflict in patch mine.patch" in result.stderr
    assert "also holds the changes of later.patch" in result.stderr


def test_the_fold_hint_names_the_patch_that_owns_the_edited_lines(repo: Repo) -> None:
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 from A\n")
    repo.ps("new", "A", "--tag", "essential")
    replace_line(repo, "a.py", "a 30\n", "a 30 from B\n")
    repo.ps("new", "B", "--tag", "diagnostic")
    replace_line(repo, "b.py", "b 5\n", "b 5 from T\n")
    repo.ps("new", "T", "--tag", "optimization")
    replace_line(repo, "a.py", "a 5 from A\n", "a 5 from A, fixed\n")
    result = repo.ps("refresh", code=2)
    assert "change lines of 'A.patch', not of 'T.patch'" in result.stderr
    assert "refresh --patch A.patch" in result.stderr
    repo.ps("refresh", "--patch", "A.patch")
    assert "+a 5 from A, fixed" in (repo.path / "patches" / "A.patch").read_text()
    assert "from A" not in (repo.path / "patches" / "B.patch").read_text()
    assert json.loads(repo.ps("status", "--json").stdout)["differs"] == []
