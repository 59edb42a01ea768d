"""What a skip reads (issue 35, round eleven): a tree written in process is read back from what
was written, not asked of git; the work tree's listing for `merge_inputs` begun when the skip
starts. Each against the path it replaces (``PATCHSTACK_NO_WRITTEN_TREES``,
``PATCHSTACK_NO_EARLY_INPUTS``)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from patchstack.git import Git, find_repo
from patchstack.git.objects import Objects
from patchstack.git.trees import WRITTEN_OFF

from . import test_skip_costs as sc
from . import test_tree_edit as te
from .conftest import slow_after


def _objects_asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The object names asked of git's batch reader from now on."""
    asked: list[str] = []
    real = Objects.read_objects

    def spied(self: Git, names):  # type: ignore[no-untyped-def]
        asked.extend(names)
        return real(self, names)

    monkeypatch.setattr(Objects, "read_objects", spied)
    return asked


@pytest.mark.parametrize("seed", slow_after(range(20), 6))
def test_a_tree_written_in_process_is_read_back_as_git_reads_it(
    tmp_path: Path, monkeypatch, seed: int
) -> None:
    """Trees edited one on another (as a replay's steps are) read back from what was written
    (no ``cat-file`` asked for them) give every entry git gives: `files_of` and
    `entries_at` against a reader with nothing remembered, and ``ls-tree -r -t``."""
    repo, tree = te._repo(tmp_path)
    git = find_repo(str(repo.path))
    rng = random.Random(seed)
    made = [tree]
    for _ in range(3):
        changes = None
        while changes is None:
            changes = te._changes(repo, git.files_of(made[-1]), rng)
        made.append(git.edit_tree(made[-1], changes))
    asked = _objects_asked(monkeypatch)
    paths = sorted({*te.PATHS, *te.FILES, "x/y", "a/b-c", "new/dir", "x"})
    ours = [(git.files_of(t), git.entries_at(t, paths)) for t in made[1:]]
    assert not set(asked) & set(made[1:]), "a tree just written was asked of git"
    monkeypatch.setenv(WRITTEN_OFF, "1")
    fresh = find_repo(str(repo.path))
    assert ours == [(fresh.files_of(t), fresh.entries_at(t, paths)) for t in made[1:]]
    for t, (files, _at) in zip(made[1:], ours, strict=True):
        listed = repo.git("ls-tree", "-r", "-z", t).split("\0")
        by_git = {r.split("\t")[1]: tuple(r.split("\t")[0].split()[0::2]) for r in listed if r}
        assert files == by_git


def test_trees_written_with_the_switch_are_asked_of_git(tmp_path: Path, monkeypatch) -> None:
    """``PATCHSTACK_NO_WRITTEN_TREES=1``: a tree written in process is read from git."""
    monkeypatch.setenv(WRITTEN_OFF, "1")
    repo, tree = te._repo(tmp_path)
    git = find_repo(str(repo.path))
    made = git.edit_tree(tree, {"new/dir/f": ("100644", te._blob(repo, "f\n"))})
    asked = _objects_asked(monkeypatch)
    assert git.files_of(made)["new/dir/f"][0] == "100644"
    assert made in asked
    assert os.environ[WRITTEN_OFF] == "1"


# -- merge_inputs' listing of the work tree begun when a skip starts ------------------------


def test_a_listing_begun_early_is_the_one_merge_inputs_reads(tmp_path: Path, monkeypatch) -> None:
    """`attributes.start_listing` lists the work tree when called: `merge_inputs` reads that
    listing (an attributes file made after it is not in the digest), and after
    `forget_listing` (every publish) lists it again; ``PATCHSTACK_NO_EARLY_INPUTS=1`` begins
    none."""
    from patchstack.git import attributes

    repo, _tree = te._repo(tmp_path)
    git = find_repo(str(repo.path))
    before = attributes.merge_inputs(git)
    attributes.start_listing(git)
    attributes.start_listing(git)  # (one at a time)
    assert len(git._background) == 1
    git._background[0].wait()
    (repo.path / "new").mkdir()
    (repo.path / "new" / ".gitattributes").write_text("*.c merge=union\n")
    assert attributes.merge_inputs(git) == before  # listed before the file was there
    assert not git._background
    after = attributes.merge_inputs(git)
    assert after != before
    attributes.start_listing(git)
    (repo.path / "new" / ".gitattributes").unlink()
    attributes.forget_listing(git)  # (a publish: the work tree moves)
    assert attributes.merge_inputs(git) == before
    monkeypatch.setenv(attributes.EARLY_OFF, "1")
    attributes.start_listing(git)
    assert (attributes._STARTED,) not in git._memo
    git.close()


def test_a_skip_lists_the_work_tree_early_and_stops_the_same(tmp_path: Path, monkeypatch) -> None:
    """Differential: stop by stop, every stop prints and records the same and the refresh ends
    in the same state with the listing begun when the skip starts and without
    (``PATCHSTACK_NO_EARLY_INPUTS=1``); each skip and continue lists the work tree once."""
    from patchstack.git import attributes

    repo, plain = sc._users_fork(tmp_path, "fork"), sc._users_fork(tmp_path, "plain")
    early = sc._moved_stop_by_stop(repo)
    monkeypatch.setenv(attributes.EARLY_OFF, "1")
    assert sc._moved_stop_by_stop(plain) == early
    monkeypatch.delenv(attributes.EARLY_OFF)
    begun: list[int] = []
    real = attributes.start_listing

    def counted(git: Git) -> None:
        begun.append((attributes._STARTED,) in git._memo)
        real(git)

    monkeypatch.setattr(attributes, "start_listing", counted)
    from patchstack.commands.refresh import resume

    monkeypatch.setattr(resume, "start_listing", counted)
    third = sc._users_fork(tmp_path, "third")
    third.ps("refresh", "--onto", "up", code=1)
    assert third.ps("refresh", "--skip", code=None).exit_code == 1
    assert begun == [False, True]  # begun by the skip; the replay's call finds it begun
