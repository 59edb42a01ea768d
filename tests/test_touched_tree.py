"""The tree a resumed refresh starts from (`resume._work_tree`: the stop's tree with the stop's
files as the work tree holds them), made from those files alone (`Git.tree_with_files`: one
``hash-object``, one ``check-attr``) instead of ``git add -A --force`` of them into a temporary
index of the whole tree (0.1-0.17 s a skip on weight-sync's 7,000 files). Differential: the
same tree as that index writes on generated work trees (edits, CRLF, execute bits, symbolic
links, deletions, new folders, ignored files), None where git's staging may differ (attributes,
``core.autocrlf``, ``core.fileMode`` off, a folder in a file's place); and stop by stop with
the user's edits at the stops, the same stops, series, HEAD and work tree as the plain path
(``PATCHSTACK_NO_TOUCHED_TREE=1``), the edits kept."""

from __future__ import annotations

import os
import random

import pytest

from patchstack.git import Git, find_repo
from patchstack.git.index import TempIndex

from .conftest import Repo, copy_repo, make_repo, numbered, slow_after
from .refresh_fixtures import series_fork, stop_by_stop


def _plain(git: Git, tree: str, wanted: list[str]) -> str:
    """The tree as `resume._work_tree` made it before: a temporary index of ``tree``."""
    had = git.ls_tree_paths(tree, wanted)
    paths = [p for p in wanted if p in had or os.path.lexists(os.path.join(git.top, p))]
    with git.temp_index() as idx:
        idx.read_tree(tree)
        idx.add_paths(paths, force=True)
        return idx.write_tree()


FILES = {
    "a.py": numbered(20, "a"),
    "src/b.py": numbered(20, "b"),
    "src/deep/c.py": numbered(20, "c"),
    "run.sh": "echo run\n",
    "docs/x.md": "docs\n",
}


@pytest.mark.parametrize("seed", slow_after(range(24), 8))
def test_the_tree_of_the_touched_files_is_the_tree_git_add_makes(tmp_path, seed) -> None:
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "r", FILES)
    os.symlink("a.py", repo.path / "link")
    repo.commit_all("a link")
    tree = repo.tree()
    news = ["new.py", "fresh/dir/n.py", "src/deep/more.py", "ignored.log"]
    paths = rng.sample([*FILES, "link", *news], rng.randint(1, 8))
    plain_staging = True
    for path in paths:
        full = repo.path / path
        what = rng.choice(["edit", "crlf", "delete", "exec", "link", "same", "empty", "folder"])
        if what == "folder" and rng.random() < 0.7:
            what = "edit"
        if full.is_symlink() or full.exists():
            if what in ("delete", "link", "folder"):
                full.unlink()
        elif what == "delete":
            continue
        if what == "folder":
            (full / "inside.py").parent.mkdir(parents=True)
            (full / "inside.py").write_text("a folder where a file was\n")
            plain_staging = False
        elif what == "link":
            full.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(rng.choice(["a.py", "nowhere", "../docs"]), full)
        elif what != "delete":
            full.parent.mkdir(parents=True, exist_ok=True)
            body = {"crlf": "one\r\ntwo\r\n", "empty": ""}.get(what, f"{path} {seed}\n")
            if what != "same" or not full.exists():
                full.write_text(body, newline="")
            if what == "exec" or rng.random() < 0.2:
                full.chmod(0o755)
    if rng.random() < 0.3:
        repo.write(".gitignore", "*.log\nfresh/\n")
    twist = rng.choice(["none", "none", "none", "attributes", "autocrlf", "filemode"])
    if twist == "attributes":
        repo.write(".gitattributes", "*.py text eol=crlf\n")
    elif twist != "none":
        repo.git("config", {"autocrlf": "core.autocrlf", "filemode": "core.fileMode"}[twist],
                 {"autocrlf": "true", "filemode": "false"}[twist])  # fmt: skip
    plain_staging = plain_staging and twist == "none"
    git = find_repo(str(repo.path))
    made = git.tree_with_files(tree, paths)
    assert (made is not None) == plain_staging
    if made is not None:
        assert made == _plain(git, tree, paths)


