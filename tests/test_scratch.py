"""The scratch object store (git/scratch.py): a replay's throwaway objects stay out of the
repository until published. `check` leaves the object database as it was; a refresh keeps
every object its result needs (fsck, and the same commits as without the store) in one pack;
no scratch folder outlives its command, and a killed command's folder is removed by the next."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from patchstack.git import find_repo, scratch

from .conftest import make_repo
from .test_merge_runs import fork
from .test_replay_exact import git_commands

needs_scratch = pytest.mark.skipif(
    not scratch.room(), reason="no room for a scratch store in /dev/shm"
)


def objects(repo) -> tuple[int, list[str]]:
    """(loose objects, pack files) of the repository."""
    root = repo.path / ".git" / "objects"
    loose = sum(len(os.listdir(d)) for d in root.iterdir() if len(d.name) == 2)
    return loose, sorted(os.listdir(root / "pack"))


def ours() -> list[str]:
    return [
        n for n in os.listdir(scratch.PARENT) if n.startswith(f"{scratch.PREFIX}{os.getpid()}-")
    ]


def fsck(repo) -> None:
    proc = subprocess.run(
        ["git", "fsck", "--strict", "--no-dangling", "--no-progress"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
@needs_scratch
def test_check_writes_no_object(tmp_path, monkeypatch) -> None:
    repo, target = fork(tmp_path / "fork")
    before = objects(repo)
    out = repo.ps("check", "--onto", target, code=1).stdout
    assert "p5-conflict" in out  # the replay ran: merges, runs, a conflict
    assert objects(repo) == before
    assert ours() == []
    # The replay stream's checkpoints (before merges) stay packs in the store: no process
    # starts to loosen them. (With the series' chain cached, as a push leaves it: otherwise
    # check makes it first, in the repository.)
    repo.ps("pop", "--all")
    repo.ps("push", "--all")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert repo.ps("check", "--onto", target, code=1).stdout == out
    monkeypatch.delenv("GIT_TRACE2_EVENT")
    commands = git_commands(trace)
    assert "fast-import" in commands and "merge-tree" in commands
    assert "unpack-objects" not in commands
    # and the conflict reports read their files through the persistent cat-file
    assert "ls-tree" not in commands


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
@needs_scratch
def test_refresh_keeps_what_it_publishes_in_one_pack(tmp_path, monkeypatch) -> None:
    repo, target = fork(tmp_path / "fork")
    plain, _ = fork(tmp_path / "plain")
    loose, packs = objects(repo)
    repo.ps("refresh", "--onto", target, code=1)  # stops at p5's conflict, in the work tree
    assert ours() == []
    fsck(repo)
    new_loose, new_packs = objects(repo)
    assert len(set(new_packs) - set(packs)) == 2  # one pack and its index
    assert new_loose - loose < 20  # the operation log's few objects, not the replay's
    assert "<<<<<<<" in repo.read("c.py")
    monkeypatch.setenv("PATCHSTACK_NO_SCRATCH", "1")
    plain.ps("refresh", "--onto", target, code=1)
    assert plain.head() == repo.head()
    assert plain.git("status", "--porcelain") == repo.git("status", "--porcelain")
    assert plain.read("c.py") == repo.read("c.py")


@needs_scratch
def test_a_killed_commands_scratch_folder_is_removed(tmp_path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale = Path(scratch.PARENT) / f"{scratch.PREFIX}{gone.pid}-left"
    (stale / "ab").mkdir(parents=True)
    (stale / "ab" / "cdef").write_bytes(b"an object nothing points at")
    recent = Path(scratch.PARENT) / f"{scratch.PREFIX}{gone.pid}-recent"
    recent.mkdir()
    os.utime(stale, (1_000_000_000, 1_000_000_000))  # nothing written there for long
    repo, target = fork(tmp_path / "fork")
    repo.ps("check", "--onto", target, code=1)
    assert not stale.exists()
    assert recent.exists()  # maybe another PID namespace's: left for later
    recent.rmdir()


@needs_scratch
def test_a_repository_whose_path_holds_the_alternates_separator(tmp_path) -> None:
    """The repository's objects are given to git as an alternate of the scratch store, in a
    list separated by ':' (quoted when the path holds one): the shared fork, in a folder
    whose name holds both."""
    repo, target = fork(tmp_path / 'in: "quoted"' / "fork")
    assert ":" in str(repo.path) and '"' in str(repo.path)
    repo.ps("refresh", "--onto", target, code=1)
    fsck(repo)
    assert "p4-merge" in repo.git("log", "--format=%s", "-3")


@needs_scratch
def test_scratch_objects_are_stored_and_the_kept_pack_reads_them(tmp_path) -> None:
    """A loose object written into the scratch store (memory, throwaway) is zlib level 0,
    stored; one written into the repository is compressed (level 1). git reads the stored one
    through the alternate, and once kept (one pack, deflated anew) fsck is clean."""
    repo = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    git = find_repo(str(repo.path))
    data = b"".join(b"line %d of a relabelled file\n" % i for i in range(5000))
    kept = git.write_blob(data + b"kept\n")  # no scratch store yet: into the repository
    git.use_scratch()
    assert git.scratch is not None
    thrown = git.write_blob(data)
    stored = os.path.join(git.scratch, thrown[:2], thrown[2:])
    assert os.path.getsize(stored) > len(data)  # level 0: the bytes as they are
    in_repo = repo.path / ".git" / "objects" / kept[:2] / kept[2:]
    assert os.path.getsize(in_repo) < len(data) // 4
    assert git.run("cat-file", "blob", thrown).stdout == data  # read through the alternate
    git.keep_scratch()
    assert not os.path.exists(stored)
    fsck(repo)
    assert repo.git("cat-file", "blob", thrown) == data.decode()
    assert repo.git("cat-file", "blob", kept) == data.decode() + "kept\n"
