"""The commit that deleted each file a patch changes (`relocate`'s naming of the commit of a
modify/delete): one walk for all (`Git.deleted_by_each`) names for every path what one walk
per path (`Git.deleted_by`) names, on a history where files are deleted, brought back and
deleted again, deleted by a merge (against its first parent) and on a side branch only, a
folder is deleted with the files under it, and with more paths than git is given as a
pathspec (walked whole and filtered)."""

from __future__ import annotations

import pytest

from patchstack.git.history import PATHSPEC_MAX
from patchstack.git.repo import find_repo

from .conftest import make_repo


@pytest.mark.parametrize("extra", [0, PATHSPEC_MAX + 4])
def test_one_walk_names_what_a_walk_per_path_names(tmp_path, extra: int) -> None:
    files = {f"f{i}.py": f"f{i}\n" for i in range(6)}
    files |= {f"dir/d{i}.py": f"d{i}\n" for i in range(3)}
    files |= {f"pad/p{i}.py": f"p{i}\n" for i in range(extra)}
    repo = make_repo(tmp_path / "r", files)
    base = repo.head()
    repo.git("rm", "-q", "f0.py")
    repo.commit_all("delete f0")
    repo.write("f0.py", "back\n")
    repo.commit_all("f0 back")
    repo.git("rm", "-q", "f0.py", "f1.py")
    repo.commit_all("delete f0 again, and f1")
    repo.git("checkout", "-q", "-b", "side")
    repo.git("rm", "-q", "f2.py", "f3.py")
    repo.commit_all("side deletes f2 and f3")
    repo.git("checkout", "-q", "main")
    repo.git("rm", "-q", "f3.py")
    repo.commit_all("main deletes f3")
    repo.git("merge", "-q", "--no-ff", "-m", "merge side", "side")  # deletes f2 on main
    repo.git("rm", "-q", "-r", "dir")
    repo.commit_all("delete dir")
    for i in range(extra):
        repo.git("rm", "-q", f"pad/p{i}.py")
        repo.commit_all(f"delete p{i}")
    paths = [*files, "dir", "never/there.py", "f"]
    git = find_repo(str(repo.path))
    rng = f"{base}..HEAD"
    each = git.deleted_by_each(rng, paths)
    assert each == {p: git.deleted_by(rng, p) for p in paths}
    assert each["f0.py"] is not None and each["f0.py"] == each["f1.py"]  # the newest deletion
    assert each["dir"] == each["dir/d0.py"] and each["f4.py"] is None and each["f"] is None


def test_a_walk_started_early_answers_the_same_and_one_never_asked_is_not_waited_for(
    tmp_path,
) -> None:
    """(issue 35: the walk runs while a stop reads its candidates) Started, then answered
    after other questions to git, it names the same commits; one never answered is killed
    when the command ends, without waiting for it."""
    import time

    repo = make_repo(tmp_path / "r", {f"f{i}.py": f"f{i}\n" for i in range(4)})
    base = repo.head()
    repo.git("rm", "-q", "f1.py", "f2.py")
    repo.commit_all("delete f1 and f2")
    git = find_repo(str(repo.path))
    rng, paths = f"{base}..HEAD", ["f1.py", "f2.py", "f3.py"]
    started = git.start_deleted_by_each(rng, paths)
    assert git.read_blob(git.entries_at(git.tree_of("HEAD"), ["f0.py"])["f0.py"][1]) == b"f0\n"
    assert (
        started()
        == git.deleted_by_each(rng, paths)
        == {
            "f1.py": git.rev_parse("HEAD"),
            "f2.py": git.rev_parse("HEAD"),
            "f3.py": None,
        }
    )
    git.close()
    # a walk whose answer fills the pipe (no pathspec beyond PATHSPEC_MAX paths): git waits
    many = {f"deleted/{'x' * 60}{i}.py": "x\n" for i in range(1500)}
    repo = make_repo(tmp_path / "many", many)
    base = repo.head()
    repo.git("rm", "-q", "-r", "deleted")
    repo.commit_all("delete them")
    git = find_repo(str(repo.path))
    git.start_deleted_by_each(f"{base}..HEAD", [f"none{i}.py" for i in range(PATHSPEC_MAX + 1)])
    time.sleep(0.5)
    at = time.monotonic()
    git.close()
    assert time.monotonic() - at < 3  # killed, not waited for (5 s, then killed)


@pytest.mark.parametrize("drain", [True, False])
def test_a_walk_whose_answers_fill_the_pipe_walks_on_before_it_is_asked(
    tmp_path, monkeypatch, drain: bool
) -> None:
    """(issue 35: kernel-timers' first stop waited 0.3-0.8 s for the deletion walk) A walk
    whose answers are more than the pipe holds (a folder of 1,500 files deleted after the file
    asked was) is read as git writes it: git reaches the older deletion and ends before anyone
    asks, and the answer is the one a walk per path names. ``PATCHSTACK_NO_WALK_DRAIN=1``
    reads when asked: the same answer."""
    from patchstack.git.deletions import NO_WALK_DRAIN

    if drain:
        monkeypatch.delenv(NO_WALK_DRAIN, raising=False)
    else:
        monkeypatch.setenv(NO_WALK_DRAIN, "1")
    files = {f"big/{'x' * 80}{i}.py": "x\n" for i in range(1500)}
    repo = make_repo(tmp_path / "r", {**files, "old.py": "old\n", "kept.py": "kept\n"})
    base = repo.head()
    repo.git("rm", "-q", "old.py")
    older = repo.commit_all("delete old.py")
    repo.git("rm", "-q", "-r", "big")
    newer = repo.commit_all("delete big/")
    git = find_repo(str(repo.path))
    rng, paths = f"{base}..HEAD", ["big", "old.py", "kept.py"]
    walk = git.start_deleted_by_each(rng, paths)
    assert walk._walk is not None
    proc = walk._walk[0]
    if drain:
        proc.wait(timeout=120)  # (without the reader, git waits for one: this never returns)
    assert walk() == {p: git.deleted_by(rng, p) for p in paths}
    assert walk() == {"big": newer, "old.py": older, "kept.py": None}
    assert git._background == []
    git.close()


def test_a_relocation_that_carries_nothing_ends_the_walk_it_started(tmp_path) -> None:
    """(issue 35) A patch's binary change to a file upstream deleted: the commit that deleted
    it is walked for while the candidates are read, and there is no hunk to carry: the walk
    is ended as the relocation returns, not left running (and holding the command's CPU)
    to the command's end."""
    from patchstack.engine.relocate import Relocator

    repo = make_repo(tmp_path / "r", {"data.bin": "\0one\n", "keep.py": "x = 1\n"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "fork")
    repo.write("data.bin", "\0two\n")
    patched = repo.commit_all("the patch")
    repo.git("checkout", "-q", "main")
    repo.git("rm", "-q", "data.bin")
    repo.write("keep.py", "x = 2\n")
    head = repo.commit_all("upstream deletes data.bin")
    git = find_repo(str(repo.path))
    before, after, onto = (git.tree_of(c) for c in (base, patched, head))
    merged = git.merge_trees(before, onto, after, ("upstream", "the patch"))
    relocator = Relocator(git, base, head, None)
    assert relocator.deleted(before, after, onto, merged) == ["data.bin"]
    assert relocator.propose(before, after, onto, merged) is None
    assert git._background == []  # no walk left running
    assert relocator.walks.deleted(["data.bin"]) == {"data.bin": git.rev_parse("HEAD")}
    assert git._background == []  # an answered walk is ended too
    git.close()
