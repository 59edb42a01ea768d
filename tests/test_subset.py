"""What a subset needs: push --with-deps and pop --keep-deps carry the smallest closure the
graph's edges ask for, check --only names the unselected patches a conflict needs, pop NAME
--alone takes one patch out of the middle, tag sets one tag on several patches at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import Repo, copy_repo, make_repo, names, numbered, replace_line

ALL = ["d1.patch", "e1.patch", "o1.patch", "d2.patch", "e2.patch", "d3.patch"]


@pytest.fixture(scope="module")
def leaning(module_env) -> Path:
    """e1 rewrites d1's line; e2 rewrites d2's, which rewrote o1's; d3 stands alone."""
    repo = make_repo(
        module_env.mktemp("leaning") / "fork",
        {"x.py": numbered(30, "x"), "y.py": numbered(30, "y"), "z.py": numbered(30, "z")},
    )
    repo.ps("init")
    for name, tag, path, old, new in [
        ("d1", "diagnostic", "x.py", "x 10\n", "x 10 d1\n"),
        ("e1", "essential", "x.py", "x 10 d1\n", "x 10 d1 e1\n"),
        ("o1", "optimization", "y.py", "y 5\n", "y 5 o1\n"),
        ("d2", "diagnostic", "y.py", "y 5 o1\n", "y 5 o1 d2\n"),
        ("e2", "essential", "y.py", "y 5 o1 d2\n", "y 5 o1 d2 e2\n"),
        ("d3", "diagnostic", "z.py", "z 20\n", "z 20 d3\n"),
    ]:
        replace_line(repo, path, old, new)
        repo.ps("new", name, "--tag", tag, "-m", f"{name}: change {path}")
    return repo.path


@pytest.fixture
def fork(leaning: Path, tmp_path: Path) -> Repo:
    return copy_repo(leaning, tmp_path / "fork")


def test_push_with_deps_and_pop_keep_deps_carry_the_smallest_closure(fork: Repo) -> None:
    every = fork.tree()
    fork.ps("pop", "--all")
    # Without --with-deps the push stops at the first essential patch that leans on another.
    assert "unselected patches touching these lines: d1.patch" in (
        fork.ps("push", "--only", "essential", code=1).stderr
    )
    out = fork.ps("push", "--only", "essential", "--with-deps").stdout
    assert out.splitlines()[0] == (
        "added 3 unselected patch(es) the selection leans on: d1.patch (e1.patch leans on it),"
        " o1.patch (d2.patch leans on it), d2.patch (e2.patch leans on it)"
    )
    assert names(fork) == ALL[:5]  # not d3: nothing selected leans on it
    fork.ps("push", "--all")
    assert fork.tree() == every
    # pop --only without --keep-deps stops at the first conflict, one dependency at a time.
    fork.ps("pop", "--only", "diagnostic,optimization", code=1)
    assert names(fork) == ALL
    out = fork.ps("pop", "--only", "diagnostic,optimization", "--keep-deps").stdout
    assert out.splitlines()[:2] == [
        "kept 3 selected patch(es) applied, the patches left lean on them: d1.patch (e1.patch"
        " leans on it), o1.patch (d2.patch leans on it), d2.patch (e2.patch leans on it)",
        "popped 1 patch(es): d3.patch",
    ]
    assert names(fork) == ALL[:5] and "d3" not in fork.read("z.py")
    fork.ps("undo")
    assert names(fork) == ALL and fork.tree() == every


def test_pop_alone_takes_one_patch_out_of_the_middle(fork: Repo) -> None:
    out = fork.ps("pop", "o1", "--alone", code=1)  # d2 and e2 rewrite its line
    assert "unselected patches touching these lines: o1.patch" in out.stderr
    assert names(fork) == ALL
    out = fork.ps("pop", "o1", "--alone", "--keep-deps").stdout
    assert (
        out.splitlines()[0].startswith("kept 1 selected patch(es) applied")
        and "nothing to pop" in out
    )
    out = fork.ps("pop", "e1", "--alone").stdout
    assert out.splitlines()[0] == "popped 1 patch(es): e1.patch"
    assert names(fork) == [n for n in ALL if n != "e1.patch"]
    assert "x 10 d1\n" in fork.read("x.py") and "e2" in fork.read("y.py")
    result = fork.ps("pop", "--alone", code=2)
    assert "--alone takes one patch NAME" in result.stderr


def test_check_only_names_the_unselected_patches_a_conflict_needs(fork: Repo) -> None:
    result = fork.ps("check", "--only", "essential", "--onto", "HEAD~6", code=1)
    assert "conflict  e1.patch  x.py" in result.stdout  # one line per conflict by default
    assert "needs the unselected d1.patch (--with-deps)" in result.stdout
    whole = fork.ps("check", "--only", "essential", "--onto", "HEAD~6", "--patch", "e1", code=1)
    assert "conflict in patch e1.patch" in whole.stdout
    assert "unselected patches touching these lines: d1.patch" in whole.stdout
    data = json.loads(
        fork.ps("check", "--only", "essential", "--onto", "HEAD~6", "--json", code=1).stdout
    )
    assert {c["patch"]: c["culprits"] for c in data["conflicts"]} == {
        "e1.patch": ["d1.patch"],
        "e2.patch": ["d2.patch"],
    }


def test_tag_sets_one_tag_on_several_patches_in_one_step(fork: Repo) -> None:
    head = fork.head()
    out = fork.ps("tag", "--names", "d1,o1.patch", "optimization,nvidia").stdout
    assert out.splitlines() == [
        "d1.patch: [optimization, nvidia] (applied commit rewritten, same tree)",
        "o1.patch: [optimization, nvidia]",
        "tagged 2 of 2 patch(es) in one step",
    ]
    out = fork.ps("tag", "--only", "diagnostic", "essential", "--add-label", "nccl").stdout
    assert out.splitlines()[-1] == "tagged 2 of 2 patch(es) in one step"
    series = fork.read("patches/series")
    assert "d2.patch # essential, nccl\n" in series and "d3.patch # essential, nccl\n" in series
    tags = json.loads(fork.ps("status", "--json").stdout)["patches"]
    assert all(p["commit_tag"] == p["tag"] for p in tags) and fork.tree() == fork.tree(head)
    fork.ps("undo")  # one step, one undo
    assert "d2.patch # diagnostic\n" in fork.read("patches/series")
    fork.ps("undo")
    assert fork.head() == head and "d1.patch # diagnostic\n" in fork.read("patches/series")
    result = fork.ps("tag", "--only", "diagnostic", "essential", "optimization", code=2)
    assert "give only the TAG" in result.stderr
