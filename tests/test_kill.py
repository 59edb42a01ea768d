"""Kill tests: a command killed at any point loses nothing, and one command restores the state.

A long ``push --all`` (150 patches), ``pop --only diagnostic`` and ``undo`` run in a
subprocess and die by SIGKILL at every named point (``PATCHSTACK_TEST_KILL_AT``) and after
random delays aimed at the window from the first to the last point (measured on a calibration
run), so that they land inside the journalled publish, between and during git's steps; others
get SIGINT or SIGTERM. After each, the user's uncommitted edit, staged change and untracked
file are still there, ``git fsck`` finds nothing wrong, and either the state is exactly the one
before or after the command, or the next command names the interrupted one and the single
command it suggests (``patchstack undo``) brings back the state before, exactly.
The figures are printed (``pytest -s``) for the closing note.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import Repo, make_repo

N_PATCHES = 150
TAGS = ("essential", "diagnostic", "optimization")
POINTS = ["journal-running", "publish-worktree", "publish-ref", "journal-finishing", "journal-done"]
UNDO_POINTS = [
    "journal-running",
    "restore-worktree",
    "restore-index",
    "restore-ref",
    "journal-finishing",
]


def build(tmp_path: Path) -> Repo:
    """A fork with N_PATCHES patches, each changing its own file, written directly (fast)."""
    files = {f"src/f{i:03}.txt": f"head {i}\nline {i}\ntail {i}\n" for i in range(N_PATCHES)}
    files["notes.txt"] = "notes\n"
    files["staged.txt"] = "staged\n"
    repo = make_repo(tmp_path / "fork with space", files)
    repo.ps("init")
    series = [(repo.path / "patches" / "series").read_text()]
    for i in range(N_PATCHES):
        name = f"p{i:03}.patch"
        path = f"src/f{i:03}.txt"
        (repo.path / "patches" / name).write_text(
            f"Subject: patch {i}\n\n---\n"
            f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
            f"@@ -1,3 +1,3 @@\n head {i}\n-line {i}\n+line {i} patched\n tail {i}\n"
        )
        series.append(f"{name} # {TAGS[i % 3]}\n")
    (repo.path / "patches" / "series").write_text("".join(series))
    # The user's own work, which nothing may lose.
    repo.write("notes.txt", "notes\nmy uncommitted edit\n")
    repo.write("staged.txt", "staged\nmy staged edit\n")
    repo.git("add", "staged.txt")
    repo.write("scratch/untracked.txt", "my untracked file\n")
    return repo


def state(repo: Repo) -> tuple:
    return (
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.head(),
        repo.git("ls-files", "-s"),
        repo.git("status", "--porcelain", "--untracked-files=all"),
        repo.snapshot(),
    )


def user_work_intact(repo: Repo) -> None:
    assert repo.read("notes.txt") == "notes\nmy uncommitted edit\n"
    assert repo.read("staged.txt") == "staged\nmy staged edit\n"
    assert repo.read("scratch/untracked.txt") == "my untracked file\n"
    assert "M  staged.txt" in repo.git("status", "--porcelain")


def spawn(
    repo: Repo, args: list[str], kill_at: str | None = None, point_log: Path | None = None
) -> subprocess.Popen:
    env = dict(os.environ)
    env.pop("PATCHSTACK_TEST_KILL_AT", None)
    if kill_at:
        env["PATCHSTACK_TEST_KILL_AT"] = kill_at
    if point_log:
        env["PATCHSTACK_TEST_POINT_LOG"] = str(point_log)
    return subprocess.Popen(
        [sys.executable, "-m", "patchstack", *args],
        cwd=repo.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_unlocked(repo: Repo) -> None:
    """A killed patchstack's git children hold the lock until they finish (milliseconds)."""
    path = repo.path / ".git" / "patchstack" / "lock"
    deadline = time.monotonic() + 10
    while path.exists():
        with open(path, "rb") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                assert time.monotonic() < deadline, "the lock was never released"
                time.sleep(0.01)


class Figures:
    def __init__(self) -> None:
        self.kills = 0
        self.restored = 0  # states restored by the one suggested command
        self.before = 0  # died before changing anything (and said nothing)
        self.after = 0  # died after finishing
        self.signals: dict[str, int] = {}


def settle(repo: Repo, before: tuple, after: tuple, fig: Figures) -> None:
    """After a kill: the state is before or after, or one suggested command restores before."""
    wait_unlocked(repo)
    user_work_intact(repo)
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress", "--no-dangling"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr
    probe = repo.ps("series")  # a reader: warns about an interrupted command, changes nothing
    if "was interrupted" in probe.stderr:
        assert "run 'patchstack undo'" in probe.stderr
        repo.ps("undo")
        assert state(repo) == before
        user_work_intact(repo)
        fig.restored += 1
        return
    now = state(repo)
    if now == before:
        fig.before += 1
    else:
        assert now == after, "neither the state before nor the one after"
        fig.after += 1
        repo.ps("undo")
        assert state(repo) == before


def calibrate(repo: Repo, args: list[str], tmp: Path) -> tuple[tuple, tuple, float, float]:
    """Run the command (twice: the second has the engine's cache, like the runs below) and
    measure when, after the start, its first and last points are reached."""
    before = state(repo)
    for i in range(2):
        log = tmp / f"points-{args[0]}-{i}"
        started = time.time()
        proc = spawn(repo, args, point_log=log)
        _out, err = proc.communicate()
        assert proc.returncode == 0, err
        after = state(repo)
        assert after != before
        repo.ps("undo")
        assert state(repo) == before
    times = [float(line.split()[1]) - started for line in log.read_text().splitlines()]
    return before, after, min(times), max(times)