# (patch, edits), in series order: A, B and C stop (upstream rewrote their lines) and are
# skipped; A creates new.py, P deletes it (a no-op once A is left out); D applies. keep.py is
# no patch's: the user's edit there at a stop stays through every skip.
SERIES: list[tuple[str, list[tuple[str, int, str | None]]]] = [
    ("A", [("f", 5, "A f5"), ("new", 0, "new 1\n")]),
    ("B", [("f", 10, "B f10"), ("g", 10, "B g10")]),
    ("P", [("new", 0, None)]),
    ("C", [("f", 15, "C f15")]),
    ("D", [("f", 25, "D f25")]),
]
UPSTREAM = [
    ("rewrites f", [("f", 5, "up f5"), ("f", 10, "up f10"), ("f", 15, "up f15")]),
    ("rewrites g", [("g", 10, "up g10")]),
]


def _edits_at_stops(repo: Repo, stops: int) -> None:
    """What a user does at a stop before skipping it: edits a stop's file, the file no patch
    touches, makes a stop's file executable, CRLF, deletes the file the patch creates."""
    if stops == 1:
        (repo.path / "new.py").unlink()
        repo.write("keep.py", repo.read("keep.py") + "the user's own line\n")
        (repo.path / "f.py").write_text(repo.read("f.py") + "half resolved\r\n", newline="")
    elif stops == 2:
        (repo.path / "g.py").chmod(0o755)
        repo.write("f.py", "the user rewrote it\n")
    elif stops == 3:
        os.symlink("g.py", repo.path / "f.link")


@pytest.fixture
def added(monkeypatch) -> list[int]:
    """How many times a temporary index staged work-tree files (`git add`)."""
    made: list[int] = []
    real = TempIndex.add_paths

    def counted(self, paths, force=False):  # type: ignore[no-untyped-def]
        made.append(len(paths))
        return real(self, paths, force)

    monkeypatch.setattr(TempIndex, "add_paths", counted)
    return made


def test_skips_with_user_edits_are_the_same_from_the_touched_files(
    tmp_path, monkeypatch, added
) -> None:
    files = {f"{n}.py": numbered(30, n) for n in ("f", "g", "keep")}
    repo = series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)
    plain = copy_repo(repo.path, tmp_path / "plain")
    fast = stop_by_stop(repo, lambda stops: _edits_at_stops(repo, stops))
    assert added == []  # no skip staged through a temporary index of the whole tree
    assert len(fast[0]) == 3
    assert "the user's own line" in repo.read("keep.py")  # an edit no skip had to move
    monkeypatch.setenv("PATCHSTACK_NO_TOUCHED_TREE", "1")
    assert stop_by_stop(plain, lambda stops: _edits_at_stops(plain, stops)) == fast
    assert added  # (the plain path did)
    assert repo.state() == plain.state()
    # The skip of the last stop gives back, undone, what the user had there: nothing is lost.
    monkeypatch.delenv("PATCHSTACK_NO_TOUCHED_TREE")
    repo.ps("undo")
    assert os.readlink(repo.path / "f.link") == "g.py"
    assert repo.read("f.py") != "the user rewrote it\n"  # (the third stop's merge)
    repo.ps("undo")
    assert repo.read("f.py") == "the user rewrote it\n"
    assert os.access(repo.path / "g.py", os.X_OK)


def test_a_repository_with_attributes_takes_the_plain_path(tmp_path, added) -> None:
    files = {f"{n}.py": numbered(30, n) for n in ("f", "g", "keep")}
    files[".gitattributes"] = "*.py text\n"
    repo = series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)
    stop_by_stop(repo, lambda stops: _edits_at_stops(repo, stops))
    assert len(added) == 3


def test_a_path_beyond_a_symbolic_link_or_a_file_is_left_to_git(tmp_path) -> None:
    repo = make_repo(tmp_path / "r", FILES)
    tree = repo.tree()
    git = find_repo(str(repo.path))
    assert git.tree_with_files(tree, ["src/deep/c.py"]) is not None
    os.rename(repo.path / "src" / "deep", repo.path / "elsewhere")
    os.symlink("../elsewhere", repo.path / "src" / "deep")  # git: "beyond a symbolic link"
    assert git.tree_with_files(tree, ["a.py", "src/deep/c.py"]) is None
    (repo.path / "src" / "deep").unlink()
    (repo.path / "src" / "deep").write_text("a file where the folder was\n")
    assert git.tree_with_files(tree, ["src/deep/c.py"]) is None
    assert git.tree_with_files(tree, ["src/deep"]) is None  # a folder in the tree
    # a path in neither place changes nothing, not even the file the tree has where its folder is
    (repo.path / "src" / "deep").unlink()
    (repo.path / "docs" / "x.md").unlink()
    assert git.tree_with_files(tree, ["docs/x.md/inner", "src/deep/new.py"]) == tree
    assert _plain(git, tree, ["docs/x.md/inner", "src/deep/new.py"]) == tree
