"""The ``-U0`` hunks a verdict reads (`madeby.removes_made_by`: which left-out patch made a line
a patch removes) asked of one ``diff-tree --stdin -p`` for the pairs of trees of every patch a
command judges, kept for the command (`git.hunks.pairs_hunks`), instead of one process a
question (`Listings.line_hunks`, 9 for one weight-sync skip). Differential: the same hunks as
`line_hunks` for generated pairs and paths (binary files, mode changes, quoted names, files
made and deleted); stop by stop, the same stops and series as one process a question
(``PATCHSTACK_NO_PAIR_HUNKS=1``)."""

from __future__ import annotations

import random

import pytest

from patchstack.git import find_repo, hunks
from patchstack.git.hunks import only, pairs_hunks
from patchstack.git.listings import Listings

from .conftest import copy_repo, make_repo, numbered, slow_after
from .refresh_fixtures import series_fork, stop_by_stop

NAMES = ["a.py", "dir/b.py", 'q"uote.txt', "tab\tname.txt", "ünï.txt", "sp ace.md", "bin.dat"]


@pytest.mark.parametrize("seed", slow_after(range(12), 4))
def test_the_hunks_of_many_pairs_are_those_of_one_process_a_pair(
    tmp_path, monkeypatch, seed
) -> None:
    rng = random.Random(seed)
    repo = make_repo(tmp_path / "r", {"a.py": numbered(30, "a")})
    trees = [repo.tree()]
    for _ in range(5):
        for name in rng.sample(NAMES, rng.randint(1, 4)):
            full = repo.path / name
            what = rng.choice(["edit", "edit", "delete", "mode", "noeol"])
            if what == "delete" and (full.exists() or full.is_symlink()):
                full.unlink()
                continue
            full.parent.mkdir(parents=True, exist_ok=True)
            if name == "bin.dat":
                full.write_bytes(bytes(rng.randrange(256) for _ in range(64)) + b"\0")
            elif what == "mode" and full.exists():
                full.chmod(full.stat().st_mode ^ 0o111)
            else:
                lines = full.read_text().splitlines(True) if full.exists() else []
                lines = lines or [f"{name} {i}\n" for i in range(20)]
                for _ in range(rng.randint(1, 4)):
                    at = rng.randrange(len(lines) + 1)
                    if rng.random() < 0.5:
                        lines.insert(at, f"new {at}\n")
                    else:
                        del lines[at : at + 2]
                text = "".join(lines)
                full.write_text(text.rstrip("\n") if what == "noeol" else text)
        repo.git("add", "-A")
        repo.git("commit", "-q", "--allow-empty", "-m", f"change {len(trees)}")
        trees.append(repo.tree())
    git = find_repo(str(repo.path))
    pairs = [(rng.choice(trees), rng.choice(trees)) for _ in range(8)]
    asked = [rng.sample([*NAMES, "dir", "missing.py"], rng.randint(0, 4)) for _ in pairs]
    given = {p for paths in asked for p in paths} | set(rng.sample(NAMES, 2))
    found = pairs_hunks(git, pairs, given)  # (git's pathspec: these paths)
    whole = pairs_hunks(find_repo(str(repo.path)), pairs)
    questions: list[int] = []
    monkeypatch.setattr(hunks, "_ask", lambda *args: questions.append(1))
    assert pairs_hunks(git, pairs[:3], sorted(given)[:2]) == found[:3]  # kept: asked of none
    assert questions == []
    for (a, b), kept, all_files, paths in zip(pairs, found, whole, asked, strict=True):
        plain = git.line_hunks(a, b, paths)
        assert only(kept, paths) == plain == only(all_files, paths), (a, b, paths)


SERIES: list[tuple[str, list[tuple[str, int, str | None]]]] = [
    ("U1", [("u", 3, "U1 u3")]),
    ("A", [("f", 5, "A f5"), ("new", 0, "new 1\nnew 2\n")]),
    ("U2", [("u", 10, "U2 u10")]),
    ("B", [("f", 10, "B f10"), ("g", 10, "B g10")]),
    ("P", [("new", 0, None)]),
    ("Q", [("f", 20, "Q f20"), ("g", 20, "Q g20")]),
    ("R", [("f", 20, "f 20"), ("g", 20, "g 20")]),
    ("D", [("f", 25, "D f25")]),
]
UPSTREAM = [
    ("takes U1", [("u", 3, "U1 u3")]),
    ("rewrites f", [("f", 5, "up f5"), ("f", 10, "up f10"), ("g", 10, "up g10")]),
    ("takes U2", [("u", 10, "U2 u10")]),
    ("moves g", [("g", 2, "up g2"), ("g", 20, "up g20")]),
]


def test_stop_by_stop_the_verdicts_are_those_of_one_process_a_question(
    tmp_path, monkeypatch
) -> None:
    asked: list[tuple[str, str]] = []
    real = Listings.line_hunks

    def counted(self, a, b, paths):  # type: ignore[no-untyped-def]
        asked.append((a, b))
        return real(self, a, b, paths)

    monkeypatch.setattr(Listings, "line_hunks", counted)
    files = {f"{n}.py": numbered(30, n) for n in "fug"}
    repo = series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)
    plain = copy_repo(repo.path, tmp_path / "plain")
    batched = stop_by_stop(repo)
    assert asked == []
    monkeypatch.setenv("PATCHSTACK_NO_PAIR_HUNKS", "1")
    assert stop_by_stop(plain) == batched
    assert asked  # (the plain path: one process a question)
    stops, last, series = batched
    assert len(stops) >= 2 and "no-op" in last, last
    assert repo.state() == plain.state()