def run_kills(
    repo: Repo, args: list[str], randoms: int, fig: Figures, rng: random.Random, tmp: Path
) -> None:
    before, after, first, last = calibrate(repo, args, tmp)
    for point in POINTS:
        proc = spawn(repo, args, kill_at=point)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL, (point, proc.returncode)
        fig.kills += 1
        settle(repo, before, after, fig)
    for _ in range(randoms):
        proc = spawn(repo, args)
        time.sleep(rng.uniform(first - 0.05, last + 0.02))
        proc.kill()
        proc.communicate()
        fig.kills += 1
        settle(repo, before, after, fig)
    # A writer is refused while a command is interrupted, naming it and the way back.
    proc = spawn(repo, args, kill_at="publish-ref")
    proc.communicate()
    wait_unlocked(repo)
    refused = repo.ps(*args, code=2)
    assert "was interrupted" in refused.stderr and "run 'patchstack undo'" in refused.stderr
    assert "'patchstack " + " ".join(args) + "'" in refused.stderr
    assert repo.ps("status", code=None).stderr.count("was interrupted") == 1
    repo.ps("undo")
    assert state(repo) == before
    fig.kills += 1
    fig.restored += 1
    # SIGINT and SIGTERM: the command finishes or rolls back, and exits 130 or 143.
    for i in range(2):
        sig = (signal.SIGINT, signal.SIGTERM)[i % 2]
        proc = spawn(repo, args)
        time.sleep(rng.uniform(first - 0.05, last))
        proc.send_signal(sig)
        _out, err = proc.communicate()
        assert proc.returncode in (0, 128 + sig, -sig), (proc.returncode, err)
        wait_unlocked(repo)
        now = state(repo)
        assert now in (before, after), err.decode()
        user_work_intact(repo)
        assert "was interrupted" not in repo.ps("series").stderr
        key = (
            f"{sig.name} -> exit {proc.returncode}, {'finished' if now == after else 'rolled back'}"
        )
        fig.signals[key] = fig.signals.get(key, 0) + 1
        if now == after:
            repo.ps("undo")


def test_kill_refresh_at_every_point_and_at_random(tmp_path) -> None:
    """refresh onto a moved upstream (every patch file and the base line rewritten)."""
    rng = random.Random(11)
    fig = Figures()
    repo = build(tmp_path)
    repo.ps("push", "--all")
    head = repo.head()
    # Upstream moves (built with plumbing, away from the user's index and work tree): a line
    # above every third patched hunk (offsets), and a new file.
    base = repo.git("rev-parse", f"HEAD~{N_PATCHES}").strip()
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "upstream-index"))

    def git(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args],
            cwd=repo.path,
            env=env,
            input=data,
            text=True,
            capture_output=True,
            check=True,
        ).stdout.strip()

    git("read-tree", base)
    changes = {
        f"src/f{i:03}.txt": f"upstream {i}\nhead {i}\nline {i}\ntail {i}\n"
        for i in range(0, N_PATCHES, 3)
    }
    changes["upstream-only.txt"] = "new upstream file\n"
    for path, text in changes.items():
        blob = git("hash-object", "-w", "--stdin", data=text)
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = git("commit-tree", git("write-tree"), "-p", base, "-m", "upstream moves")
    repo.git("update-ref", "refs/heads/upstream", commit)
    assert repo.head() == head
    user_work_intact(repo)
    run_kills(repo, ["refresh", "--onto", "upstream"], 6, fig, rng, tmp_path)
    print(
        f"\nrefresh kill figures: {fig.kills} SIGKILLs; {fig.restored} restored by 'undo';"
        f" {fig.before} untouched; {fig.after} finished (undone after); signals: {fig.signals}"
    )
    assert fig.kills == fig.restored + fig.before + fig.after


def test_kill_push_pop_and_undo_at_every_point_and_at_random(tmp_path) -> None:
    rng = random.Random(7)
    fig = Figures()
    repo = build(tmp_path)
    run_kills(repo, ["push", "--all"], 8, fig, rng, tmp_path)
    repo.ps("push", "--all")
    run_kills(repo, ["pop", "--only", "diagnostic"], 6, fig, rng, tmp_path)
    # undo itself, killed while it restores: undo again brings back the state before it.
    repo.ps("pop", "--only", "diagnostic")
    before = state(repo)
    for point in UNDO_POINTS:
        proc = spawn(repo, ["undo"], kill_at=point)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        fig.kills += 1
        wait_unlocked(repo)
        user_work_intact(repo)
        result = repo.ps("pop", code=2)
        assert "'patchstack undo' (#" in result.stderr and "was interrupted" in result.stderr
        repo.ps("undo")
        assert state(repo) == before
        fig.restored += 1
    print(
        f"\nkill figures: {fig.kills} SIGKILLs; {fig.restored} restored by the one suggested"
        f" command ('undo'); {fig.before} found untouched; {fig.after} found finished (undone"
        f" after); signals: {fig.signals}"
    )
    assert fig.kills == fig.restored + fig.before + fig.after
