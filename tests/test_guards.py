"""What the journal guards beyond edits and untracked files: ignored files, the series folder,
git's index while a publish runs, a linked series file, signals of a closed terminal, and the
messages of a log or store that went wrong (issue 26). Each failure names its cause and a next
step, and the tests take that step and see it work."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from .conftest import Repo, make_repo, numbered, replace_line
from .test_faults import mounted
from .test_kill import build, spawn, state, upstream_moves, user_work_intact, wait_unlocked

CREATES = """Subject: defaults

---
diff --git a/.env b/.env
new file mode 100644
--- /dev/null
+++ b/.env
@@ -0,0 +1 @@
+DEFAULT=1
diff --git a/logs b/logs
new file mode 100644
--- /dev/null
+++ b/logs
@@ -0,0 +1 @@
+a file where the user keeps an ignored folder
diff --git a/out/x b/out/x
new file mode 100644
--- /dev/null
+++ b/out/x
@@ -0,0 +1 @@
+a folder where the user keeps an ignored file
"""


def ignored_fork(path: Path) -> Repo:
    repo = make_repo(path, {"a.py": numbered(5, "a"), ".gitignore": ".env\nlogs/\nout\n"})
    repo.ps("init")
    (repo.path / "patches" / "defaults.patch").write_text(CREATES)
    with open(repo.path / "patches" / "series", "a") as f:
        f.write("defaults.patch # essential\n")
    return repo


def keep_mine(repo: Repo) -> None:
    """The user's ignored files, each where the patch writes: a file, a folder, a file."""
    repo.write(".env", "API_KEY=my-real-secret\n")
    repo.write("logs/app.log", "keep me\n")
    repo.write("out", "precious\n")


def test_no_move_overwrites_an_ignored_file_and_no_undo_deletes_one(tmp_path: Path) -> None:
    repo = ignored_fork(tmp_path / "fork")
    keep_mine(repo)
    before = (repo.head(), repo.snapshot())
    err = repo.ps("push", "--all", code=2).stderr
    assert "ignored files are in the way: .env, logs/app.log, out" in err, err
    assert "nothing was changed" in err
    assert (repo.head(), repo.snapshot()) == before  # the secret byte for byte
    # The advised step: move them away; then push, pop and undo work, and the user's copies
    # (and their bytes) never went anywhere patchstack could reach.
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in (".env", "logs", "out"):
        shutil.move(repo.path / name, saved / name)
    repo.ps("push", "--all")
    assert repo.read(".env") == "DEFAULT=1\n"
    repo.ps("pop", "--all")
    assert not (repo.path / ".env").exists()
    # Ignored files again where the undo of that pop would write: the restore refuses too,
    # the folder case (a file 'out' where 'out/x' goes) included.
    keep_mine(repo)
    again = repo.snapshot()
    err = repo.ps("undo", code=2).stderr
    assert "in the way: .env, logs/app.log, out" in err, err  # (the file in the folder, named)
    assert repo.snapshot() == again
    for name in (".env", "logs", "out"):
        shutil.rmtree(repo.path / name) if name == "logs" else (repo.path / name).unlink()
    repo.ps("undo")  # the pop undone: the patch's files are back
    repo.ps("undo")  # the push undone: they go, and nothing else
    assert not (repo.path / ".env").exists() and not (repo.path / "out").exists()
    assert (saved / ".env").read_text() == "API_KEY=my-real-secret\n"


def test_refresh_onto_an_upstream_that_tracks_an_ignored_file_refuses(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(9, "a"), ".gitignore": ".env\n"})
    repo.git("branch", "upstream")
    repo.ps("init")
    replace_line(repo, "a.py", "a 2\n", "a 2 mine\n")
    repo.ps("new", "mine", "--tag", "essential")
    repo.git("checkout", "-q", "upstream")
    repo.write(".env", "UPSTREAM=1\n")
    repo.git("add", "-f", ".env")
    repo.git("commit", "-qm", "upstream starts tracking .env")
    repo.git("checkout", "-q", "main")
    repo.write(".env", "API_KEY=my-real-secret\n")
    before = (repo.head(), repo.snapshot())
    err = repo.ps("refresh", "--onto", "upstream", code=2).stderr
    assert "an ignored file is in the way: .env" in err, err
    assert (repo.head(), repo.snapshot()) == before
    # Moved away, the refresh works, and its undo leaves nothing of .env behind.
    os.rename(repo.path / ".env", tmp_path / "env.saved")
    repo.ps("refresh", "--onto", "upstream")
    assert repo.read(".env") == "UPSTREAM=1\n"
    repo.ps("undo")
    assert not (repo.path / ".env").exists()
    assert (tmp_path / "env.saved").read_text() == "API_KEY=my-real-secret\n"


