"""What a skip of a refresh stop by stop costs (issue 35, item 7): each cut against the path
it replaces."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from patchstack.engine import contract
from patchstack.git.repo import Git, find_repo

from .conftest import make_repo

# -- the region's merge put back into ours in one tree edit ---------------------------------

NAMES = ["a", "a/b", "a/b/c", "a/d", "e", "e/f", "g/h/i", "g/j"]


@pytest.mark.parametrize("seed", range(30))
def test_putting_a_region_back_in_one_edit_is_the_two_edits_tree(tmp_path: Path, seed) -> None:
    """`contract.put_back` gives the tree of removing ours' files and writing the merge's,
    one after the other, also where a file of one side is a folder of the other's."""
    rng = random.Random(seed)
    files = {}
    for name in rng.sample(NAMES, 4):
        if not any(name.startswith(f + "/") or f.startswith(name + "/") for f in files):
            files[name] = f"{name} {seed}\n"
    repo = make_repo(tmp_path / f"r{seed}", files)
    git = find_repo(str(repo.path))
    tree = git.tree_of("HEAD")
    blob = git.write_blob(b"made\n")
    gone = rng.sample(sorted(files), rng.randint(0, len(files)))
    made = {p: ("100644", blob) for p in rng.sample(NAMES, rng.randint(0, 3))}
    made = {p: e for p, e in made.items() if not any(q.startswith(p + "/") for q in made)}
    two = git.edit_tree(git.edit_tree(tree, dict.fromkeys(gone)), dict(made))
    assert contract.put_back(git, tree, gone, made) == two


def test_a_region_merge_is_put_back_in_one_edit(tmp_path: Path, monkeypatch) -> None:
    """The merge of a patch's paths alone (`contract.place_region`) writes ours' tree once:
    three cut trees and one edit (it was two: ours' files out, the merge's in)."""
    repo = make_repo(tmp_path / "r", {"src/m/a.py": "1\n2\n3\n", "src/n/b.py": "x\n"})
    git = find_repo(str(repo.path))
    before = git.tree_of("HEAD")
    repo.write("src/m/a.py", "1\n2\nthree\n")
    repo.commit_all("patch")
    after = git.tree_of("HEAD")
    repo.git("reset", "-q", "--hard", "HEAD^")
    repo.write("src/n/b.py", "y\n")
    repo.commit_all("upstream")
    ours = git.tree_of("HEAD")
    edits: list[int] = []
    real = Git.edit_tree

    def counted(self, tree, changes):  # type: ignore[no-untyped-def]
        edits.append(1)
        return real(self, tree, changes)

    monkeypatch.setattr(Git, "edit_tree", counted)
    diff = git.changed_entries(before, after)
    found = contract.place_region(git, before, ours, after, diff, ("a", "b"))
    assert found is not None and found.clean
    assert len(edits) == 4, edits
    monkeypatch.setattr(Git, "edit_tree", real)
    assert found.tree == contract.place(git, before, ours, after, ("a", "b")).tree
