"""Trees edited in process (`Trees.edit_tree`: the snapshot's work tree, the derived snapshots,
`tree_with_files`), written as loose objects instead of an index's ``write-tree``.
Differential, against git: the tree ``write-tree`` writes of an index of the same tree given
the same entries (``update-index --index-info``), for nested paths, deletions that empty
folders, mode changes, symbolic links, submodule entries and names that sort oddly (``a-b``,
``a.b``, ``a/b``, ``a0``); the snapshot of a work tree so changed, in process and through its
temporary index; and the raw diff of two trees asked the other way round (kept for the
command: the sides swapped) against ``diff-tree``."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

import pytest

from patchstack.checkout import open_checkout
from patchstack.git import Git, find_repo
from patchstack.journal import blobs, snapshot

from .conftest import Repo, make_repo, slow_after

FILES = {
    "a": "a\n",
    "a-b": "a-b\n",
    "a.b": "a.b\n",
    "a0": "a0\n",
    "a/b": "a/b\n",
    "a/b.c": "a/b.c\n",
    "a/b-c/d": "a/b-c/d\n",
    "x/y/z/deep.txt": "deep\n",
    "x/y-z": "y-z\n",
    "run.sh": "echo\n",
}

PATHS = [
    *FILES,
    "a/c",
    "a/b-c/e",
    "x/y/new/n.txt",
    "new/dir/f",
    "a-b-c",
    "x.y",
    "b/a",
    "sub",
    "a/sub",
    "a-b/under",  # (under a file: a deletion there removes nothing)
]


def _repo(tmp_path: Path) -> tuple[Repo, str]:
    repo = make_repo(tmp_path / "r", {p: t for p, t in FILES.items() if p != "a"})
    repo.write("a-file", "a\n")
    os.symlink("a-b", repo.path / "link")
    repo.commit_all("a link")
    # a submodule entry (a commit the repository need not have, as git keeps it)
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},sub")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'2' * 40},x/mod")
    repo.git("commit", "-q", "-m", "submodules")
    return repo, repo.tree()


def _blob(repo: Repo, text: str) -> str:
    return repo.git("hash-object", "-w", "--stdin", input=text).strip()


def _changes(repo: Repo, tree_files: dict[str, tuple[str, str]], rng: random.Random):
    chosen: dict[str, tuple[str, str] | None] = {}
    for path in rng.sample(PATHS + list(tree_files), rng.randint(1, 9)):
        what = rng.choice(["delete", "edit", "exec", "link", "submodule", "same"])
        if what == "delete":
            chosen[path] = None
        elif what == "edit":
            chosen[path] = ("100644", _blob(repo, f"{path} {rng.random()}\n"))
        elif what == "exec":
            had = tree_files.get(path)
            blob = had[1] if had and had[0] != "160000" else _blob(repo, path)
            chosen[path] = ("100755", blob)
        elif what == "link":
            chosen[path] = ("120000", _blob(repo, "a-b"))
        elif what == "submodule":
            chosen[path] = ("160000", f"{rng.randrange(16**8):08x}" + "3" * 32)
        elif path in tree_files:
            chosen[path] = tree_files[path]
    if snapshot.nested(chosen):  # (a file turned into a folder: callers scan instead)
        return None
    return chosen


def _written(git: Git, tree: str, changes: dict[str, tuple[str, str] | None]) -> str:
    """git's tree: an index of ``tree`` given the entries, then ``write-tree``."""
    records = [(e[0], e[1], p) if e else ("0", git.fmt.null, p) for p, e in changes.items()]
    with git.temp_index() as idx:
        idx.read_tree(tree)
        idx.set_entries(records)
        return idx.write_tree()