def test_the_series_snapshot_takes_the_series_and_never_a_nested_repository(
    tmp_path: Path,
) -> None:
    """A series kept in its own repository at the series folder's top: its .git and its other
    files are never in the operation log, and undo --force leaves that repository alone."""
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(9, "a"), "b.py": numbered(9, "b")})
    repo.ps("init")
    for name in ("a", "b"):
        replace_line(repo, f"{name}.py", f"{name} 3\n", f"{name} 3 mine\n")
        repo.ps("new", name, "--tag", "essential")
    series = Repo(repo.path / "patches")
    series.git("init", "-q", "-b", "main")
    series.write("README", "the team's series\n")
    series.write("secret.txt", "another user's secret\n")
    series.git("add", "-A")
    series.git("commit", "-qm", "the series")
    repo.ps("pop", "--all")
    series.write("README", "the team's series, reviewed\n")
    series.git("commit", "-qam", "the newest commit of the series repository")
    newest = series.head()
    repo.ps("undo", "--force")
    assert series.head() == newest and series.read("README").endswith("reviewed\n")
    assert series.git("status", "--porcelain") == ""
    logged = repo.git("log", "--format=%T", "refs/patchstack/oplog").split()
    names = {n for t in logged for n in repo.git("ls-tree", "-r", "--name-only", t).split()}
    assert not [n for n in names if "/.git/" in n or n.endswith(("README", "secret.txt"))]


def test_a_folder_that_is_not_a_series_folder_is_named(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(200, "a")})
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "secret.txt").write_text("another user's secret\n")
    for where in ("..", "."):
        err = repo.ps("--dir", where, "init", code=2).stderr
        assert f"{where} is not a series folder" in err and "nothing was changed" in err, err
    err = repo.ps("--dir", "../shared", "push", "--all", code=2).stderr
    assert "no series file at ../shared/series (../shared is not a series folder)" in err, err
    assert repo.git("for-each-ref", "refs/patchstack") == ""
    # A patch file larger than a snapshot takes: named with its folder, and the bound.
    repo.ps("init")
    replace_line(repo, "a.py", "a 1\n", "a 1 " + "x" * 4000 + "\n")
    repo.ps("new", "big", "--tag", "essential")
    repo.ps("pop")
    repo.git("config", "patchstack.snapshotMaxSize", "2k")
    err = repo.ps("push", code=2).stderr
    assert "patches/big.patch is" in err and "series folder patches" in err, err
    assert "git config patchstack.snapshotMaxSize" in err
    repo.git("config", "patchstack.snapshotMaxSize", "1m")  # the advised step
    repo.ps("push")


def pause_at(repo: Repo, args: list[str], point: str) -> subprocess.Popen:
    """Start ``args`` and wait until it has stopped itself (SIGSTOP) at ``point``."""
    proc = spawn(repo, args, PATCHSTACK_TEST_SIGNAL_AT=f"{point}:STOP")
    deadline = time.monotonic() + 30
    while True:
        with open(f"/proc/{proc.pid}/stat") as f:
            if f.read().rpartition(")")[2].split()[0] == "T":
                return proc
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.01)


def test_a_git_commit_while_the_work_tree_moves_is_refused_by_git(tmp_path: Path) -> None:
    repo = build(tmp_path, 3)
    before = state(repo)
    proc = pause_at(repo, ["push", "--all"], "publish-worktree")
    repo.write("mine.txt", "my new file\n")
    commit = subprocess.run(["git", "commit", "-qam", "mine"], cwd=repo.path, capture_output=True)
    add = subprocess.run(["git", "add", "mine.txt"], cwd=repo.path, capture_output=True)
    os.kill(proc.pid, signal.SIGCONT)
    _out, err = proc.communicate()
    assert proc.returncode == 0, err
    for refused in (commit, add):
        assert refused.returncode != 0 and b"index.lock" in refused.stderr, refused.stderr
    assert len(repo.git("log", "--format=%H").split()) == 4  # the patches, no commit of mine
    assert repo.git("diff", "--cached", "--name-only") == "staged.txt\n"  # the index is whole
    assert repo.read("mine.txt") == "my new file\n"
    user_work_intact(repo)
    assert state(repo)[:2] != before[:2]
    subprocess.run(["git", "commit", "-qam", "now it works"], cwd=repo.path, check=True)


