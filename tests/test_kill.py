"""Kill tests: a command killed at any point loses nothing, and one command restores the state.

Every state-changing command (push, pop --only, undo, import, a refresh that finishes, one that
stops at a conflict, --continue and --abort) runs in a subprocess and dies by SIGKILL at every
named point it reaches (``PATCHSTACK_TEST_KILL_AT=<point>#<n>``: deterministic, each occurrence
of each point), or gets SIGINT/SIGTERM/SIGHUP at a point before and inside the critical section
(SIGHUP, a closed terminal, is handled as SIGTERM: the step finishes). After
each: the user's uncommitted edit, staged change and untracked file are still there, ``git
fsck`` finds nothing wrong, and the state is exactly the one before or after the command, or
the next command names the interrupted one and the single command it suggests (``patchstack
undo``) brings back the state before, exactly; git's index lock a killed publish held is gone
after the next command.

The soak test (``pytest -m soak``, run by ``.ci/run``) adds SIGKILLs after random delays aimed
at the window between the first and the last point of a 150-patch push, pop and refresh. The
figures are printed (``pytest -s``) for the closing note.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import Repo, built_once, make_repo

TAGS = ("essential", "diagnostic", "optimization")


@built_once
def build(tmp_path: Path, n: int) -> Repo:
    """A fork with n patches, each changing its own file, written directly (fast)."""
    files = {f"src/f{i:03}.txt": f"head {i}\nline {i}\ntail {i}\n" for i in range(n)}
    files["notes.txt"] = "notes\n"
    files["staged.txt"] = "staged\n"
    repo = make_repo(tmp_path / "fork with space", files)
    repo.ps("init")
    series = [(repo.path / "patches" / "series").read_text()]
    for i in range(n):
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


def upstream_moves(
    repo: Repo, tmp_path: Path, n: int, conflict: int | None, more: tuple[int, ...] = ()
) -> None:
    """refs/heads/upstream: the base with a line above every third patched hunk (offsets), a
    new file, and (``conflict``, ``more``) the line some patches change changed too. Built
    with plumbing, away from the user's index and work tree."""
    base = repo.git("rev-parse", f"HEAD~{n}").strip()
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "upstream-index"))

    def git(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo.path, env=env, input=data, text=True,
            capture_output=True, check=True,
        ).stdout.strip()  # fmt: skip

    git("read-tree", base)
    changes = {
        f"src/f{i:03}.txt": f"upstream {i}\nhead {i}\nline {i}\ntail {i}\n" for i in range(0, n, 3)
    }
    for c in ([] if conflict is None else [conflict]) + list(more):
        changes[f"src/f{c:03}.txt"] = f"head {c}\nline {c} up\ntail {c}\n"
    changes["upstream-only.txt"] = "new upstream file\n"
    for path, text in changes.items():
        blob = git("hash-object", "-w", "--stdin", data=text)
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    commit = git("commit-tree", git("write-tree"), "-p", base, "-m", "upstream moves")
    repo.git("update-ref", "refs/heads/upstream", commit)


def state(repo: Repo) -> tuple:
    return (
        repo.git("symbolic-ref", "-q", "HEAD", check=False),
        repo.head(),
        repo.git("ls-files", "-s"),
        repo.status_all(),
        repo.snapshot(),
    )


def user_work_intact(repo: Repo) -> None:
    assert repo.read("notes.txt") == "notes\nmy uncommitted edit\n"
    assert repo.read("staged.txt") == "staged\nmy staged edit\n"
    assert repo.read("scratch/untracked.txt") == "my untracked file\n"
    assert "M  staged.txt" in repo.git("status", "--porcelain")


