"""State that survives anything (issue 34, item 6): what a kill, a move of the checkout or a
copy of it leaves is sound, or the next command repairs it and says so.

- the scratch ref of fast-import streams never names an object of the scratch store, so a
  replay killed after a checkpoint leaves nothing ``git gc``/``git fsck`` stop at; a dangling
  one (left by an older version) is deleted by ``status``, which says so;
- a snapshot stores the series folder relative to the work tree: ``undo`` works after ``mv``
  and ``cp -a`` of the checkout (older entries, which stored it absolute, are read as this
  checkout's folder);
- ``status`` exits 1 while a command's publish was interrupted (the pre-push hook stops);
- killed probe and bisect runs leave no scratch worktree registered after the next command.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from .conftest import Repo, built_once, make_repo, numbered, replace_line
from .test_kill import build, spawn, wait_unlocked


def fsck(repo: Repo) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "fsck", "--no-progress", "--no-dangling"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )


# -- the scratch ref -----------------------------------------------------------------------------


def test_a_replay_killed_after_a_checkpoint_leaves_no_ref_to_a_missing_object(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    repo.ps("init")
    for name, f in (("p1", "a"), ("p2", "b")):
        replace_line(repo, f"{f}.py", f"{f} 5\n", f"{f} 5 patched\n")
        repo.ps("new", name, "--tag", "essential")
    repo.ps("pop", "--all")
    # Upstream changes the line p2 changes: p2 is merged (in the stream of p1's commit).
    repo.git("checkout", "-q", "-b", "upstream")
    replace_line(repo, "b.py", "b 5\n", "b 5 upstream\n")
    repo.commit_all("upstream")
    repo.git("checkout", "-q", "main")
    repo.ps("push", "--all")
    proc = spawn(
        repo, ["refresh", "--onto", "upstream"], PATCHSTACK_TEST_KILL_AT="stream-checkpoint"
    )
    _out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err  # it reached a checkpoint of its stream
    wait_unlocked(repo)
    assert repo.git("for-each-ref", "refs/patchstack/scratch") == ""
    found = fsck(repo)
    assert found.returncode == 0, found.stdout + found.stderr
    assert subprocess.run(["git", "gc", "-q"], cwd=repo.path).returncode == 0
    # ... and the refresh runs again, to the conflict, and on.
    repo.ps("refresh", "--onto", "upstream", code=1)
    repo.write("b.py", repo.read("b.py").replace("<<<<<<<", "").split("=======")[0])
    repo.ps("refresh", "--abort")
    assert repo.git("for-each-ref", "refs/patchstack/scratch") == ""
    assert fsck(repo).returncode == 0


def test_status_deletes_a_dangling_scratch_ref_and_says_so(tmp_path) -> None:
    repo = build(tmp_path, 2)
    repo.ps("push", "--all")
    missing = "1234567890" * 4
    ref = repo.path / ".git" / "refs" / "patchstack" / "scratch"
    ref.write_text(missing + "\n")  # as a replay of an older version killed midway left it
    assert fsck(repo).returncode != 0
    result = repo.ps("status")
    assert f"deleted refs/patchstack/scratch, which named {missing}" in result.stderr
    assert repo.git("for-each-ref", "refs/patchstack/scratch") == ""
    assert fsck(repo).returncode == 0
    assert "refs/patchstack/scratch" not in repo.ps("status").stderr  # said once
    # A sound one (naming an object the repository has) is not status's to delete.
    repo.git("update-ref", "refs/patchstack/scratch", "HEAD")
    repo.ps("status")
    assert repo.git("rev-parse", "refs/patchstack/scratch").strip() == repo.head()


# -- undo after mv and cp -a ---------------------------------------------------------------------


@built_once
def small(tmp_path: Path) -> Repo:
    repo = make_repo(tmp_path / "a" / "fork", {"a.py": numbered(20, "a")})
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 patched\n")
    repo.ps("new", "p1", "--tag", "essential")
    replace_line(repo, "a.py", "a 15\n", "a 15 patched\n")
    repo.ps("new", "p2", "--tag", "essential")
    return repo


def test_undo_works_after_the_checkout_is_moved(tmp_path) -> None:
    repo = small(tmp_path)
    before = repo.state()
    repo.ps("pop", "--all")
    (tmp_path / "b").mkdir()
    moved = Repo(shutil.move(str(repo.path), str(tmp_path / "b" / "fork")))
    result = moved.ps("undo")
    assert "undid" in result.stdout
    assert moved.state() == before
    assert not (tmp_path / "a" / "fork").exists()  # nothing written at the old place
    assert moved.ps("undo").exit_code == 0  # and further back: the 'new p2'
    assert not (moved.path / "patches" / "p2.patch").exists()
    moved.ps("redo")  # and forward again, here too
    assert (moved.path / "patches" / "p2.patch").exists()
    assert not (tmp_path / "a" / "fork").exists()


def test_undo_works_in_a_copy_and_leaves_the_original_alone(tmp_path) -> None:
    repo = small(tmp_path)
    before = repo.state()
    repo.ps("pop", "--all")
    original = repo.state()
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(repo.path), str(copy)], check=True)
    copied = Repo(copy)
    copied.ps("undo")
    assert copied.state() == before
    assert repo.state() == original


def test_an_older_entry_with_the_folder_absolute_is_undone_in_the_moved_checkout(
    tmp_path,
) -> None:
    repo = small(tmp_path)
    before = repo.state()
    repo.ps("pop", "--all")
    # The newest entry as an older version wrote it: the series folder absolute.
    tip = repo.git("rev-parse", "refs/patchstack/oplog").strip()
    message = repo.git("log", "-1", "--format=%B", tip)
    old = json.dumps(str(repo.path / "patches"))
    assert message.count('"series_dir": "patches"') == 2
    message = message.replace('"series_dir": "patches"', f'"series_dir": {old}')
    parents = repo.git("log", "-1", "--format=%P", tip).split()
    tree = repo.git("rev-parse", f"{tip}^{{tree}}").strip()
    args = [a for p in parents for a in ("-p", p)]
    rewritten = repo.git("commit-tree", tree, *args, input=message).strip()
    repo.git("update-ref", "refs/patchstack/oplog", rewritten, tip)
    (tmp_path / "b").mkdir()
    moved = Repo(shutil.move(str(repo.path), str(tmp_path / "b" / "fork")))
    moved.ps("undo")
    assert moved.state() == before
    assert not (tmp_path / "a" / "fork").exists()


# -- an interrupted publish ----------------------------------------------------------------------


def test_status_exits_1_while_a_publish_was_interrupted(tmp_path) -> None:
    repo = build(tmp_path, 3)
    proc = spawn(repo, ["push", "--all"], PATCHSTACK_TEST_KILL_AT="journal-running")
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    wait_unlocked(repo)
    result = repo.ps("status", code=1)
    assert "was interrupted" in result.stderr
    data = json.loads(repo.ps("status", "--json", code=1).stdout)
    assert data["interrupted"] == "patchstack push --all"
    repo.ps("undo")
    assert json.loads(repo.ps("status", "--json").stdout)["interrupted"] is None


# -- killed probe and bisect runs ----------------------------------------------------------------


def registered(repo: Repo) -> list[str]:
    listed = repo.git("worktree", "list", "--porcelain")
    return [ln for ln in listed.splitlines() if ln.startswith(("worktree ", "locked"))]


def test_killed_probe_and_bisect_runs_leave_nothing_registered_after_the_next_command(
    tmp_path, monkeypatch
) -> None:
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "a 5\n", "a 5 patched\n")
    repo.ps("new", "p1", "--tag", "essential", "--probe", "kill -KILL $PPID")
    repo.ps("pop", "--all")
    repo.write("b.py", "upstream\n")
    repo.commit_all("upstream adds b.py")
    repo.git("branch", "upstream")
    repo.ps("push", "--all")
    alone = [f"worktree {repo.path}"]
    for args in (
        ["check", "--probes"],
        ["bisect", base, "upstream", "--", "sh", "-c", "kill -KILL $PPID"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "patchstack", *args], cwd=repo.path, capture_output=True
        )
        assert proc.returncode == -signal.SIGKILL, (args, proc.stderr)
        wait_unlocked(repo)
        assert any(ln.startswith("locked") for ln in registered(repo))  # left behind
        repo.ps("status")  # the next command, whatever it is
        assert registered(repo) == alone
        assert os.listdir(scratch_root) == []
