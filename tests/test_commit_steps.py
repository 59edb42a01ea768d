"""``Repo.commit_steps`` (one fast-import for a fixture's many commits) makes the very commits
that writing the files and ``commit_all`` one step at a time makes: the same ids."""

from __future__ import annotations

from pathlib import Path

from .conftest import make_repo, numbered


def test_fast_import_steps_are_the_commits_git_commit_makes(tmp_path: Path) -> None:
    files = {"a.py": numbered(5, "a"), "dir/b c.py": numbered(3, "b"), 'q"d.py': "x\n"}
    steps: list[tuple[str, dict[str, str | None]]] = [
        ("Patch 0\n\nPatchstack-Tag: essential", {"a.py": "a 1\nmine\n"}),
        ("Add two", {"new/one.py": "one\n", "dir/b c.py": "b\n"}),
        ("Delete one\n", {"a.py": None, 'q"d.py': "y\n"}),
    ]
    slow = make_repo(tmp_path / "slow", files)
    fast = make_repo(tmp_path / "fast", files)
    assert slow.head() == fast.head()
    by_commit = []
    for message, change in steps:
        for rel, text in change.items():
            if text is None:
                (slow.path / rel).unlink()
            else:
                slow.write(rel, text)
        by_commit.append(slow.commit_all(message))
    assert fast.commit_steps(steps) == by_commit
    assert fast.head() == slow.head() and fast.git("symbolic-ref", "HEAD") == "refs/heads/main\n"
    assert fast.status_all() == "" and fast.snapshot() == slow.snapshot()
