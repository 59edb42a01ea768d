"""Where relocation looks for a hunk (`Relocator._holding`): the candidate files that have
the block's longest line as a whole line. Each file's lines are kept as a set (one lookup a
hunk) instead of one search of every file's bytes a hunk; the answer must hold every file
that has the line, as the plain search does (a file left out would hide a place)."""

from __future__ import annotations

from pathlib import Path

from patchstack.engine.relocate import Relocator
from patchstack.git import find_repo

from .conftest import make_repo

FILES = {
    "a.py": "def f():\n    return 1\n\nx = 2\n",
    "b.py": "def f():\n    return 10\n",  # "    return 1" only as a prefix here
    "c.py": "no newline at the end\n    return 1",  # the line last, without its newline
    "d.py": "crlf line\r\n    return 1\r\n",  # "    return 1\r": not the same line
    "e.py": "",
    "f.py": "only\n\n\nblanks\n",
}


def _plain(files: dict[str, str], line: str) -> set[str]:
    """The paths whose bytes hold ``line`` as a whole line (split on newlines only)."""
    return {p for p, text in files.items() if line in text.split("\n")}


def test_the_lookup_finds_every_file_that_has_the_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"old.txt": "old\n"})
    base = repo.head()
    for path, text in FILES.items():
        repo.write(path, text)
    repo.commit_all("upstream")
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    relocator = Relocator(git, base, repo.head())
    files = relocator._candidates(onto)  # path -> blob of the files the drift changed
    by_blob: dict[str, set[str]] = {}
    for path, blob in files.items():
        by_blob.setdefault(blob, set()).add(path)
    for line in ["    return 1", "def f():", "x = 2", "crlf line\r", "", "blanks", "absent"]:
        found = {p for b in relocator._holding(onto, [line]) for p in by_blob[b]}
        wanted = _plain({p: FILES[p] for p in files}, line)
        # the empty line: every file that has one, and maybe more (a superset is the contract)
        assert found == wanted if line else found >= wanted, line
    assert relocator._holding(onto, []) == set()
    git.close()


def test_the_places_of_a_line_are_the_line_index_s() -> None:
    """`relocate._places` (a split file's hunk looked for where its first line is)."""
    import random

    from patchstack.engine.relocated import _places
    from patchstack.model.relocation import line_index

    rng = random.Random(3)
    for _ in range(200):
        lines = rng.choices(["a", "b", "", "c d"], k=rng.randrange(0, 12))
        index = line_index(lines)
        for line in ["a", "b", "", "c d", "e"]:
            assert _places(lines, line) == index.get(line, [])