def test_a_rollback_puts_back_only_what_the_publish_wrote(tmp_path: Path) -> None:
    """The branch moved by another process while the work tree moved: the publish fails, and
    its rollback touches the paths it wrote alone, never what the user wrote meanwhile."""
    repo = build(tmp_path, 3)
    head, tree = repo.head(), repo.tree()
    proc = pause_at(repo, ["push", "--all"], "publish-worktree")
    repo.write("mine.txt", "written while patchstack ran\n")
    repo.write("notes.txt", "notes\nedited while patchstack ran\n")
    other = repo.git("commit-tree", tree, "-p", head, "-m", "elsewhere").strip()
    repo.git("update-ref", "refs/heads/main", other, head)
    os.kill(proc.pid, signal.SIGCONT)
    _out, err = proc.communicate()
    message = err.decode()
    assert proc.returncode == 2, message
    wait_unlocked(repo)
    assert repo.read("mine.txt") == "written while patchstack ran\n"
    assert repo.read("notes.txt") == "notes\nedited while patchstack ran\n"
    assert "could not update the branch" in message and "nothing was changed" not in message
    assert "what this command wrote was put back" in message
    assert repo.read("src/f000.txt") == "head 0\nline 0\ntail 0\n"  # the move taken back
    assert repo.git("diff", "--cached", "--name-only") == "staged.txt\n"
    assert "was interrupted" not in repo.ps("series").stderr


def test_a_rollback_that_fails_too_says_undo_not_nothing_changed(tmp_path: Path) -> None:
    repo = build(tmp_path, 3)
    before = state(repo)
    head, tree = repo.head(), repo.tree()
    proc = pause_at(repo, ["push", "--all"], "publish-worktree")
    src = repo.path / "src"
    with mounted(["--bind", str(src)], src):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(src)], check=True)
        other = repo.git("commit-tree", tree, "-p", head, "-m", "elsewhere").strip()
        repo.git("update-ref", "refs/heads/main", other, head)
        os.kill(proc.pid, signal.SIGCONT)
        _out, err = proc.communicate()
    message = err.decode()
    assert proc.returncode == 2 and "could not update the branch" in message, message
    assert "failed too" in message and "run 'patchstack undo'" in message, message
    assert "nothing was changed" not in message
    wait_unlocked(repo)
    assert "was interrupted" in repo.ps("series").stderr
    repo.git("update-ref", "refs/heads/main", head, other)  # the other process's move undone
    repo.ps("undo")
    assert state(repo) == before