@pytest.mark.parametrize("seed", slow_after(range(40), 12))
def test_a_tree_edited_in_process_is_the_tree_git_writes(tmp_path, seed: int) -> None:
    repo, tree = _repo(tmp_path)
    git = find_repo(str(repo.path))
    rng = random.Random(seed)
    files = git.files_of(tree)
    changes = None
    while changes is None:
        changes = _changes(repo, files, rng)
    made = git.edit_tree(tree, changes)
    assert made == _written(git, tree, changes), changes
    assert repo.git("cat-file", "-t", made).strip() == "tree"
    fsck = subprocess.run(
        ["git", "fsck", "--no-dangling", "--connectivity-only", "--strict"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert "sort" not in fsck.stdout + fsck.stderr, fsck.stdout + fsck.stderr


@pytest.mark.parametrize("seed", slow_after(range(8), 4))
def test_a_tree_made_in_process_edited_again_is_the_tree_git_writes(tmp_path, seed: int) -> None:
    """Edits of the trees edits made (a replay's chain: each step edits the tree the last
    wrote, spliced from the entries kept for it, not read back from git)."""
    repo, tree = _repo(tmp_path)
    git = find_repo(str(repo.path))
    rng = random.Random(1000 + seed)
    for _round in range(6):
        changes = None
        while changes is None:
            changes = _changes(repo, git.files_of(tree), rng)
        made = git.edit_tree(tree, changes)
        assert made == _written(find_repo(str(repo.path)), tree, changes), changes
        tree = made


def test_a_tree_emptied_by_its_edits_is_the_empty_tree(tmp_path) -> None:
    repo, tree = _repo(tmp_path)
    git = find_repo(str(repo.path))
    everything = {p: None for p in git.files_of(tree)}
    assert git.edit_tree(tree, everything) == _written(git, tree, everything)
    assert git.edit_tree(tree, everything) == git.fmt.empty_tree


def _scatter(repo: Repo, rng: random.Random) -> None:
    """Work-tree changes a snapshot records: edits, deletions that empty folders, execute
    bits, links, new nested files and oddly sorting names."""
    for path in rng.sample([*FILES, "a-file", "link", "x/y/new/n.txt", "new/dir/f"], 6):
        full = repo.path / path
        what = rng.choice(["delete", "edit", "exec", "link"])
        if full.is_symlink() or full.exists():
            if full.is_dir():
                continue
            full.unlink()
            if what == "delete":
                continue
        full.parent.mkdir(parents=True, exist_ok=True)
        if what == "link":
            os.symlink(rng.choice(["a-b", "nowhere", "x/y"]), full)
        else:
            full.write_text(f"{path} {rng.random()}\n")
            if what == "exec":
                full.chmod(0o755)
    for name in ("a-b-c", "a.c", "x/y.z", "x/y/a-b"):
        if rng.random() < 0.5 and (repo.path / name).parent.is_dir():
            (repo.path / name).write_text(name + "\n")


@pytest.mark.parametrize("seed", slow_after(range(12), 4))
def test_the_snapshot_edited_in_process_is_the_one_its_index_writes(
    tmp_path, monkeypatch, seed: int
) -> None:
    """`take_snapshot`'s work tree, edited in process (`snapshot.in_process`), and through its
    temporary index (how a repository with a second object format, or a scratch store, takes
    it): the same tree; and with plain staging, the tree ``git add -A`` writes."""
    repo, _tree = _repo(tmp_path)
    (repo.path / "sub").mkdir()  # (a submodule not checked out: an empty folder)
    (repo.path / "x" / "mod").mkdir()
    _scatter(repo, random.Random(seed))
    os.chdir(repo.path)
    taken = snapshot.take_snapshot(open_checkout(None))
    monkeypatch.setattr(snapshot, "in_process", lambda git: False)
    monkeypatch.setattr(blobs, "in_process", lambda git: False)
    plain = snapshot.take_snapshot(open_checkout(None))
    assert taken == plain
    env = {**os.environ, "GIT_INDEX_FILE": str(tmp_path / "index")}
    subprocess.run(["cp", ".git/index", env["GIT_INDEX_FILE"]], check=True)
    subprocess.run(["git", "add", "-A"], env=env, check=True)
    staged = subprocess.run(["git", "write-tree"], env=env, capture_output=True, text=True)
    assert taken.worktree == staged.stdout.strip()


@pytest.mark.parametrize("seed", slow_after(range(12), 4))
def test_a_diff_asked_the_other_way_round_is_git_s(tmp_path, seed: int) -> None:
    """`changed_entries` of (new, old) after (old, new): the kept diff with its sides
    swapped (a stop's publish and the snapshot derived after it ask one each way), as
    ``diff-tree`` and a walk of its own give it: type changes, a file that becomes a folder,
    submodules, modes."""
    repo, tree = _repo(tmp_path)
    rng = random.Random(seed)
    git = find_repo(str(repo.path))
    changes = None
    while changes is None:
        changes = _changes(repo, git.files_of(tree), rng)
    if rng.random() < 0.4:
        changes = {**{p: c for p, c in changes.items() if not p.startswith("a/")}, "a/b": None}
        changes = {**changes, "a/b-c/d": None, "a/b.c": None, "a": ("100644", _blob(repo, "f"))}
    other = _written(git, tree, changes)
    pairs = [(tree, other), (other, tree)]
    for first, second in (pairs, pairs[::-1]):
        kept = find_repo(str(repo.path))
        asked = [kept.changed_entries(*first), kept.changed_entries(*second)]
        alone = [find_repo(str(repo.path)).changed_entries(*p) for p in (first, second)]
        by_git = [find_repo(str(repo.path))._diff_tree(*p) for p in (first, second)]
        assert asked == alone == by_git


def test_a_skip_walks_each_diff_once(tmp_path, monkeypatch) -> None:
    """A stop's publish diffs the stop's tree and the new HEAD's for the index, the snapshot
    derived after it the other way round: one walk (`changed_entries` kept either way)."""
    from patchstack.git.trees import Trees

    from .test_kept_verdicts import _fork

    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    walked: list[tuple[str, str]] = []
    real = Trees._changed_entries

    def counted(self, old, new):  # type: ignore[no-untyped-def]
        walked.append((old, new))
        return real(self, old, new)

    monkeypatch.setattr(Trees, "_changed_entries", counted)
    repo.ps("refresh", "--skip", code=1)
    pairs = [frozenset(p) for p in walked]
    assert len(pairs) == len(set(pairs)), walked
