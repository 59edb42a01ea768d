"""What a skip of a refresh stop by stop costs (issue 35, item 7): each cut against the path
it replaces."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from patchstack.engine import contract
from patchstack.git.repo import Git, find_repo
from patchstack.journal.oplog import current_refresh

from .conftest import Repo, make_repo, numbered, slow_after
from .refresh_fixtures import series_fork

# -- the region's merge put back into ours in one tree edit ---------------------------------

NAMES = ["a", "a/b", "a/b/c", "a/d", "e", "e/f", "g/h/i", "g/j"]


@pytest.mark.parametrize("seed", slow_after(range(30), 10))
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


# -- the user's own files at a stop, read off the publish's scan of the work tree -------------


def _users_fork(tmp_path: Path, name: str) -> Repo:
    from . import test_kept_verdicts as kv

    files = {f"{n}.py": numbered(30, n) for n in "fug"}
    files |= {"keep.py": numbered(5, "keep"), "staged.py": numbered(5, "st")}
    return series_fork(tmp_path / name, files, kv.SERIES, kv.UPSTREAM)


def _at_stop(repo: Repo) -> list[list[str]]:
    blob = current_refresh(find_repo(str(repo.path)))
    assert blob is not None
    return json.loads(repo.git("cat-file", "blob", blob))["at_stop"]


def _user_works(repo: Repo, stops: int) -> None:
    """What a user does at a stop: edits a file the refresh does not move, adds an untracked
    file, stages a change and takes it back in the work tree, touches a file (its stat data
    only), deletes one; at the second, edits the stopped patch's file too."""
    if stops == 1:
        repo.write("keep.py", numbered(5, "keep") + "mine\n")
        repo.write("scratch.txt", "notes\n")
        repo.write("staged.py", numbered(5, "st") + "staged\n")
        repo.git("add", "staged.py")
        repo.write("staged.py", numbered(5, "st"))
        os.utime(repo.path / "u.py", (1, 1))
    if stops == 2:
        (repo.path / "keep.py").unlink()
        repo.write("other.txt", "more\n")


def _moved_stop_by_stop(repo: Repo) -> tuple[list[Any], Any]:
    repo.write("early.txt", "there before the refresh\n")
    said = [repo.ps("refresh", "--onto", "up", code=1).stderr]
    kept = [_at_stop(repo)]
    while True:
        _user_works(repo, len(said))
        if len(said) == 3:  # C's stop: resolved as the new base has f.py, and continued
            repo.write("f.py", repo.git("show", "HEAD:f.py"))
            step = repo.ps("refresh", "--continue", code=None)
        else:
            step = repo.ps("refresh", "--skip", code=None)
        said.append(step.stdout + step.stderr)
        if step.exit_code != 1:
            break
        kept.append(_at_stop(repo))
    assert step.exit_code == 0, step.stderr
    return [said, kept], repo.state()


def test_a_stop_reads_the_users_files_off_the_publishs_scan(tmp_path: Path, monkeypatch) -> None:
    """Differential: every stop records the same user's files (`taking.at_stop`), prints the
    same, and the refresh (its last stop continued) ends in the same state, with the files
    read off the snapshot the publish takes and with a ``git status`` of their own
    (``PATCHSTACK_NO_SCANNED_AT_STOP=1``); the user's edits, untracked files and deletion
    are where the user left them, none taken into the patch continued."""
    repo, plain = _users_fork(tmp_path, "fork"), _users_fork(tmp_path, "plain")
    scanned = _moved_stop_by_stop(repo)
    monkeypatch.setenv("PATCHSTACK_NO_SCANNED_AT_STOP", "1")
    assert _moved_stop_by_stop(plain) == scanned
    (said, kept), _state = scanned
    assert len(said) == 4, said  # A, B and C stop
    assert [p for p, _f in kept[0]] == ["early.txt"], kept
    assert [p for p, _f in kept[1]] == ["early.txt", "keep.py", "scratch.txt", "staged.py"]
    assert [p for p, _f in kept[2]] == [
        "early.txt", "keep.py", "other.txt", "scratch.txt", "staged.py"
    ]  # fmt: skip
    assert not (repo.path / "keep.py").exists()
    patches = "".join(p.read_text() for p in (repo.path / "patches").glob("*.patch"))
    assert "C f15" in repo.read("patches/C.patch")  # C, continued, is the patch it was
    assert not any(f in patches for f in ("keep.py", "scratch.txt", "staged.py", "early"))
    assert repo.read("scratch.txt") == "notes\n" and repo.read("other.txt") == "more\n"


