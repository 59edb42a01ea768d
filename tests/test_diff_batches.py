"""`Git.diff_patches` (one ``diff-tree --stdin`` for many pairs, split at git's echo of each
pair) gives each pair exactly what `Git.diff_patch` (a process each) gives: empty diffs,
binary files, a file whose text is a pair's echo, paths limited or not."""

from __future__ import annotations

from pathlib import Path

from .conftest import make_repo


def test_diff_patches_equal_one_diff_tree_per_pair(tmp_path: Path) -> None:
    from patchstack.git import find_repo

    repo = make_repo(tmp_path / "r", {"a": "1\n", "d/b": "x\n", "e f": "space\n"})
    trees = [repo.tree()]
    repo.write("a", "1\n2\n")
    repo.commit_all("two")
    trees.append(repo.tree())
    (repo.path / "bin").write_bytes(bytes(range(256)) * 4)
    repo.write("d/b", f"{trees[0]} {trees[1]}\n")  # (a line like git's echo, as text)
    repo.commit_all("binary, and an echo-like line")
    trees.append(repo.tree())
    repo.git("rm", "-q", "e f")
    (repo.path / "bin").write_bytes(bytes(range(255, -1, -1)) * 4)
    repo.commit_all("gone, binary changed")
    trees.append(repo.tree())
    head = repo.head()
    pairs = [
        (trees[0], trees[1]),
        (trees[1], trees[1]),  # (nothing between: the next echo follows at once)
        (trees[1], trees[2]),
        (trees[2], trees[3]),
        (trees[3], trees[0]),
        (trees[2], head),  # (a commit: its tree is what is compared)
        (trees[1], trees[1]),
    ]
    git = find_repo(str(repo.path))
    try:
        for paths in ([], ["a"], ["d", "bin"], ["e f", "bin", "nowhere"]):
            batched = git.diff_patches(pairs, paths)
            alone = [git.diff_patch(a, b, paths) for a, b in pairs]
            assert batched == alone
        assert git.diff_patches([], ["a"]) == []
        assert b"GIT binary patch" in git.diff_patches(pairs, [])[2]
    finally:
        git.close()
