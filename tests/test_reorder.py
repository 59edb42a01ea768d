"""move, delete, fold and split: changes in a new order, applied or not.

A move that commutes keeps the top tree and every patch file; one that cannot be built
changes nothing and names both patches; fold leaves the tree as it was; split then fold gives
the original patch file back byte for byte. Each is one entry of the operation log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line
from .test_edit import full, undo_restores


@pytest.fixture(scope="module")
def built(module_env) -> Path:
    """one (a.py:5), two (b.py:5), three (a.py:5 again, and c.py:30), four (c.py:5 and
    c.py:20, two hunks); all applied."""
    repo = make_repo(
        module_env.mktemp("reorder") / "fork",
        {"a.py": numbered(40, "a"), "b.py": numbered(40, "b"), "c.py": numbered(40, "c")},
    )
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 one\n")
    repo.ps("new", "one", "--tag", "essential", "-m", "First patch\n\nWhy one exists.")
    replace_line(repo, "b.py", "b 5\n", "b 5 two\n")
    repo.ps("new", "two", "--tag", "diagnostic", "-m", "Second patch")
    replace_line(repo, "a.py", "a 5 one\n", "a 5 one three\n")
    replace_line(repo, "c.py", "c 30\n", "c 30 three\n")
    repo.ps("new", "three", "--tag", "optimization", "-m", "Third patch")
    replace_line(repo, "c.py", "c 5\n", "c 5 four\n")
    replace_line(repo, "c.py", "c 20\n", "c 20 four\n")
    repo.ps("new", "four", "--tag", "diagnostic", "-m", "Fourth patch")
    repo.write("notes.txt", "untracked, mine\n")
    return repo.path


@pytest.fixture
def fork(built: Path, tmp_path: Path) -> Repo:
    return copy_repo(built, tmp_path / "fork")


def patch_files(repo: Repo) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (repo.path / "patches").glob("*.patch")}


def series_names(repo: Repo) -> list[str]:
    return [p["name"] for p in json.loads(repo.ps("series", "--json").stdout)["patches"]]


def all_exact(repo: Repo) -> bool:
    status = json.loads(repo.ps("status", "--json").stdout)
    return all(p["matches"] == "exact" for p in status["patches"] if p["applied"])


def test_a_move_that_commutes_keeps_the_tree_and_every_file(fork: Repo) -> None:
    before, top, files = full(fork), fork.tree(), patch_files(fork)
    result = fork.ps("move", "two", "--bottom")
    assert "moved two.patch first in the series" in result.stdout
    assert series_names(fork) == ["two.patch", "one.patch", "three.patch", "four.patch"]
    assert names(fork) == series_names(fork)
    assert fork.tree() == top and patch_files(fork) == files
    assert fork.git("diff", "--stat", "HEAD~4", "HEAD~3").strip().startswith("b.py")
    assert all_exact(fork)
    undo_restores(fork, before)
    fork.ps("pop", "--all")
    head, files = fork.head(), patch_files(fork)
    fork.ps("move", "two", "--top")
    assert fork.head() == head and patch_files(fork) == files
    assert series_names(fork) == ["one.patch", "three.patch", "four.patch", "two.patch"]


def test_a_move_that_cannot_be_built_changes_nothing_and_names_both(fork: Repo) -> None:
    for applied in (True, False):
        if not applied:
            fork.ps("pop", "--all")
        before = full(fork)
        result = fork.ps("move", "three", "--before", "one", code=1)
        assert "patch 'three.patch' conflicts with 'one.patch'" in result.stderr
        assert "file a.py" in result.stderr and "+ a 5 one three" in result.stderr
        assert "patches it moves across that change these files: one.patch" in result.stderr
        assert "nothing was changed" in result.stderr
        assert full(fork) == before


def test_a_move_across_a_patch_of_the_same_file_rewrites_both_files(fork: Repo) -> None:
    top = fork.tree()
    files = patch_files(fork)
    result = fork.ps("move", "four", "--before", "three")
    assert "rewritten (their change moved): four.patch, three.patch" in result.stdout
    assert fork.tree() == top
    assert patch_files(fork)["one.patch"] == files["one.patch"]
    assert all_exact(fork)
    fork.ps("pop", "--all")
    fork.ps("push", "--all")
    assert fork.tree() == top and all_exact(fork)


def test_delete_applied_unapplied_and_a_patch_others_need(fork: Repo) -> None:
    before = full(fork)
    result = fork.ps("delete", "two")
    assert "deleted two.patch (popped)" in result.stdout
    assert names(fork) == ["one.patch", "three.patch", "four.patch"]
    assert "b 5 two" not in fork.read("b.py") and "c 5 four" in fork.read("c.py")
    assert not (fork.path / "patches" / "two.patch").exists()
    undo_restores(fork, before)
    result = fork.ps("delete", "one", code=1)
    assert "patch 'three.patch' conflicts with 'one.patch'" in result.stderr
    assert full(fork) == before
    edited = fork.read("b.py").replace("b 30\n", "b 30 mine\n")
    fork.write("b.py", edited)
    before = full(fork)
    result = fork.ps("drop", "two", code=2)
    assert "uncommitted edits in files this command would change: b.py" in result.stderr
    assert full(fork) == before
    fork.git("checkout", "b.py")
    fork.ps("pop", "--all")
    head = fork.head()
    fork.ps("drop", "four", "two", "--keep-file")
    assert fork.head() == head and series_names(fork) == ["one.patch", "three.patch"]
    assert (fork.path / "patches" / "four.patch").exists()


def test_fold_keeps_the_tree_and_joins_descriptions(fork: Repo) -> None:
    before, top = full(fork), fork.tree()
    fork.ps("fold", "two", "--into", "one")
    assert fork.tree() == top
    assert names(fork) == ["one.patch", "three.patch", "four.patch"]
    text = fork.read("patches/one.patch")
    assert "Subject: [PATCH] First patch\n\nWhy one exists.\n\nSecond patch\n---\n" in text
    assert "+b 5 two" in text and "+a 5 one\n" in text
    assert not (fork.path / "patches" / "two.patch").exists()
    assert all_exact(fork)
    undo_restores(fork, before)
    # Folding a later patch down across another, unapplied.
    fork.ps("pop", "--all")
    head = fork.head()
    fork.ps("fold", "four", "--into", "two")
    assert fork.head() == head
    fork.ps("push", "--all")
    assert fork.tree() == top
    fork.ps("pop", "four", code=2)  # gone
    fork.ps("pop", "three")
    result = fork.ps("fold", "three", "--into", "one", code=2)
    assert "'one.patch' is applied and 'three.patch' is not" in result.stderr


def test_split_by_file_then_fold_back_gives_the_original_bytes(fork: Repo) -> None:
    before, top = full(fork), fork.tree()
    original = fork.read("patches/three.patch")
    result = fork.ps("split", "three", "c.py", "--as", "three-c", "--tag", "optimization,moe")
    assert "split three-c.patch [optimization, moe] off three.patch: c.py" in result.stdout
    assert fork.tree() == top
    assert names(fork) == ["one.patch", "two.patch", "three.patch", "three-c.patch", "four.patch"]
    assert "c.py" not in fork.read("patches/three.patch")
    assert "three-c.patch # optimization, moe\n" in fork.read("patches/series")
    assert "Subject: [PATCH] Third patch\n" in fork.read("patches/three-c.patch")
    assert all_exact(fork)
    undo_restores(fork, before)
    fork.ps("split", "three", "c.py", "--as", "three-c", "--tag", "optimization")
    fork.ps("fold", "three-c", "--into", "three")
    assert fork.read("patches/three.patch") == original
    assert full(fork) == before
    result = fork.ps("split", "three", "a.py", "c.py", "--as", "x", "--tag", "essential", code=2)
    assert "nothing would be left in 'three.patch'" in result.stderr
    result = fork.ps("split", "three", "b.py", "--as", "x", "--tag", "essential", code=2)
    assert "'three.patch' does not change b.py" in result.stderr
    fork.ps("pop", "--all")
    head = fork.head()
    fork.ps("split", "three", "a.py", "--as", "three-a", "--tag", "optimization", "-m", "A part")
    assert fork.head() == head and "Subject: [PATCH] A part" in fork.read("patches/three-a.patch")
    fork.ps("push", "--all")
    assert fork.tree() == top


def test_split_interactive_with_scripted_answers(fork: Repo) -> None:
    before, top = full(fork), fork.tree()
    original = fork.read("patches/four.patch")
    result = fork.ps("split", "four", "--as", "four-b", "--tag", "diagnostic", "-i", input="n\ny\n")
    assert "(1/2) Apply this hunk to index" in result.stdout
    assert fork.tree() == top
    assert "+c 5 four" in fork.read("patches/four.patch")
    assert "c 20" not in fork.read("patches/four.patch")
    assert "+c 20 four" in fork.read("patches/four-b.patch")
    assert "c 5 four" not in fork.read("patches/four-b.patch")
    undo_restores(fork, before)
    fork.ps("split", "four", "--as", "four-b", "--tag", "diagnostic", "-i", input="n\ny\n")
    fork.ps("fold", "four-b", "--into", "four")
    assert fork.read("patches/four.patch") == original
    result = fork.ps(
        "split", "four", "--as", "x", "--tag", "diagnostic", "-i", input="n\nn\n", code=2
    )
    assert "nothing was chosen to move to 'x.patch'" in result.stderr
    assert full(fork) == before


def test_reorder_with_a_subset_applied_builds_like_push(fork: Repo) -> None:
    """Only some patches applied (not a prefix of the series): the engine places them in the
    new order, as push would; the result equals popping everything and pushing that subset."""
    fork.ps("pop", "--only", "diagnostic")
    assert names(fork) == ["one.patch", "three.patch"]
    fork.ps("move", "four", "--before", "three")
    fork.ps("move", "two", "--bottom")
    assert names(fork) == ["one.patch", "three.patch"]
    assert series_names(fork) == ["two.patch", "one.patch", "four.patch", "three.patch"]
    tree = fork.tree()
    fork.ps("pop", "--all")
    fork.ps("push", "--except", "diagnostic")
    assert fork.tree() == tree
    fork.ps("push", "--all")
    assert all_exact(fork)
    assert "c 5 four" in fork.read("c.py") and "a 5 one three" in fork.read("a.py")