@pytest.mark.parametrize("most", [100, 0])
def test_a_skip_runs_no_status_of_its_own(tmp_path: Path, monkeypatch, most) -> None:
    """A skip's stop scans the work tree once, for the publish's snapshot: no ``git status``;
    but where more files' stat data differs than `taking.STAT_DIRTY_MAX` (a copied work
    tree: each would be hashed again), ``git status`` (which refreshes the index)."""
    from patchstack.commands.refresh import taking

    monkeypatch.setattr(taking, "STAT_DIRTY_MAX", most)
    repo = _users_fork(tmp_path, "fork")
    repo.ps("refresh", "--onto", "up", code=1)
    _user_works(repo, 1)
    asked: list[int] = []
    real = Git.dirty

    def counted(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Git, "dirty", counted)
    assert repo.ps("refresh", "--skip", code=None).exit_code == 1
    assert asked == ([] if most else [1])
    assert [p for p, _f in _at_stop(repo)] == ["keep.py", "scratch.txt", "staged.py"]


# -- where the patches land on the old base, kept from one stop for the next ------------------


@pytest.mark.parametrize("cache", [True, False])
def test_a_skip_replays_on_the_old_base_only_what_no_stop_before_placed(
    tmp_path: Path, monkeypatch, cache
) -> None:
    """A verdict places its patch where it lands on the old base with the same patches left
    out (`landings.on_old_base`); a skip replays there only the steps after those an earlier
    command placed with the same ones left out (kept by the digest of the steps up to each):
    A's skip places U2 after A left out, B's skip goes on from B. The stops print the same
    either way (`test_kept_verdicts`: every stop and the series, with the cache and without)."""
    from patchstack.engine import landings

    from . import test_kept_verdicts as kv

    if not cache:
        monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    repo = kv._fork(tmp_path)
    starts: list[int] = []
    real = landings.replay

    def spied(git, steps, start, *args, **kwargs):  # type: ignore[no-untyped-def]
        starts.append(start)
        return real(git, steps, start, *args, **kwargs)

    monkeypatch.setattr(landings, "replay", spied)
    repo.ps("refresh", "--onto", "up", code=1)  # A stops
    assert repo.ps("refresh", "--skip", code=None).exit_code == 1  # U2 judged; B stops
    assert starts == [1], starts  # from A, left out
    starts.clear()
    assert repo.ps("refresh", "--skip", code=None).exit_code == 1  # U3 judged; C stops
    assert starts == ([3] if cache else [1]), starts  # from B


# -- a clean merge made once whatever its labels ---------------------------------------------


@pytest.mark.parametrize("plain", [False, True])
def test_a_clean_merge_of_the_same_trees_is_made_once(tmp_path: Path, monkeypatch, plain) -> None:
    """A verdict's check that a patch changes something where it lands on the old base
    (`evidence.first_holding`, labels "upstream") is the merge its landing made (labels "old
    base"): made once when clean; a conflicting one is made again under its own labels (its
    markers name them); ``PATCHSTACK_NO_FAST_PATH=1``: each made."""
    if plain:
        monkeypatch.setenv("PATCHSTACK_NO_FAST_PATH", "1")
    repo = make_repo(tmp_path / "r", {"a.py": "1\n2\n3\n4\n5\n6\n"})
    git = find_repo(str(repo.path))
    before = git.tree_of("HEAD")
    repo.write("a.py", "1\n2\n3\n4\n5\nsix\n")
    repo.commit_all("patch")
    after = git.tree_of("HEAD")
    clean_onto = git.edit_tree(before, {"b.py": ("100644", git.write_blob(b"b\n"))})
    repo.write("a.py", "1\n2\n3\n4\n5\nSIX\n")
    repo.commit_all("upstream")
    conflict_onto = git.tree_of("HEAD")
    made: list[tuple[str, str]] = []
    real = Git.merge_trees

    def counted(self, base, ours, theirs, labels):  # type: ignore[no-untyped-def]
        made.append(labels)
        return real(self, base, ours, theirs, labels)

    monkeypatch.setattr(Git, "merge_trees", counted)
    monkeypatch.setattr(contract, "place_region", lambda *args: None)  # each merge whole
    first = contract.place_fast(git, before, clean_onto, after, ("old base", "P"))
    again = contract.place_fast(git, before, clean_onto, after, ("upstream", "patch"))
    assert first.clean and (again.tree, again.clean) == (first.tree, True)
    assert len(made) == (2 if plain else 1), made
    one = contract.place_fast(git, before, conflict_onto, after, ("old base", "P"))
    two = contract.place_fast(git, before, conflict_onto, after, ("upstream", "patch"))
    assert not one.clean and not two.clean and one.tree != two.tree  # the markers differ
    assert len(made) == (4 if plain else 3), made
