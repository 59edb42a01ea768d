"""The operation log, undo and redo, the lock, and odd repositories."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from .conftest import Repo, make_repo, names, numbered, replace_line

GOLDEN = Path(__file__).parent / "golden"


def full(repo: Repo) -> tuple:
    return (
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.head(),
        repo.git("ls-files", "-s"),
        repo.status_all(),
        repo.snapshot(),
        {p: os.lstat(repo.path / p).st_mode for p in repo.snapshot()},
    )


def three(repo: Repo) -> None:
    repo.ps("init")
    for i, (f, tag) in enumerate(
        [("a.py", "essential"), ("a.py", "diagnostic"), ("a.py", "optimization")]
    ):
        replace_line(repo, f, f"{f[0]} {10 + 10 * i}\n", f"{f[0]} {10 + 10 * i} p{i}\n")
        repo.ps("new", f"p{i}", "--tag", tag)


def test_undo_restores_everything_exactly_and_redo_walks_forward(repo: Repo) -> None:
    three(repo)
    # The user's state: an edit, a staged change, an untracked file, an executable, a symlink.
    replace_line(repo, "b.py", "b 30\n", "b 30 mine\n")
    repo.write("staged.txt", "staged\n")
    repo.git("add", "staged.txt")
    repo.write("notes/untracked.txt", "untracked\n")
    (repo.path / "notes" / "run.sh").write_text("#!/bin/sh\n")
    (repo.path / "notes" / "run.sh").chmod(0o755)
    os.symlink("untracked.txt", repo.path / "notes" / "link")
    s0 = full(repo)
    repo.ps("pop", "--only", "diagnostic")
    s1 = full(repo)
    repo.ps("pop", "--all")
    s2 = full(repo)
    assert len({str(s0), str(s1), str(s2)}) == 3
    repo.ps("undo")
    assert full(repo) == s1
    repo.ps("undo")
    assert full(repo) == s0
    repo.ps("redo")
    assert full(repo) == s1
    repo.ps("redo")
    assert full(repo) == s2
    assert "nothing to redo" in repo.ps("redo", code=2).stderr
    repo.ps("undo", "2")
    assert full(repo) == s0
    # undo reaches back through new and init too: the series directory goes away.
    repo.ps("undo", "--force", "4")
    assert not (repo.path / "patches").exists()
    assert repo.read("a.py") == numbered(40, "a")
    assert not (repo.path / "notes").exists()  # made after init: it goes, into the log
    assert "nothing left to undo" in repo.ps("undo", code=2).stderr
    repo.ps("redo")
    assert full(repo) == s0


def test_undo_refuses_over_commits_and_edits_made_since_unless_forced(repo: Repo) -> None:
    three(repo)
    repo.ps("pop", "--all")
    before_commit = full(repo)
    repo.write("mine.py", "mine\n")
    repo.commit_all("my own work")
    result = repo.ps("undo", code=2)
    assert "1 commit(s) were made on top since 'patchstack pop --all'" in result.stderr
    assert "my own work" in result.stderr and "--force" in result.stderr
    repo.git("reset", "-q", "--hard", "HEAD~1")
    assert full(repo) == before_commit
    replace_line(repo, "b.py", "b 1\n", "b 1 edited since\n")
    repo.write("new-since.txt", "x\n")
    result = repo.ps("undo", code=2)
    assert "files changed since 'patchstack pop --all': b.py, new-since.txt" in result.stderr
    edited = full(repo)
    repo.ps("undo", "--force")
    assert names(repo) == ["p0.patch", "p1.patch", "p2.patch"]
    assert not (repo.path / "new-since.txt").exists()
    repo.ps("redo")  # what --force replaced comes back
    assert full(repo) == edited


def test_log_lists_entries_and_survives_gc(repo: Repo) -> None:
    three(repo)
    repo.ps("pop", "--all")
    repo.ps("undo")
    repo.git("reflog", "expire", "--expire=now", "--all")
    repo.git("gc", "-q", "--prune=now")
    out = repo.ps("log").stdout
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "DATE", out)
    text = re.sub(r"[0-9a-f]{12}", "HASH", text)
    golden = GOLDEN / "log.txt"
    if os.environ.get("PATCHSTACK_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    data = json.loads(repo.ps("log", "--json").stdout)
    assert [e["state"] for e in data][:2] == ["undoes #5", "undone"]
    # every snapshot is still there after gc: undo all the way back works
    repo.ps("undo", "4")
    assert not (repo.path / "patches").exists()
    assert repo.git("fsck", "--no-dangling").strip() == ""


def test_a_second_command_is_refused_at_once_naming_the_running_one(repo: Repo) -> None:
    three(repo)
    lock = repo.path / ".git" / "patchstack" / "lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,os,sys,time; f=open(sys.argv[1],'r+'); fcntl.flock(f, fcntl.LOCK_EX);"
            "f.truncate(0); f.write('patchstack push --all (pid %d)\\n' % os.getpid()); f.flush();"
            "print('ok', flush=True); time.sleep(30)",
            str(lock),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "ok\n"
        before = full(repo)
        for args in (["pop"], ["status"], ["undo"]):
            result = repo.ps(*args, code=2)
            assert (
                "another patchstack command is running on this repository: patchstack"
                f" push --all (pid {holder.pid})" in result.stderr
            )
        assert full(repo) == before
    finally:
        holder.kill()
        holder.wait()
    repo.ps("pop")  # the kernel dropped the lock with its holder
    # readers share the lock with each other
    lock.write_text(f"patchstack refresh (pid {holder.pid})\n")  # a writer's note, dead
    with open(lock, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        repo.ps("series")
        refused = repo.ps("push", code=2).stderr
        # a reader holds the lock; the note is the last writer's, which ended: no "refresh
        # that has died, and a git process it started is still finishing" (said while a
        # check ran)
        assert "running on this repository: a command that only reads" in refused, refused
        assert "refresh" not in refused and "has died" not in refused


def test_linked_worktree_has_its_own_log_and_shares_the_lock(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "p", "--tag", "essential")
    wt = tmp_path / "linked tree"
    repo.git("worktree", "add", "-q", "-b", "other", str(wt))
    linked = Repo(wt)
    (wt / "patches").mkdir()
    for f in ("series", "p.patch"):
        (wt / "patches" / f).write_bytes((repo.path / "patches" / f).read_bytes())
    linked.ps("pop")
    assert "a 3 x" not in linked.read("a.py") and "a 3 x" in repo.read("a.py")
    assert (repo.path / ".git" / "patchstack" / "lock").exists()
    assert not (repo.path / ".git" / "worktrees" / "linked tree" / "patchstack").exists()
    refs = repo.git("for-each-ref", "--format=%(refname)", "refs/patchstack")
    assert "refs/patchstack/oplog" in refs and "refs/patchstack/worktrees/" in refs
    assert "pop" in linked.ps("log").stdout and "pop" not in repo.ps("log").stdout
    linked.ps("undo")
    assert "a 3 x" in linked.read("a.py")
    assert repo.git("worktree", "list").count("\n") == 2


def test_detached_head_subfolder_and_autocrlf(tmp_path) -> None:
    repo = make_repo(tmp_path / "a fork with spaces", {"src/a.py": numbered(20, "a")})
    repo.git("config", "core.autocrlf", "true")
    sub = repo.path / "src"
    repo.ps("init", cwd=sub)
    replace_line(repo, "src/a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "p", "--tag", "essential", cwd=sub)
    repo.git("checkout", "-q", "--detach")
    # raw bytes the user has, which autocrlf would normalise: the snapshot keeps them exactly
    (repo.path / "raw.txt").write_bytes(b"lf\ncrlf\r\nmixed\n")
    before = full(repo)
    repo.ps("pop", cwd=sub)
    assert repo.git("symbolic-ref", "-q", "HEAD", check=False) == ""
    (repo.path / "raw.txt").write_bytes(b"changed\r\n")
    repo.ps("undo", "--force", cwd=sub)
    assert full(repo) == before
    assert (repo.path / "raw.txt").read_bytes() == b"lf\ncrlf\r\nmixed\n"


def test_submodule_is_left_alone_by_push_pop_and_undo(tmp_path) -> None:
    inner = make_repo(tmp_path / "inner", {"lib.py": "x = 1\n"})
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(inner.path), "sub")
    repo.git("commit", "-q", "-m", "add submodule")
    repo.ps("init")
    replace_line(repo, "a.py", "a 3\n", "a 3 x\n")
    repo.ps("new", "p", "--tag", "essential")
    (repo.path / "sub" / "lib.py").write_text("x = 2  # dirty submodule\n")
    repo.ps("pop")
    repo.ps("undo")
    repo.ps("push", code=0)
    assert (repo.path / "sub" / "lib.py").read_text() == "x = 2  # dirty submodule\n"


def test_interrupted_command_is_named_by_the_next_one(repo: Repo) -> None:
    three(repo)
    repo.write("untracked.txt", "mine\n")
    before = full(repo)
    env = dict(os.environ, PATCHSTACK_TEST_KILL_AT="publish-worktree")
    proc = subprocess.run(
        [sys.executable, "-m", "patchstack", "pop", "--all"],
        cwd=repo.path,
        env=env,
        capture_output=True,
    )
    assert proc.returncode == -9
    result = repo.ps("push", code=2)
    assert re.search(
        r"'patchstack pop --all' \(#\d+, pid \d+, started .*\) was interrupted", result.stderr
    )
    assert "run 'patchstack undo' to restore the state before it" in result.stderr
    assert "was interrupted" in repo.ps("status", code=None).stderr
    assert "interrupted (run 'patchstack undo')" in repo.ps("log").stdout
    repo.ps("undo")
    assert full(repo) == before
    repo.ps("pop", "--all")