def test_a_linked_series_file_is_refused_and_never_replaced(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(9, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 2\n", "a 2 mine\n")
    repo.ps("new", "mine", "--tag", "essential")
    shared = tmp_path / "shared-series"
    os.rename(repo.path / "patches" / "series", shared)
    os.symlink(shared, repo.path / "patches" / "series")
    text = shared.read_bytes()
    replace_line(repo, "a.py", "a 5\n", "a 5 mine\n")
    for args in (("series",), ("new", "more", "--tag", "essential"), ("pop",), ("undo", "--force")):
        result = repo.ps(*args, code=2)
        assert "patches/series" in result.stderr and "symbolic link" in result.stderr, args
        assert os.path.islink(repo.path / "patches" / "series") and shared.read_bytes() == text
    hint = next(ln for ln in repo.ps("series", code=2).stderr.splitlines() if "hint:" in ln)
    step = hint.partition("plain file: ")[2]
    subprocess.run(shlex.split(step), cwd=repo.path, check=True)  # the advised step works
    repo.ps("new", "more", "--tag", "essential")
    assert shared.read_bytes() == text  # the shared file was never written


def test_sighup_at_a_closed_terminal_finishes_the_step(tmp_path: Path) -> None:
    """A closed terminal: SIGHUP, and output nobody reads. The step finishes as for SIGTERM,
    and the exit status is 129, not a traceback."""
    repo = build(tmp_path, 3)
    proc = spawn(repo, ["push", "--all"], PATCHSTACK_TEST_SIGNAL_AT="journal-running:HUP")
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    assert proc.wait() == 128 + signal.SIGHUP
    wait_unlocked(repo)
    assert len(repo.git("log", "--format=%H").split()) == 4
    assert "was interrupted" not in repo.ps("series").stderr
    user_work_intact(repo)


def advised(stderr: str) -> list[str]:
    """The command a hint advises, quoted as '...' or (rm '...') in it."""
    hint = next(ln for ln in stderr.splitlines() if ln.startswith("hint:"))
    if "(rm '" in hint:
        return ["rm", hint.partition("(rm '")[2].partition("'")[0]]
    return shlex.split(hint.partition("'")[2].partition("'")[0])


def test_an_unreadable_log_ref_is_named_with_a_way_out(tmp_path: Path) -> None:
    repo = build(tmp_path, 3)
    repo.ps("push", "--all")
    ref = repo.path / ".git" / "refs" / "patchstack" / "oplog"
    expected = {"blob": "points at a blob", "missing": "repository lacks", "empty": "is empty"}
    for damage, words in expected.items():
        if damage == "blob":
            blob = repo.git("hash-object", "-w", "--stdin", input="not a log\n").strip()
            repo.git("update-ref", "refs/patchstack/oplog", blob)
        else:
            ref.write_text("1234567890" * 4 + "\n" if damage == "missing" else "")
        status = repo.ps("status", code=None)  # a reader goes on, and says why
        assert status.exit_code in (0, 1) and "applied: 3 of 3" in status.stdout, status.stderr
        assert "warning: " in status.stderr and "refs/patchstack/oplog" in status.stderr
        err = repo.ps("pop", code=2).stderr
        assert words in err and "another process" not in err and "git log" not in err, err
        subprocess.run(advised(err), cwd=repo.path, check=True)  # the advised step works
        repo.ps("pop")
        repo.ps("undo")
        assert len(repo.git("log", "--format=%H").split()) == 4


def test_a_full_scratch_store_is_named_with_the_way_round(tmp_path: Path, monkeypatch) -> None:
    from patchstack.git import scratch

    disk = tmp_path / "shm"
    with mounted(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], disk):
        repo = build(tmp_path, 6)
        repo.ps("push", "--all")
        upstream_moves(repo, tmp_path, 6, conflict=None)
        monkeypatch.setattr(scratch, "PARENT", str(disk))
        monkeypatch.setattr(scratch, "MIN_FREE", 1)  # room for the store: it fills at once
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={disk / 'filler'}", "bs=4k", "count=255"],
            capture_output=True,
        )
        before = (repo.head(), repo.snapshot())
        err = repo.ps("refresh", "--onto", "upstream", code=2).stderr
        assert f"No space left on device (in {disk}" in err, err
        assert "PATCHSTACK_NO_SCRATCH=1" in err and "Traceback" not in err
        assert (repo.head(), repo.snapshot()) == before
        monkeypatch.setenv("PATCHSTACK_NO_SCRATCH", "1")  # the advised step, the store full
        repo.ps("refresh", "--onto", "upstream")


def test_control_characters_in_labels_are_refused_naming_file_and_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(9, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 2\n", "a 2 mine\n")
    series = repo.path / "patches" / "series"
    text = series.read_bytes()
    err = repo.ps("new", "mine", "--tag", "essential,red\x1b[31m", code=2).stderr
    assert "--tag: tag or label" in err and "U+001B" in err and "\x1b" not in err, err
    assert series.read_bytes() == text
    repo.ps("new", "mine", "--tag", "essential,red")
    series.write_text(series.read_text().replace("red", "r\u202eed"))
    err = repo.ps("series", code=2).stderr
    assert "patches/series:3: tag or label" in err and "U+202E" in err, err
    series.write_text(series.read_text().replace("\u202e", ""))  # the advised step
    repo.ps("series")


def test_a_patch_file_that_is_no_file_says_what_it_is(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(9, "a")})
    repo.ps("init")
    for name, line in (("first", "a 2\n"), ("second", "a 6\n")):
        replace_line(repo, "a.py", line, line.replace("\n", " mine\n"))
        repo.ps("new", name, "--tag", "essential")
    repo.ps("pop", "--all")
    first, second = (repo.path / "patches" / f"{n}.patch" for n in ("first", "second"))
    kept = first.read_bytes(), second.read_bytes()
    first.unlink()
    first.mkdir()
    second.unlink()
    os.mkfifo(second)  # never opened: nothing waits on it
    err = repo.ps("push", "--all", code=2).stderr
    assert "patches/series:3: patch file 'first.patch' is a folder, not a file" in err, err
    assert "hint: put the patch file at patches/first.patch (a plain file)" in err
    first.rmdir()
    first.write_bytes(kept[0])  # the advised step
    err = repo.ps("push", "--all", code=2).stderr
    assert "patches/series:4: patch file 'second.patch' is a FIFO (a named pipe)" in err, err
    second.unlink()
    second.write_bytes(kept[1])
    repo.ps("push", "--all")


