"""Advice that is right: each state below is driven for real, and the command ``status``
advises there (its ``next:`` line) is run and must succeed."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line
from .refresh_fixtures import make_fork


def advice(repo: Repo, cwd: Path | None = None) -> str:
    out = repo.ps("status", code=None, cwd=cwd).stdout
    return next(ln for ln in out.splitlines() if ln.startswith("next: "))


def follow(repo: Repo, line: str, cwd: Path | None = None) -> list[str]:
    """Run every 'patchstack ...' command the advice names, in order (not the alternatives
    in "(or ...)"); each must succeed."""
    commands = re.findall(r"'patchstack ([^']+)'", re.sub(r"\(or [^)]*\)", "", line))
    for command in commands:
        repo.ps(*shlex.split(command), cwd=cwd)
    return commands


@pytest.fixture(scope="module")
def two(module_env) -> Path:
    """low.patch edits a.py, top.patch b.py, both applied; branch ``upstream`` moved by one
    commit that holds part of low.patch's change and all of top.patch's."""
    repo = make_repo(
        module_env.mktemp("advice") / "fork",
        {"a.py": numbered(30, "a"), "b.py": numbered(30, "b"), "c.py": numbered(30, "c")},
    )
    repo.git("branch", "upstream")
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 low\n")
    replace_line(repo, "a.py", "a 25\n", "a 25 low\n")
    repo.ps("new", "low", "--tag", "essential", "-m", "Low: a")
    replace_line(repo, "b.py", "b 5\n", "b 5 top\n")
    repo.ps("new", "top", "--tag", "diagnostic", "-m", "Top: b")
    repo.git("checkout", "-q", "upstream")
    replace_line(repo, "a.py", "a 25\n", "a 25 low\n")
    replace_line(repo, "b.py", "b 5\n", "b 5 top\n")
    replace_line(repo, "c.py", "c 15\n", "c 15 upstream\n")
    repo.git("commit", "-qam", "upstream takes part of low and all of top")
    repo.git("checkout", "-q", "main")
    return repo.path


@pytest.fixture
def fork(two: Path, tmp_path: Path) -> Repo:
    return copy_repo(two, tmp_path / "fork")


def test_after_a_pull_that_merged_upstream_refresh_is_advised_and_works(fork: Repo) -> None:
    fork.git("merge", "-q", "--no-edit", "upstream")  # what 'git pull --no-rebase' does
    line = advice(fork)
    assert "'patchstack refresh' carries the patches onto" in line
    refused = fork.ps("push", code=2).stderr  # every command says the same
    assert "hint: run 'patchstack refresh' first" in refused
    assert follow(fork, line) == ["refresh"]
    assert fork.git("rev-list", "--merges", "HEAD~2..HEAD") == ""
    assert fork.read("c.py").count("upstream") == 1
    assert names(fork) == ["low.patch"]  # top.patch is upstream now, kept unapplied
    assert "  - top.patch [diagnostic]  (the base holds it" in fork.ps("status").stdout
    assert follow(fork, advice(fork)) == ["refresh --drop-merged"]  # not 'push --all'
    assert (
        "top.patch" not in fork.read("patches/series")
        and (fork.path / "patches/top.patch").exists()
    )
    assert advice(fork).startswith("next: nothing to do")


def test_a_worktree_onto_another_base_is_on_purpose(fork: Repo, tmp_path: Path) -> None:
    fork.ps("worktree", "../exp", "--onto", "upstream")
    exp = tmp_path / "exp"
    result = fork.ps("status", cwd=exp)  # exit 0: nothing disagrees
    assert "differs" not in result.stdout
    assert "stack base:" in result.stdout and "(upstream), on purpose" in result.stdout
    data = json.loads(fork.ps("status", "--json", cwd=exp).stdout)
    # low.patch merged; top.patch upstream has: left unapplied (no empty commit)
    assert [p["matches"] for p in data["patches"]] == ["carried", None]
    line = advice(fork, exp)
    assert line.startswith("next: nothing to do: this worktree carries the patches on upstream")
    assert "'patchstack refresh" not in line and follow(fork, line, exp) == []
    series = fork.read("patches/series")
    assert fork.read("patches/series") == series


def test_an_edit_in_a_lower_patch_names_the_patch_refresh_needs(fork: Repo) -> None:
    replace_line(fork, "a.py", "a 6\n", "a 6 more\n")
    line = advice(fork)
    assert "'patchstack refresh --patch low.patch' folds the edits" in line
    assert follow(fork, line) == ["refresh --patch low.patch"]
    assert "+a 6 more" in fork.read("patches/low.patch")
    assert advice(fork).startswith("next: nothing")


def test_without_an_upstream_the_remotes_default_branch_is_compared(tmp_path: Path) -> None:
    upstream = make_repo(tmp_path / "upstream", {"a.py": numbered(20, "a")})
    Repo(tmp_path).git("clone", "-q", str(upstream.path), "fork")
    fork = Repo(tmp_path / "fork")
    fork.git("branch", "--unset-upstream")
    fork.ps("init")
    replace_line(fork, "a.py", "a 3\n", "a 3 mine\n")
    fork.ps("new", "mine", "--tag", "essential")
    replace_line(upstream, "a.py", "a 15\n", "a 15 theirs\n")
    upstream.git("commit", "-qam", "upstream moves")
    fork.git("fetch", "-q")
    status = fork.ps("status").stdout
    assert "upstream moved: 1 commit since the series base, to origin/main" in status
    assert "HEAD has no @{upstream}: origin/main is the remote's default branch" in status
    line = advice(fork)
    assert follow(fork, line) == ["check --onto origin/main", "refresh --onto origin/main"]
    assert "a 15 theirs" in fork.read("a.py") and "a 3 mine" in fork.read("a.py")
    assert advice(fork).startswith("next: nothing")


def test_a_stopped_refresh_comes_first_and_its_files_are_its_own(tmp_path: Path) -> None:
    repo = make_fork(tmp_path / "fork")
    repo.ps("refresh", "--onto", "upstream", code=1)
    out = repo.ps("status", code=1).stdout.splitlines()
    assert out[0].startswith("refresh stopped at a conflict in near.patch (patch 2 of 4")
    assert out[1] == "  conflict: a.py" and "uncommitted edits in no patch:" not in out
    assert "upstream moved" not in "\n".join(out)
    assert "[stopped at a conflict]" in repo.ps("log", "-n", "1").stdout.splitlines()[0]
    assert "<<<<<<<" in repo.read("a.py")
    resolved = numbered(40, "a").replace("a 10\n", "a 10 near\n")
    repo.write("a.py", resolved.replace("a 11\n", "a 11 upstream\n"))
    assert follow(repo, advice(repo)) == ["refresh --continue"]
    assert "[stopped at a conflict]" not in repo.ps("log", "-n", "1").stdout
    assert follow(repo, advice(repo)) == ["refresh --drop-merged"]  # known.patch is upstream's
    assert advice(repo).startswith("next: nothing to do")


def test_undo_after_a_refused_command_says_what_it_undoes(fork: Repo) -> None:
    fork.ps("pop")
    result = fork.ps("refresh", "--patch", "nope", code=2)
    assert "no patch named 'nope'" in result.stderr
    out = fork.ps("undo").stdout.splitlines()
    assert out[0] == (
        "'patchstack refresh --patch nope' was refused and changed nothing (nothing of it to"
        " undo); undoing the command before it:"
    )
    assert out[1].startswith("undid #") and out[1].endswith(" patchstack pop")
    assert fork.ps("undo").stdout.startswith("undid #")  # the note was for that undo only
