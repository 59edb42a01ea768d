"""The rename proof (`engine.renames`): a patch whose file ours lost is merged on its own
paths when no file upstream added is alike enough to be taken for it, and as a whole
otherwise; either way as ``git rebase`` merges it.

Each case is checked against ``git rebase`` (conflicts skipped: the same stops, the same
tree), and by what git itself did: with the proof, no ``merge-tree`` compares files for
renames (git's own trace, ``GIT_TRACE2_PERF``); where a file upstream added is alike, one
does, and the patch's change follows git's pairing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from . import differential
from .conftest import Repo, built_once, make_repo, numbered

UPSTREAM_FILES = 40  # files upstream adds: the candidates git would compare


def body(tag: str, n: int = 30) -> str:
    return "".join(f"{tag} line {i}: {'x' * (i % 7)}\n" for i in range(n))


def as_series(repo: Repo, base: str) -> str:
    """Branch ``work`` (the patches as commits on ``base``) imported as a series and pushed on
    ``base`` (branch ``main``); the applied stack's head."""
    repo.git("branch", "-f", "base", base)
    repo.git("checkout", "-q", "-B", "main", "base")
    repo.ps("init")
    return differential.fork(repo)


@built_once
def fork_with_knock_on(tmp_path: Path, alike: bool) -> tuple[Repo, str]:
    """Patch 1 makes ``pkg/new.py`` and conflicts upstream; patch 2 edits ``pkg/new.py`` (a
    knock-on: the file is missing once patch 1 is left out). Upstream adds many files, one
    of them, with ``alike``, a near copy of ``pkg/new.py`` elsewhere."""
    repo = make_repo(tmp_path / "fork", {"core.py": numbered(20, "core"), "pkg/keep.py": "k\n"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.write("core.py", numbered(20, "core").replace("core 5\n", "core 5 upstream\n"))
    for i in range(UPSTREAM_FILES):
        repo.write(f"vendor/v{i}.py", body(f"vendor{i}"))
    if alike:
        repo.write("elsewhere/copy.py", body("new") + "an upstream line\n")
    repo.commit_all("upstream moves on")
    repo.git("checkout", "-q", "-B", "work", base)
    repo.write("core.py", numbered(20, "core").replace("core 5\n", "core 5 patch\n"))
    repo.write("pkg/new.py", body("new"))
    repo.commit_all("make new")
    repo.write("pkg/new.py", body("new").replace("new line 3:", "new line three:"))
    repo.commit_all("edit new")
    return repo, as_series(repo, base)


def rebase(repo: Repo, head: str, tmp_path: Path) -> differential.Outcome:
    base, up = (repo.git("rev-parse", r).strip() for r in ("base", "up"))
    return differential.rebase(repo, head, base, up, tmp_path / "rebase")


def merge_trees_comparing(trace: Path) -> int:
    """How many ``merge-tree`` processes of a traced run compared files for renames."""
    count = 0
    for f in trace.iterdir():
        text = f.read_text(errors="replace")
        if "merge-tree (merge-tree)" in text and "label:inexact renames" in text:
            count += 1
    return count


def traced(repo: Repo, tmp_path: Path, *args: str, code: int | None = None):
    trace = tmp_path / "trace"
    trace.mkdir()
    os.environ["GIT_TRACE2_PERF"] = str(trace) + "/"
    try:
        result = repo.ps(*args, code=code)
    finally:
        del os.environ["GIT_TRACE2_PERF"]
    return result, merge_trees_comparing(trace)


@pytest.mark.parametrize("alike", [False, True], ids=["none-alike", "one-alike"])
def test_a_knock_on_is_merged_as_git_merges_it(tmp_path: Path, alike: bool) -> None:
    repo, head = fork_with_knock_on(tmp_path, alike)
    ref = rebase(repo, head, tmp_path)
    result, compared = traced(repo, tmp_path, "check", "--onto", "up", "--json", code=1)
    data = json.loads(result.stdout)
    assert tuple(c["patch"] for c in data["conflicts"]) == ref.conflicts
    if alike:  # git pairs pkg/new.py with elsewhere/copy.py: the edit lands there, cleanly
        assert ref.conflicts == ("make-new.patch",)
        assert compared >= 1  # the whole merge, as git makes it
    else:
        assert ref.conflicts == ("make-new.patch", "edit-new.patch")
        assert compared == 0  # proven: no merge compared files
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert differential.commits_of(repo, "up", "HEAD") == ref.commits


def test_without_shortcuts_the_same_knock_on_is_a_whole_merge(tmp_path: Path) -> None:
    repo, head = fork_with_knock_on(tmp_path, False)
    os.environ["PATCHSTACK_NO_FAST_PATH"] = "1"
    try:
        result, compared = traced(repo, tmp_path, "check", "--onto", "up", "--json", code=1)
    finally:
        del os.environ["PATCHSTACK_NO_FAST_PATH"]
    assert compared >= 1  # what the proof saves: merge-ort compares the added files
    data = json.loads(result.stdout)
    assert [c["patch"] for c in data["conflicts"]] == ["make-new.patch", "edit-new.patch"]


def test_a_file_upstream_moved_and_edited_takes_the_patch_along(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"src/old.py": body("mod", 40), "README": "r\n"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.git("rm", "-q", "src/old.py")
    repo.write("lib/moved.py", body("mod", 40).replace("mod line 39:", "mod line 39 (up):"))
    for i in range(UPSTREAM_FILES):
        repo.write(f"vendor/v{i}.py", body(f"vendor{i}"))
    repo.commit_all("move and edit")
    repo.git("checkout", "-q", "-B", "work", base)
    repo.write("src/old.py", body("mod", 40).replace("mod line 2:", "mod line two:"))
    repo.commit_all("edit old")
    head = as_series(repo, base)
    ref = rebase(repo, head, tmp_path)
    assert ref.conflicts == ()
    _result, compared = traced(repo, tmp_path, "refresh", "--onto", "up")
    assert compared >= 1  # a file upstream added is alike: the whole merge
    assert differential.commits_of(repo, "up", "HEAD") == ref.commits
    assert "mod line two:" in repo.read("lib/moved.py")


def test_a_file_deleted_in_a_folder_upstream_renamed_is_modify_delete(tmp_path: Path) -> None:
    files = {f"olddir/f{i}.py": body(f"f{i}") for i in range(4)}
    repo = make_repo(tmp_path / "fork", {**files, "olddir/gone.py": body("gone")})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.git("rm", "-q", "olddir/gone.py")
    repo.git("mv", "olddir", "newdir")
    repo.commit_all("rename the folder, drop gone.py")
    repo.git("checkout", "-q", "-B", "work", base)
    repo.write("olddir/gone.py", body("gone").replace("gone line 4:", "gone line four:"))
    repo.commit_all("edit gone")
    repo.write("olddir/f1.py", body("f1").replace("f1 line 2:", "f1 line two:"))
    repo.commit_all("edit f1")
    head = as_series(repo, base)
    ref = rebase(repo, head, tmp_path)
    assert ref.conflicts == ("edit-gone.patch",)
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    assert tuple(c["patch"] for c in data["conflicts"]) == ref.conflicts
    repo.ps("refresh", "--onto", "up", "--defer-conflicts")
    assert differential.commits_of(repo, "up", "HEAD") == ref.commits


def copy_detections(trace: Path) -> int:
    """How many copy detections (`RenameProof`'s ``diff-tree --find-copies``) a run made."""
    return sum(
        1
        for f in trace.iterdir()
        for line in f.read_text(errors="replace").splitlines()
        if "| start " in line and "diff-tree" in line and "--find-copies" in line
    )


@pytest.mark.parametrize("alike", [False, True], ids=["none-alike", "one-alike"])
def test_a_stop_before_any_lost_file_compares_nothing(tmp_path: Path, alike: bool) -> None:
    """A refresh stopped at patch 1 never asks about patch 2's lost file: no copy detection
    then; the skip that reaches it ends as ``git rebase`` does."""
    repo, head = fork_with_knock_on(tmp_path, alike)
    ref = rebase(repo, head, tmp_path)
    _result, _merges = traced(repo, tmp_path, "refresh", "--onto", "up", code=1)
    assert copy_detections(tmp_path / "trace") == 0
    repo.ps("refresh", "--skip")
    assert differential.commits_of(repo, "up", "HEAD") == ref.commits