def test_changed_entries_is_what_diff_tree_gives(tmp_path: Path, monkeypatch) -> None:
    """The moves read what differs between two trees in process; differential against git:
    files added, removed, changed, a file that becomes a folder and a folder that becomes a
    file, a symbolic link."""
    from patchstack.git import find_repo, trees

    repo = make_repo(tmp_path / "r", {"a": "1\n", "d/x": "2\n", "d/y": "3\n", "e/f/g": "4\n"})
    old = repo.tree()
    repo.git("rm", "-q", "a", "-r", "d")
    repo.write("a/inner", "5\n")
    repo.write("d", "now a file\n")
    repo.write("e/f/g", "changed\n")
    repo.write("new/deep/file", "6\n")
    repo.write("new/d\u00e9j\u00e0 vu\t.py", "7\n")
    os.symlink("a/inner", repo.path / "link")
    repo.commit_all("moves")
    git = find_repo(str(repo.path))
    try:
        for a, b in ((old, repo.tree()), (repo.tree(), old)):
            assert sorted(git.changed_entries(a, b)) == sorted(git.raw_diffs([(a, b)])[0])
            read = git.changed_entries(a, b)  # in process, then asked of git beyond a budget
            for budget in (0, 3):
                monkeypatch.setattr(trees, "TREES_IN_PROCESS", budget)
                assert git._changed_entries(a, b) == read  # (not the command's kept answer)
            monkeypatch.setattr(trees, "TREES_IN_PROCESS", 64)
    finally:
        git.close()


def test_changed_entries_of_two_ids_is_read_once_a_command(tmp_path: Path, monkeypatch) -> None:
    """(issue 35: a refresh's stop asked the move's diff three times, a diff-tree of 5,000
    paths each) A diff of two object ids is kept for the command; of a name that can move
    (a ref), asked again."""
    from patchstack.git import find_repo, trees

    repo = make_repo(tmp_path / "r", {"a": "1\n", "d/x": "2\n"})
    old = repo.tree()
    repo.write("d/x", "3\n")
    repo.commit_all("change")
    git = find_repo(str(repo.path))
    try:
        first = git.changed_entries(old, repo.tree())
        asked: list[tuple[str, str]] = []
        real = trees.Trees._changed_entries

        def counted(self, a, b):  # type: ignore[no-untyped-def]
            asked.append((a, b))
            return real(self, a, b)

        monkeypatch.setattr(trees.Trees, "_changed_entries", counted)
        assert git.changed_entries(old, repo.tree()) == first and asked == []
        git.changed_entries(old, "HEAD^{tree}")
        git.changed_entries(old, "HEAD^{tree}")
        assert asked == [(old, "HEAD^{tree}")] * 2
    finally:
        git.close()


def test_raw_diffs_of_two_ids_are_asked_of_git_once_a_command(tmp_path: Path, monkeypatch) -> None:
    """(issue 35: a refresh asked diff-tree for its series' 46 diffs twice, for the proofs and
    the replay) Each pair is asked once."""
    from patchstack.git import find_repo, listings

    repo = make_repo(tmp_path / "r", {"a": "1\n"})
    one = repo.tree()
    repo.write("b", "2\n")
    repo.commit_all("b")
    two = repo.tree()
    git = find_repo(str(repo.path))
    try:
        first = git.raw_diffs([(one, two), (two, one)])
        asked: list[list[tuple[str, str]]] = []
        real = listings.Listings._raw_diffs

        def counted(self, pairs):  # type: ignore[no-untyped-def]
            asked.append(list(pairs))
            return real(self, pairs)

        monkeypatch.setattr(listings.Listings, "_raw_diffs", counted)
        again = git.raw_diffs([(two, one), (one, two), (two, one)])
        assert again == [first[1], first[0], first[1]] and asked == []
    finally:
        git.close()
