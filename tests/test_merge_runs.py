"""Merge runs (engine/placer.py): the patches after one that needs a merge are merged with it
in one merge-tree when each only modifies files of its own. Each patch must still get the tree
and the conflict that merging it alone gives, whatever the run meets: a proven patch before it
on the same file, a patch upstream already has, a conflict halfway, a file upstream deleted, two
patches on one file."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo, numbered, replace_line
from .test_replay_exact import alone_and_in_runs

FILES = ["a", "b", "c", "d", "g", "h", "x", "y"]

# (patch, file, line edited): in series order.
SERIES = [
    ("p0-proven", "x", 5),  # upstream leaves x.py and y.py alone: the proven path
    ("p0b-proven", "y", 5),
    ("p1-merge", "a", 10),  # upstream edits a.py far away: the run starts here
    ("p2-same-file-as-p0", "x", 30),
    ("p3-upstream-has-it", "d", 20),  # upstream makes the very same change
    ("p4-merge", "b", 10),
    ("p5-conflict", "c", 10),  # upstream edits the next line: the run stops before it
    ("p6-same-file-as-p0b", "y", 30),  # in the run cut short by p5: y.py put back as p0b left it
    ("p7-file-deleted", "g", 10),  # upstream deletes g.py: modify/delete
    ("p8-merge", "h", 10),
    ("p9-again-a", "a", 12),  # a.py again: a run holds one patch per file
    ("p10-y-again", "y", 14),
    ("p11-proven", "y", 20),  # y.py again: after p8's run, by the proven path
    ("p12-upstream-has-it-too", "d", 30),  # the first of a run, after a proven patch
    ("p13-merge", "h", 20),
    ("p14-adds-a-file", "z", 0),  # a new file: no run goes through it
    ("p15-merge", "b", 20),
]


def fork(path: Path) -> tuple[Repo, str]:
    return _fork(path.parent, path.name)


@built_once
def _fork(folder: Path, name: str) -> tuple[Repo, str]:
    path = folder / name
    repo = make_repo(path, {f"{f}.py": numbered(40, f) for f in FILES})
    repo.git("branch", "upstream")
    repo.ps("init")
    for name, f, line in SERIES:
        if line:
            replace_line(repo, f"{f}.py", f"{f} {line}\n", f"{f} {line} {name}\n")
        else:
            repo.write(f"{f}.py", f"{name}\n")
        repo.ps("new", name, "-t", "essential", "-m", f"{name}\n", f"{f}.py")
    wt = path.parent / f"{path.name}-upstream"
    repo.git("worktree", "add", "-q", str(wt), "upstream")
    up = Repo(wt)
    for f in "abh":
        replace_line(up, f"{f}.py", f"{f} 35\n", f"{f} 35 upstream\n")
    replace_line(up, "d.py", "d 20\n", "d 20 p3-upstream-has-it\n")
    replace_line(up, "d.py", "d 30\n", "d 30 p12-upstream-has-it-too\n")
    replace_line(up, "c.py", "c 11\n", "c 11 upstream\n")
    (wt / "g.py").unlink()
    return repo, up.commit_all("Upstream moves")


@pytest.mark.parametrize("batch", ["1", None], ids=["process-per-merge", "git-default"])
def test_each_patch_of_a_run_gets_its_own_merge(tmp_path, monkeypatch, batch) -> None:
    repo, target = fork(tmp_path / "fork")
    if batch:
        monkeypatch.setenv("PATCHSTACK_NO_MERGE_BATCH", batch)
    replayed = alone_and_in_runs(repo, target, tmp_path, monkeypatch)
    (alone, alone_conflicts, _), (runs, runs_conflicts, commands) = replayed
    assert [c[0] for c in alone_conflicts] == ["p5-conflict.patch", "p7-file-deleted.patch"]
    assert runs_conflicts == alone_conflicts
    assert runs == alone
    upstream = [name for name, parent, tree in alone if parent == tree]
    assert upstream == ["p3-upstream-has-it.patch", "p12-upstream-has-it-too.patch"]
    if batch:  # runs p1..p4, p8..p10 and p12..p13; p5, p7 and p15 alone (p5 only exactly,
        # for its report: the run saw it conflict, so merging it from the anchor would too);
        # one by one, the eleven merged patches take a merge each
        assert commands.count("merge-tree") == 6


def test_refresh_and_check_through_runs(tmp_path) -> None:
    """The commands around the replay: check lists the two conflicts, refresh stops at the
    first with the patches before it committed on the new base as merge-ort makes them."""
    repo, target = fork(tmp_path / "fork")
    out = repo.ps("check", "--onto", target, code=1).stdout
    assert "p5-conflict" in out and "p7-file-deleted" in out
    repo.ps("refresh", "--onto", target, code=1)
    log = repo.git("log", "--format=%s", f"{target}..HEAD").split()
    assert log == ["p4-merge", "p2-same-file-as-p0", "p1-merge", "p0b-proven", "p0-proven"]
    assert "a 10 p1-merge" in repo.read("a.py") and "a 35 upstream" in repo.read("a.py")
