"""The rename proof of a resumed replay (`KnockOns.resumed_proof`): a skip (or a continue)
merges a patch whose file ours lost on its own paths when no file upstream added is alike
enough to be taken for it, as the first command's replay does, and takes the verdicts an
earlier command of the refresh reached instead of comparing the files again.

Differential: a refresh stop by stop prints the same stops, leaves the same series and
commits with the proof and without it (``PATCHSTACK_NO_RESUMED_RENAMES=1``, every such merge
the whole one), and the commits are ``git rebase``'s (each conflict skipped). What git itself
did is read off its trace (``GIT_TRACE2_PERF``): with the proof no ``merge-tree`` compared
files for renames, and the second skip compared nothing at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import differential
from .conftest import Repo, built_once, copy_repo, make_repo, numbered, slow_after
from .refresh_fixtures import stop_by_stop
from .test_renames import UPSTREAM_FILES, as_series, body, copy_detections, merge_trees_comparing

SWITCH = "PATCHSTACK_NO_RESUMED_RENAMES"


@built_once
def fork_losing_files(tmp_path: Path, alike: bool) -> tuple[Repo, str]:
    """Patch 1 conflicts with upstream in ``core.py``; patches 2 and 3 edit ``src/old.py``
    and ``src/other.py``, which upstream deleted (each a modify/delete: the merge looks for
    where ours renamed them); patch 4 edits ``core2.py``, cleanly. Upstream adds many files;
    with ``alike``, one is ``src/old.py`` moved and edited (git pairs them: patch 2 lands
    there, cleanly)."""
    files = {
        "core.py": numbered(20, "core"),
        "core2.py": numbered(20, "two"),
        "src/old.py": body("old", 40),
        "src/other.py": body("other", 40),
    }
    repo = make_repo(tmp_path / "fork", files)
    base = repo.head()
    repo.git("checkout", "-q", "-b", "up")
    repo.write("core.py", numbered(20, "core").replace("core 5\n", "core 5 upstream\n"))
    repo.git("rm", "-q", "src/old.py", "src/other.py")
    for i in range(UPSTREAM_FILES):
        repo.write(f"vendor/v{i}.py", body(f"vendor{i}"))
    if alike:
        repo.write("lib/moved.py", body("old", 40).replace("old line 39:", "old line 39 (up):"))
    repo.commit_all("upstream moves on")
    repo.git("checkout", "-q", "-B", "work", base)
    repo.write("core.py", numbered(20, "core").replace("core 5\n", "core 5 patch\n"))
    repo.commit_all("core patch")
    repo.write("src/old.py", body("old", 40).replace("old line 2:", "old line two:"))
    repo.commit_all("edit old")
    repo.write("src/other.py", body("other", 40).replace("other line 3:", "other line three:"))
    repo.commit_all("edit other")
    repo.write("core2.py", numbered(20, "two").replace("two 9\n", "two nine\n"))
    repo.commit_all("edit two")
    return repo, as_series(repo, base)


def traced_skip(repo: Repo, trace: Path):
    trace.mkdir()
    os.environ["GIT_TRACE2_PERF"] = str(trace) + "/"
    try:
        return repo.ps("refresh", "--skip", code=None)
    finally:
        del os.environ["GIT_TRACE2_PERF"]


def git_rebase(repo: Repo, head: str, tmp_path: Path) -> differential.Outcome:
    base, up = (repo.git("rev-parse", r).strip() for r in ("base", "up"))
    return differential.rebase(repo, head, base, up, tmp_path / "rebase")


# One file alike by default (its stops also check the moved file's lines); none alike under
# -m slow.
@pytest.mark.parametrize("alike", slow_after([True, False], 1), ids=["one-alike", "none-alike"])
def test_a_refresh_stop_by_stop_is_the_same_without_the_proof(
    tmp_path: Path, monkeypatch, alike: bool
) -> None:
    repo, head = fork_losing_files(tmp_path, alike)
    plain = copy_repo(repo.path, tmp_path / "plain")
    ref = git_rebase(repo, head, tmp_path)
    proven = stop_by_stop(repo)
    monkeypatch.setenv(SWITCH, "1")
    assert stop_by_stop(plain) == proven
    for made in (repo, plain):
        assert differential.commits_of(made, "up", "HEAD") == ref.commits
    old = () if alike else ("edit-old.patch",)
    assert ref.conflicts == ("core-patch.patch", *old, "edit-other.patch")
    assert len(proven[0]) == len(ref.conflicts)
    if alike:
        assert "old line two:" in repo.read("lib/moved.py")


def test_a_skip_merges_a_lost_file_on_its_paths_and_the_next_compares_nothing(
    tmp_path: Path,
) -> None:
    repo, head = fork_losing_files(tmp_path, False)
    repo.ps("refresh", "--onto", "up", code=1)
    first = traced_skip(repo, tmp_path / "skip1")
    assert first.exit_code == 1 and "edit-old.patch" in first.stderr
    assert merge_trees_comparing(tmp_path / "skip1") == 0  # the modify/delete on its paths
    assert copy_detections(tmp_path / "skip1") == 1  # old.py and other.py judged at once
    second = traced_skip(repo, tmp_path / "skip2")
    assert second.exit_code == 1 and "edit-other.patch" in second.stderr
    assert merge_trees_comparing(tmp_path / "skip2") == 0
    assert copy_detections(tmp_path / "skip2") == 0  # the verdicts kept by the first skip
    repo.ps("refresh", "--skip")
    assert differential.commits_of(repo, "up", "HEAD") == git_rebase(repo, head, tmp_path).commits


def test_without_the_proof_a_skip_makes_the_whole_merge(tmp_path: Path, monkeypatch) -> None:
    repo, _head = fork_losing_files(tmp_path, False)
    repo.ps("refresh", "--onto", "up", code=1)
    monkeypatch.setenv(SWITCH, "1")
    first = traced_skip(repo, tmp_path / "skip1")
    assert first.exit_code == 1 and "edit-old.patch" in first.stderr
    assert merge_trees_comparing(tmp_path / "skip1") >= 1  # what the proof saves
    assert copy_detections(tmp_path / "skip1") == 0


def test_a_kept_verdict_of_another_form_is_none(tmp_path: Path) -> None:
    """The kept verdicts are a cache: an entry of another form, or a place not of the proof's
    form, is not taken (the file is judged again)."""
    from patchstack.engine.renames import PREFIX, RenameProof
    from patchstack.git.repo import find_repo

    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    git = find_repo(str(repo.path))
    tree = git.tree_of("HEAD")
    blob = git.write_blob(b"x\n")
    known = [
        ["a.py", blob, f"{PREFIX}/7/a.py"],
        ["b.py", blob, "elsewhere/b.py"],
        ["c.py", "not an id", f"{PREFIX}/1/c.py"],
        ["d.py", blob],
        ["e.py", blob, ""],
    ]
    proof = RenameProof(git, tree, tree, [], lambda: known)
    proof._load()
    assert proof.verdicts == {("a.py", blob): True, ("e.py", blob): False}
    assert proof.serial == 8  # a place judged later is another one
    assert sorted(proof.known()) == sorted([["a.py", blob, f"{PREFIX}/7/a.py"], ["e.py", blob, ""]])


def test_the_files_upstream_added_at_some_paths_are_those_of_the_whole_diff(
    tmp_path: Path,
) -> None:
    """`RenameProof._added_at` (read off the two trees at the paths asked) gives what the
    whole drift's ``diff-tree -r`` lists as added there: files where the old base has none or
    a folder, not a gitlink; folders, type changes and gitlinks around them."""
    from patchstack.engine.renames import RenameProof
    from patchstack.git.repo import find_repo

    repo = make_repo(tmp_path / "r", {"keep.py": "k\n", "mod.py": "m\n", "gone.py": "g\n"})
    repo.write("f2d", "a file that becomes a folder\n")
    repo.write("d2f/inner.py", "a folder that becomes a file\n")
    repo.write("link", "a file that becomes a gitlink\n")
    repo.commit_all("old base")
    old = repo.head()
    repo.git("rm", "-q", "gone.py", "f2d", "link")
    repo.git("rm", "-q", "-r", "d2f")
    repo.write("mod.py", "m2\n")
    repo.write("new/deep/file.py", "new\n")
    repo.write("f2d/x.py", "x\n")
    repo.write("d2f", "now a file\n")
    (repo.path / "sym").symlink_to("keep.py")
    repo.git("add", "-A")
    for path in ("sub", "link"):
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{old},{path}")
    repo.git("commit", "-q", "-m", "new base")
    git = find_repo(str(repo.path))
    trees = git.trees_of([old, "HEAD"])
    paths = [
        *("keep.py", "mod.py", "gone.py", "f2d", "f2d/x.py", "d2f", "d2f/inner.py", "link"),
        *("new", "new/deep", "new/deep/file.py", "sym", "sub", "absent.py", "keep.py/x"),
    ]
    whole = RenameProof(git, trees[0], trees[1], [])._added()
    assert sorted(whole) == ["d2f", "f2d/x.py", "new/deep/file.py", "sym"]
    at = RenameProof(git, trees[0], trees[1], [])._added_at(paths)
    assert at == {p: whole[p] for p in paths if p in whole}


def test_a_question_whose_verdicts_were_all_kept_reads_no_drift(tmp_path: Path) -> None:
    """A resumed replay's first question judges the candidates not yet judged: when the kept
    verdicts hold them all, nothing is compared and the drift's whole diff (A, thousands of
    files on a real fork) is not read; the answer is the kept verdict's."""
    from patchstack.engine.renames import PREFIX, RenameProof
    from patchstack.git.repo import find_repo

    repo = make_repo(tmp_path / "r", {"a.py": "a\n", "b.py": "b\n"})
    git = find_repo(str(repo.path))
    old = git.tree_of("HEAD")
    repo.git("rm", "-q", "a.py")
    repo.write("c.py", "c\n")
    repo.commit_all("drift")
    new = git.tree_of("HEAD")
    blob = git.write_blob(b"the old a\n")
    known = [["a.py", blob, f"{PREFIX}/0/a.py"]]
    proof = RenameProof(git, old, new, lambda: [("a.py", blob)], lambda: known)
    proof.start(background=False)
    assert proof.none_alike(old, new, {"a.py": blob})
    assert proof.added is None and proof.pending is None