def spawn(repo: Repo, args: list[str], **env_extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PATCHSTACK_TEST_")}
    env.update(env_extra)
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

    def line(self, what: str) -> str:
        return (
            f"\n{what}: {self.kills} SIGKILLs; {self.restored} restored by the one suggested"
            f" command ('undo'); {self.before} found untouched; {self.after} found finished"
            f" (undone after); signals: {self.signals}"
        )


def settle(
    repo: Repo,
    before: tuple,
    after: tuple,
    fig: Figures,
    reset: list[str] | None = None,
    state: Callable[[Repo], tuple] = state,
) -> None:
    """After a kill: the state is before or after, or one suggested command restores before.
    A finished command is taken back with ``reset`` (default: undo) for the next kill."""
    wait_unlocked(repo)
    user_work_intact(repo)
    fsck = subprocess.run(
        ["git", "fsck", "--no-progress", "--no-dangling"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert fsck.returncode == 0 and not fsck.stdout.strip(), fsck.stdout + fsck.stderr
    assert repo.git("for-each-ref", "refs/patchstack/scratch") == ""  # (a stream's tip: none)
    probe = repo.ps("series", code=None)  # a reader: warns about an interrupted command
    # ... and removes git's index lock a killed publish held, so git works again at once.
    assert not (repo.path / ".git" / "index.lock").exists()
    assert not list((repo.path / ".git").glob("index.lock.patchstack-*"))  # (a draft note)
    held = ("patchstack-index-held", "patchstack-index-kept")
    assert not [n for n in held if (repo.path / ".git" / n).exists()]
    if "was interrupted" in probe.stderr:
        assert "run 'patchstack undo'" in probe.stderr
        if not fig.restored:  # a writer is refused too (once is enough to show it)
            refused = repo.ps("pop", "--all", code=2)
            assert "was interrupted" in refused.stderr
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
        repo.ps(*(reset or ["undo"]))
        assert state(repo) == before


def points_of(
    repo: Repo, args: list[str], tmp: Path, state: Callable[[Repo], tuple] = state
) -> tuple[tuple, list[str], list[float]]:
    """Run the command once, logging its points; the state after, the points in order (each
    as '<name>#<n>') and when each was reached (seconds after the start)."""
    log = tmp / f"points-{os.getpid()}-{time.monotonic_ns()}"
    started = time.time()
    proc = spawn(repo, args, PATCHSTACK_TEST_POINT_LOG=str(log))
    _out, err = proc.communicate()
    assert proc.returncode in (0, 1), err
    after = state(repo)
    rows = [line.split() for line in log.read_text().splitlines()]
    return after, [r[0] for r in rows], [float(r[1]) - started for r in rows]


def kill_everywhere(
    repo: Repo,
    args: list[str],
    fig: Figures,
    tmp: Path,
    reset: list[str] | None = None,
    state: Callable[[Repo], tuple] = state,
    inside: str = "TERM",
) -> None:
    """SIGKILL ``args`` at each occurrence of each point, then SIGINT before and ``inside``
    (SIGTERM, or SIGHUP: a closed terminal, handled alike) inside the critical section.
    ``reset``: the command that brings the state before back (default: undo); ``state``: what
    the command changes."""
    before = state(repo)
    after, reached, _times = points_of(repo, args, tmp, state)
    assert after != before
    repo.ps(*(reset or ["undo"]))
    assert state(repo) == before
    # Each point once, and a repeated one (a file written per patch) at its first and last.
    last = {p.partition("#")[0]: p for p in reached}
    points = list(dict.fromkeys([p for p in reached if p.endswith("#1")] + list(last.values())))
    for where in points:
        proc = spawn(repo, args, PATCHSTACK_TEST_KILL_AT=where)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL, (where, proc.returncode)
        fig.kills += 1
        settle(repo, before, after, fig, reset, state)
        assert state(repo) == before
    for where, sig in (("publish-start", "INT"), ("journal-running", inside)):
        proc = spawn(repo, args, PATCHSTACK_TEST_SIGNAL_AT=f"{where}:{sig}")
        _out, err = proc.communicate()
        signum = getattr(signal, f"SIG{sig}")
        assert proc.returncode == 128 + signum, (where, proc.returncode, err)
        wait_unlocked(repo)
        now = state(repo)
        # Before the critical section: nothing changed; inside it: the command finished; the
        # message says which, and what is applied (or that a refresh stopped).
        assert now == (before if where == "publish-start" else after), err.decode()
        message = err.decode()
        if where == "publish-start":
            assert "nothing was changed" in message, message
        elif "--continue" in message:
            assert "the refresh stopped at a conflict" in message, message
        elif args[0] == "worktree":
            assert "the worktree ../exp was" in message and "'patchstack undo'" in message
        else:
            assert "the command had finished" in message and "patch(es) applied" in message
        user_work_intact(repo)
        key = f"SIG{sig} at {where} -> exit {proc.returncode}"
        fig.signals[key] = fig.signals.get(key, 0) + 1
        if now != before:
            repo.ps(*(reset or ["undo"]))
        assert state(repo) == before


N = 12


@pytest.mark.slow  # 30-40 s: every kill point of five commands; .ci/run runs it
def test_kill_push_pop_undo_import_at_every_point(tmp_path) -> None:
    fig = Figures()
    repo = build(tmp_path, N)
    kill_everywhere(repo, ["push", "--all"], fig, tmp_path)
    repo.ps("push", "--all")
    kill_everywhere(repo, ["pop", "--only", "diagnostic"], fig, tmp_path, inside="HUP")
    # undo itself, killed while it restores: undo again brings back the state before it.
    repo.ps("pop", "--only", "diagnostic")
    kill_everywhere(repo, ["undo"], fig, tmp_path, reset=["redo"])
    # import writes the series directory only, through the same transaction.
    quilt = tmp_path / "quilt"
    quilt.mkdir()
    (quilt / "series").write_text("extra.patch\n")
    (quilt / "extra.patch").write_text("--- a/notes2.txt\n+++ b/notes2.txt\n@@ -0,0 +1 @@\n+more\n")
    kill_everywhere(
        repo, ["--dir", "more", "import", "quilt", str(quilt), "--tag", "essential"], fig, tmp_path
    )
    print(fig.line("push/pop/undo/import kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    assert fig.restored and fig.after


@pytest.mark.slow  # 30-40 s: every kill point of five commands; .ci/run runs it
def test_kill_refresh_finish_stop_continue_abort_at_every_point(tmp_path) -> None:
    fig = Figures()
    repo = build(tmp_path, N)
    repo.ps("push", "--all")
    upstream_moves(repo, tmp_path, N, conflict=None)
    kill_everywhere(repo, ["refresh", "--onto", "upstream"], fig, tmp_path)
    # A refresh that stops at a conflict: killed anywhere, the result is the state before, the
    # stopped refresh, or an interrupted one that undo takes back.
    repo.git("update-ref", "-d", "refs/heads/upstream")
    upstream_moves(repo, tmp_path, N, conflict=4)
    kill_everywhere(repo, ["refresh", "--onto", "upstream"], fig, tmp_path)
    result = repo.ps("refresh", "--onto", "upstream", code=1)
    assert "conflict in patch p004.patch" in result.stderr
    # (a skip begins listing the work tree before it replays: `attributes.start_listing`)
    kill_everywhere(repo, ["refresh", "--skip"], fig, tmp_path)
    repo.write("src/f004.txt", "head 4\nline 4 up patched\ntail 4\n")
    kill_everywhere(repo, ["refresh", "--continue"], fig, tmp_path)
    kill_everywhere(repo, ["refresh", "--abort"], fig, tmp_path, inside="HUP")
    print(fig.line("refresh kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_delete_at_every_point(tmp_path) -> None:
    """delete, the series edit with the most steps: a work-tree move, a file removed, the
    series rewritten, the stack rebuilt above the deleted patch."""
    fig = Figures()
    repo = build(tmp_path, 4)
    repo.ps("push", "--all")
    kill_everywhere(repo, ["delete", "p001"], fig, tmp_path, inside="HUP")
    print(fig.line("delete kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    assert fig.restored


def with_tree(repo: Repo) -> tuple:
    """The user's state and the experiment tree at ../exp: registered or not, its HEAD, files
    and status, and its own log."""
    tree = Repo(repo.path.parent / "exp")
    listed = repo.git("worktree", "list", "--porcelain")
    if not tree.path.exists():
        return (state(repo), listed, None)
    log = tree.git("for-each-ref", "--format=%(objectname)", "refs/patchstack/worktrees/")
    return (state(repo), listed, tree.head(), tree.snapshot(), tree.git("status", "-s"), log)


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_worktree_making_at_every_point(tmp_path) -> None:
    """Issue 26: 'worktree DIR' killed anywhere leaves the state before, the state after, or
    an interrupted entry that one 'undo' takes back (the half-made tree removed); Ctrl-C says
    which."""
    fig = Figures()
    repo = build(tmp_path, 4)
    repo.ps("push", "--all")
    args = ["worktree", "../exp", "--only", "essential"]
    kill_everywhere(repo, args, fig, tmp_path, state=with_tree)
    print(fig.line("worktree kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    assert fig.restored and fig.after


@pytest.mark.soak
def test_kill_worktree_removing_at_every_point(tmp_path) -> None:
    """'worktree --remove --force DIR' of a tree with work in it (an edit, its own log) killed
    anywhere: the tree is there as it was, gone, or one 'undo' makes it again exactly."""
    fig = Figures()
    repo = build(tmp_path, 4)
    repo.ps("worktree", "../exp", "--only", "essential")
    tree = Repo(tmp_path / "exp")
    tree.write("src/f000.txt", "work in the tree\n")
    repo.ps("pop", cwd=tree.path)  # the tree's own log has an entry
    args = ["worktree", "--remove", "--force", "../exp"]
    kill_everywhere(repo, args, fig, tmp_path, state=with_tree)
    print(fig.line("worktree --remove kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    assert fig.restored and fig.after


def bisect_leftovers(repo: Repo) -> tuple:
    """The user's state and the worktrees of the repository."""
    listed = repo.git("worktree", "list", "--porcelain")
    return (state(repo), listed)


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_and_signal_bisect_at_every_point(tmp_path, monkeypatch) -> None:
    """Issue 26: bisect killed anywhere leaves the user's state as it was and at most a locked
    scratch worktree that the next bisect removes; SIGINT, SIGTERM and SIGHUP anywhere end it
    with the scratch worktree removed, the exit status 128 + the signal and nothing changed."""
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    repo = build(tmp_path, 4)
    upstream_moves(repo, tmp_path, 0, conflict=None)
    culprit = repo.git("rev-parse", "upstream").strip()
    good = repo.head()
    args = ["bisect", good, "upstream", "--only", "essential", "--"]
    args += ["sh", "-c", f'test "$PATCHSTACK_BISECT_COMMIT" != {culprit}']
    before = bisect_leftovers(repo)
    after, reached, _times = points_of(repo, args, tmp_path, bisect_leftovers)
    assert after == before and "bisect-step#2" in reached
    kills = signals = 0
    for where in dict.fromkeys(reached):
        proc = spawn(repo, args, PATCHSTACK_TEST_KILL_AT=where)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL, (where, proc.returncode)
        kills += 1
        wait_unlocked(repo)
        user_work_intact(repo)
        assert state(repo) == before[0]
        out = repo.ps(*args).stdout  # the next bisect removes a scratch tree left behind
        assert f"first failing commit: {culprit}" in out
        assert bisect_leftovers(repo) == before and os.listdir(scratch_root) == []
    for where, sig in (
        ("bisect-scratch", "INT"),
        ("bisect-step", "TERM"),
        ("bisect-tested", "HUP"),
    ):
        proc = spawn(repo, args, PATCHSTACK_TEST_SIGNAL_AT=f"{where}:{sig}")
        _out, err = proc.communicate()
        signum = getattr(signal, f"SIG{sig}")
        assert proc.returncode == 128 + signum, (where, sig, proc.returncode, err)
        assert "nothing was changed" in err.decode()
        assert bisect_leftovers(repo) == before and os.listdir(scratch_root) == []
        signals += 1
    print(f"\nbisect: {kills} SIGKILLs, {signals} signals; scratch trees all removed")


def resolve(repo: Repo, i: int) -> None:
    """Resolve patch i's conflict with upstream_moves' line: both changes kept."""
    repo.write(f"src/f{i:03}.txt", f"head {i}\nline {i} up patched\ntail {i}\n")


def topic_branch(repo: Repo, tmp_path: Path, base: str) -> None:
    """refs/heads/topic: two commits on ``base``, each adding a file (plumbing only)."""
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "topic-index"))

    def git(*args: str, data: str | None = None) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo.path, env=env, input=data, text=True,
            capture_output=True, check=True,
        ).stdout.strip()  # fmt: skip

    git("read-tree", base)
    parent = base
    for i in range(2):
        blob = git("hash-object", "-w", "--stdin", data=f"topic {i}\n")
        git("update-index", "--add", "--cacheinfo", f"100644,{blob},topic/t{i}.txt")
        parent = git("commit-tree", git("write-tree"), "-p", parent, "-m", f"Topic {i}\n\nWhy.")
    repo.git("update-ref", "refs/heads/topic", parent)


def with_resolutions(repo: Repo) -> tuple:
    """The user's state and the recorded resolutions (for a command that changes them)."""
    folder = repo.path / "patches" / "resolutions"
    found = sorted(folder.iterdir()) if folder.is_dir() else []
    return (state(repo), tuple((p.name, p.read_bytes()) for p in found))


def deferred_and_recorded(repo: Repo, tmp_path: Path) -> None:
    """Upstream conflicts with p002 and p004; both resolutions recorded, then the refresh
    taken back (what it learned stays)."""
    repo.ps("push", "--all")
    upstream_moves(repo, tmp_path, 6, conflict=2, more=(4,))
    repo.ps("refresh", "--onto", "upstream", code=1)
    resolve(repo, 2)
    repo.ps("refresh", "--continue", code=1)
    resolve(repo, 4)
    repo.ps("refresh", "--continue")
    for _ in range(3):
        repo.ps("undo")
    assert len(list((repo.path / "patches" / "resolutions").iterdir())) == 2


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_deferred_push_continue_with_resolutions_and_import_branch_at_every_point(
    tmp_path,
) -> None:
    """Issue 34: 'push NAME' of a deferred patch (and the refresh that defers it), a 'refresh
    --continue' that records one resolution and settles the next conflict with a recorded one,
    and 'import branch', each killed at every point: the same guarantees as every other
    command."""
    fig = Figures()
    repo = build(tmp_path, 6)
    deferred_and_recorded(repo, tmp_path)
    repo.ps("resolutions", "p002.patch", "--forget")
    repo.ps("refresh", "--onto", "upstream", code=1)  # p002 asked again, p004's is recorded
    resolve(repo, 2)
    kill_everywhere(repo, ["refresh", "--continue"], fig, tmp_path)
    done = repo.ps("refresh", "--continue").stdout
    assert "p004.patch  (recorded resolution" in done  # whole-file or hunk record
    repo.ps("undo")
    repo.ps("refresh", "--abort")
    # push NAME of a deferred patch (its recorded resolution forgotten: it stops again).
    repo.ps("resolutions", "--forget")
    defer = ["refresh", "--onto", "upstream", "--defer-conflicts"]
    kill_everywhere(repo, defer, fig, tmp_path)  # (killed after its stream's checkpoints too)
    repo.ps(*defer)
    assert "# deferred: p002.patch" in repo.read("patches/series")
    kill_everywhere(repo, ["push", "p002"], fig, tmp_path)
    repo.ps("undo")
    # import branch: the series of a topic branch, written to a folder of its own.
    base = repo.git("rev-parse", "upstream").strip()
    topic_branch(repo, tmp_path, base)
    args = ["--dir", "more", "import", "branch", "topic", "--upstream", base, "-t", "essential"]
    kill_everywhere(repo, args, fig, tmp_path)
    print(fig.line("deferred push, continue with resolutions, import branch kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    assert fig.restored


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_resolutions_forget_at_every_point(tmp_path) -> None:
    """'resolutions --forget' is journaled: killed anywhere, undo brings back what it
    removed."""
    repo = build(tmp_path, 6)
    deferred_and_recorded(repo, tmp_path)
    entries = repo.git("rev-list", "--count", "refs/patchstack/oplog")
    repo.ps("resolutions", "--forget")
    assert repo.git("rev-list", "--count", "refs/patchstack/oplog") != entries
    repo.ps("undo")
    fig = Figures()
    kill_everywhere(repo, ["resolutions", "--forget"], fig, tmp_path, state=with_resolutions)
    print(fig.line("resolutions --forget kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after


PROBE = (
    'echo run >> "$PROBE_COUNT";'
    ' test "$(wc -l < "$PROBE_COUNT")" -ne "${PROBE_KILL_AT:-0}" || kill -KILL $PPID;'
    " grep -q patched src/f00"
)


def probed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Repo, Path]:
    """build's fork with a probe in p000 and p001, scratch trees made under tmp/ (so that
    one left behind shows), the probes counting their runs in a file."""
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(scratch_root))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("PROBE_COUNT", str(tmp_path / "count"))
    repo = build(tmp_path, 3)
    for i in range(2):
        path = repo.path / "patches" / f"p00{i}.patch"
        head, diff = path.read_text().split("\n---\n", 1)
        path.write_text(f"{head}\n\nPatchstack-Probe: {PROBE}{i}.txt\n---\n{diff}")
    repo.ps("push", "--all")
    return repo, scratch_root


@pytest.mark.slow  # over ~5 s; .ci/run runs the slow tests
def test_kill_check_probes_at_every_probe_run(tmp_path, monkeypatch) -> None:
    """Issue 34: 'check --probes' killed while each of its probes runs changes nothing, and
    the next command leaves no scratch worktree registered."""
    repo, scratch_root = probed(tmp_path, monkeypatch)
    count = tmp_path / "count"
    args = ["check", "--probes", "--jobs", "1"]
    before = bisect_leftovers(repo)
    cache = repo.path / ".git" / "patchstack" / "probes.json"
    count.write_text("")
    repo.ps(*args)
    runs = len(count.read_text().splitlines())
    assert runs >= 4  # each probe with and without its patch
    for k in range(1, runs + 1):
        cache.unlink(missing_ok=True)  # every probe runs again
        count.write_text("")
        proc = spawn(repo, args, PROBE_KILL_AT=str(k))
        _out, err = proc.communicate()
        assert proc.returncode == -signal.SIGKILL, (k, err)
        wait_unlocked(repo)
        user_work_intact(repo)
        assert state(repo) == before[0]
        repo.ps("status")  # the next command, whatever it is
        assert bisect_leftovers(repo) == before and os.listdir(scratch_root) == []
    print(f"\ncheck --probes: {runs} SIGKILLs, one in each probe run; nothing left registered")


@pytest.mark.soak
def test_kill_every_editing_command_at_every_point(tmp_path) -> None:
    """rename, tag, edit, move, fold and split: the same transaction, the same guarantees
    (in the soak run: each takes the full round of kills)."""
    fig = Figures()
    repo = build(tmp_path, 5)
    repo.ps("push", "--all")
    for i, args in enumerate(
        (
            ["rename", "p000", "q000"],
            ["tag", "p001", "optimization"],
            ["edit", "p002", "-m", "A new subject\n\nAnd why."],
            ["move", "p004", "--bottom"],
            ["fold", "p001", "--into", "p002"],
        )
    ):
        kill_everywhere(repo, args, fig, tmp_path, inside="HUP" if i % 2 else "TERM")
    repo.ps("fold", "p001", "--into", "p002")
    kill_everywhere(
        repo,
        ["split", "p002", "--as", "p001b", "--tag", "essential", "src/f001.txt"],
        fig,
        tmp_path,
    )
    print(fig.line("editing commands kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after


@pytest.mark.soak
def test_soak_random_kills(tmp_path) -> None:
    """150 patches; SIGKILL after random delays within each command's window of points."""
    rng = random.Random(11)
    fig = Figures()
    n = 150
    repo = build(tmp_path, n)
    for args, prepare in (
        (["push", "--all"], None),
        (["pop", "--only", "diagnostic"], ["push", "--all"]),
        (["refresh", "--onto", "upstream"], None),
    ):
        if prepare:
            repo.ps(*prepare)
        if args[0] == "refresh":
            repo.ps("push", "--all")
            upstream_moves(repo, tmp_path, n, conflict=None)
        before = state(repo)
        after, _points, times = points_of(repo, args, tmp_path)
        repo.ps("undo")
        first, last = min(times), max(times)
        for _ in range(8):
            proc = spawn(repo, args)
            time.sleep(rng.uniform(max(0.0, first - 0.05), last + 0.02))
            proc.kill()
            proc.communicate()
            fig.kills += 1
            settle(repo, before, after, fig)
            assert state(repo) == before
    print(fig.line("soak kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after


@pytest.mark.soak
def test_soak_random_kills_of_worktree_and_bisect(tmp_path) -> None:
    """SIGKILL after random delays within the window of points of 'worktree DIR', 'worktree
    --remove' and 'bisect' (a 60-patch series): the same guarantees as at the named points."""
    rng = random.Random(26)
    fig = Figures()
    n = 60
    repo = build(tmp_path, n)
    repo.ps("push", "--all")
    for args, prepare in (
        (["worktree", "../exp"], None),
        (["worktree", "--remove", "../exp"], ["worktree", "../exp"]),
    ):
        if prepare:
            repo.ps(*prepare)
        before = with_tree(repo)
        after, _points, times = points_of(repo, args, tmp_path, with_tree)
        repo.ps("undo")
        first, last = min(times), max(times)
        for _ in range(10):
            proc = spawn(repo, args)
            time.sleep(rng.uniform(max(0.0, first - 0.05), last + 0.02))
            proc.kill()
            proc.communicate()
            fig.kills += 1
            settle(repo, before, after, fig, state=with_tree)
            assert with_tree(repo) == before
    repo.ps("worktree", "--remove", "../exp")
    repo.ps("pop", "--all")
    upstream_moves(repo, tmp_path, 0, conflict=None)
    culprit = repo.git("rev-parse", "upstream").strip()
    args = ["bisect", repo.head(), "upstream", "--"]
    args += ["sh", "-c", f'test "$PATCHSTACK_BISECT_COMMIT" != {culprit}']
    before = bisect_leftovers(repo)
    _after, _points, times = points_of(repo, args, tmp_path, bisect_leftovers)
    for _ in range(10):
        proc = spawn(repo, args)
        time.sleep(rng.uniform(0.0, max(times) + 0.05))
        proc.kill()
        proc.communicate()
        fig.kills += 1
        wait_unlocked(repo)
        user_work_intact(repo)
        assert f"first failing commit: {culprit}" in repo.ps(*args).stdout
        assert bisect_leftovers(repo) == before
    print(fig.line("worktree and bisect soak kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after + 10


@pytest.mark.soak
def test_soak_random_kills_of_deferred_resolved_imported_and_probed(tmp_path, monkeypatch) -> None:
    """Issue 34's commands (the refresh that defers, 'push NAME' of the deferred patch,
    'refresh --continue' with a recorded resolution, 'import branch', 'check --probes'),
    SIGKILLed after random delays within each one's window: the same guarantees."""
    rng = random.Random(34)
    fig = Figures()
    repo = build(tmp_path, 6)
    deferred_and_recorded(repo, tmp_path)
    base = repo.git("rev-parse", "upstream").strip()
    topic_branch(repo, tmp_path, base)

    def kills(args: list[str], then: Callable[[], None] | None = None) -> None:
        before = state(repo)
        after, _points, times = points_of(repo, args, tmp_path)
        repo.ps("undo")
        first, last = min(times), max(times)
        for _ in range(6):
            proc = spawn(repo, args)
            time.sleep(rng.uniform(max(0.0, first - 0.05), last + 0.02))
            proc.kill()
            proc.communicate()
            fig.kills += 1
            settle(repo, before, after, fig)
            assert state(repo) == before
        if then:
            then()

    repo.ps("resolutions", "p002.patch", "--forget")
    repo.ps("refresh", "--onto", "upstream", code=1)
    resolve(repo, 2)
    kills(["refresh", "--continue"], lambda: repo.ps("refresh", "--abort"))
    repo.ps("resolutions", "--forget")
    defer = ["refresh", "--onto", "upstream", "--defer-conflicts"]
    kills(defer, lambda: repo.ps(*defer))
    kills(["push", "p002"], lambda: None)
    args = ["--dir", "more", "import", "branch", "topic", "--upstream", base, "-t", "essential"]
    kills(args)
    print(fig.line("issue 34 commands soak kill figures"))
    assert fig.kills == fig.restored + fig.before + fig.after
    # check --probes: no point to aim at; the window is the whole run.
    probe_repo, scratch_root = probed(tmp_path / "probed", monkeypatch)
    cache = probe_repo.path / ".git" / "patchstack" / "probes.json"
    before = bisect_leftovers(probe_repo)
    started = time.monotonic()
    probe_repo.ps("check", "--probes")
    took = time.monotonic() - started
    for _ in range(8):
        cache.unlink(missing_ok=True)
        proc = spawn(probe_repo, ["check", "--probes"])
        time.sleep(rng.uniform(0.0, took))
        proc.kill()
        proc.communicate()
        wait_unlocked(probe_repo)
        user_work_intact(probe_repo)
        probe_repo.ps("status")
        assert bisect_leftovers(probe_repo) == before and os.listdir(scratch_root) == []
