"""The operation log's snapshot after a refresh's stop, derived from the snapshot before and
what the stop changed (`journal.derived`), instead of scanning the work tree again.
Differential: moving a series stop by stop (``--skip``, ``--continue``, with the user's edits,
untracked files, a staged file, line-ending filters) records the very same snapshots (trees,
commits, every field) with the derivation and without (``PATCHSTACK_NO_SNAPSHOT_DERIVE=1``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from patchstack import transaction
from patchstack.commands.refresh import taking
from patchstack.git import find_repo
from patchstack.journal import oplog, snapshot

from .conftest import Repo, copy_repo
from .refresh_fixtures import stop_by_stop
from .test_kept_verdicts import _fork

Event = Callable[[Repo, int], None]


def _log(repo: Repo) -> list[tuple[Any, ...]]:
    """Every entry of the operation log, but for when and by which process it was written."""
    git = find_repo(str(repo.path))
    return [
        (e.seq, e.kind, e.status, e.before.to_json(), e.after and e.after.to_json(), e.keep)
        for e in reversed(oplog.entries(git))
    ]


def _moved(repo: Repo, event: Event) -> tuple[Any, ...]:
    event(repo, 0)
    stops, last, series = stop_by_stop(repo, lambda n: event(repo, n))
    if event is _ignored:
        assert "new.py" not in repo.git(
            "ls-tree", "-r", "--name-only", _log(repo)[0][4]["worktree"]
        )
    return stops, last, series, repo.state(), _log(repo)


def _nothing(repo: Repo, stops: int) -> None:
    pass


def _edits(repo: Repo, stops: int) -> None:
    """At each stop: an unrelated file edited, an untracked file, a stop's file half edited."""
    if not stops:
        return
    repo.write("u.py", repo.read("u.py") + f"edit at stop {stops}\n")
    repo.write(f"notes-{stops}.txt", "mine\n")
    repo.write("f.py", repo.read("f.py").replace("line 1\n", "f 1 edited\n", 1))


def _staged(repo: Repo, stops: int) -> None:
    """A file staged at the first stop (the index is not HEAD's tree then)."""
    if stops == 1:
        repo.write("staged.txt", "staged\n")
        repo.git("add", "staged.txt")


def _ignored(repo: Repo, stops: int) -> None:
    """The file A creates (shown at its stop, untracked there) ignored from the start."""
    if not stops:
        (repo.path / ".git" / "info" / "exclude").write_text("new.py\n")


def _odd(repo: Repo, stops: int) -> None:
    """An unrelated file made executable, then deleted; an untracked symbolic link; a stop's
    file deleted."""
    if stops == 1:
        (repo.path / "u.py").chmod(0o755)
        (repo.path / "link").symlink_to("f.py")
    elif stops == 2:
        (repo.path / "u.py").unlink()
        (repo.path / "f.py").unlink()


def _crlf(repo: Repo, stops: int) -> None:
    """Line endings converted on checkout from the first stop on (a filter: what git writes
    is not the blob's bytes)."""
    if stops == 1:
        (repo.path / ".git" / "info" / "attributes").write_text("*.py text eol=crlf\n")


# (what happens at each stop, how many of the 4 snapshots after a stop or the end are derived)
EVENTS = [(_nothing, 4), (_edits, 4), (_staged, 1), (_ignored, 4), (_odd, 4), (_crlf, 4)]


# Each of EVENTS, stop by stop, with the derivation and without: one of the three runs of
# test_stop_move's test_a_stop_shows_what_the_plain_move_shows (which compares the same
# moves without the shown move too), so that the moves are made three times, not four.


def test_continue_to_the_next_stop_records_the_snapshot_a_scan_takes(tmp_path, monkeypatch) -> None:
    def resolved(repo: Repo) -> tuple[Any, ...]:
        repo.ps("refresh", "--onto", "up", code=1)  # A stops
        repo.write("f.py", repo.git("show", "HEAD:f.py").replace("up f5", "A and up f5"))
        step = repo.ps("refresh", "--continue", code=1)  # B stops
        return step.stderr, repo.state(), _log(repo)

    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    derived = resolved(repo)
    monkeypatch.setenv("PATCHSTACK_NO_SNAPSHOT_DERIVE", "1")
    assert resolved(plain) == derived


def test_a_skip_scans_the_work_tree_once(tmp_path, monkeypatch) -> None:
    """The snapshot before each skip is taken; the one after it (a stop, the end) derived."""
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    taken: list[str | None] = []
    real = snapshot.take_snapshot

    def counted(ws, refresh=None, head=None, also=(), scanned=None):  # type: ignore[no-untyped-def]
        taken.append(head)
        return real(ws, refresh, head, also, scanned)

    monkeypatch.setattr(transaction, "take_snapshot", counted)
    monkeypatch.setattr(taking, "take_snapshot", counted)  # a stop's, for the publish
    assert repo.ps("refresh", "--skip", code=None).exit_code == 1
    assert repo.ps("refresh", "--skip", code=None).exit_code == 1
    assert repo.ps("refresh", "--skip", code=None).exit_code == 0
    assert taken == [None, None, None]


def test_undo_at_a_derived_stop_gives_the_state_back(tmp_path: Path) -> None:
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    _edits(repo, 1)
    at_stop = repo.state()
    repo.ps("refresh", "--skip", code=1)
    repo.ps("undo")
    assert repo.state() == at_stop


def test_an_edit_in_the_way_of_a_skip_is_refused_and_kept(tmp_path: Path) -> None:
    """B's stop changes g.py: the user's edit there stops the skip before anything is written
    (read-tree refuses; what is in the way is named), the edit and the stop as they were."""
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write("g.py", repo.read("g.py") + "mine\n")
    repo.write("f.py", repo.read("f.py") + "mine too\n")  # A's file: the skip leaves it
    at_stop, log = repo.state(), _log(repo)
    refused = repo.ps("refresh", "--skip", code=None)
    assert refused.exit_code != 0
    assert "uncommitted edits in files this command would change: g.py" in refused.stderr
    assert (repo.state(), _log(repo)) == (at_stop, log)


def test_the_publish_of_a_skip_runs_few_git_processes(tmp_path, monkeypatch) -> None:
    """The stop's files staged in one process, no status, the snapshot after derived and the
    one before made in process but for git's scan of the work tree."""
    from patchstack.git import base as process

    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    ran: list[str] = []
    inside: list[bool] = []
    real_run, real_spawn, real_publish = process.run_git, process.spawn, transaction.publish

    def run_git(args, *a, **k):  # type: ignore[no-untyped-def]
        if inside:
            ran.append(next(x for x in args if not x.startswith("-") and "=" not in x))
        return real_run(args, *a, **k)

    def spawn(args, *a, **k):  # type: ignore[no-untyped-def]
        if inside:
            ran.append(next(x for x in args if not x.startswith("-") and "=" not in x))
        return real_spawn(args, *a, **k)

    def publish(*a, **k):  # type: ignore[no-untyped-def]
        inside.append(True)
        try:
            return real_publish(*a, **k)
        finally:
            inside.clear()

    monkeypatch.setattr(process, "run_git", run_git)
    monkeypatch.setattr(process, "spawn", spawn)
    import patchstack.commands.refresh.settle as settle

    monkeypatch.setattr(settle, "publish", publish)
    repo.ps("refresh", "--skip", code=1)
    commands = ran
    assert "status" not in commands and "hash-object" not in commands, ran
    # (the index it holds is the snapshot's, whose tree was asked before: no write-tree)
    assert commands.count("write-tree") == 0 and commands.count("read-tree") == 1, ran
    assert len(ran) <= 8, ran


@pytest.mark.parametrize("verb", ["--skip", "--continue"])
def test_a_stop_whose_new_file_is_ignored_goes_on(tmp_path, verb: str) -> None:
    """A creates new.py, which the user's ignore rules match: its stop shows it all the same,
    and ``--skip`` or ``--continue`` take it as the stop's file (git add refused it)."""
    repo = _fork(tmp_path)
    (repo.path / ".git" / "info" / "exclude").write_text("new.py\n")
    repo.ps("refresh", "--onto", "up", code=1)
    assert repo.read("new.py") == "new 1\n"
    if verb == "--continue":
        repo.write("f.py", repo.git("show", "HEAD:f.py").replace("up f5", "A and up f5"))
    assert "conflict in patch B.patch" in repo.ps("refresh", verb, code=1).stderr
    applied = repo.git("show", "--stat", "--format=", "HEAD")
    assert ("new.py" in applied) == (verb == "--continue"), applied


def test_a_snapshot_takes_a_files_mode_as_git_stages_it(tmp_path) -> None:
    """git stages a file executable by its owner's bit alone (a file 654 is 100644): the
    snapshot's mode is git's (it took any execute bit, and undo made such a file 755)."""
    import subprocess

    from patchstack.journal.snapshot import mode_of

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for perm in (0o644, 0o654, 0o645, 0o744, 0o755, 0o611):
        path = tmp_path / f"f{perm:o}"
        path.write_text("x\n")
        path.chmod(perm)
        subprocess.run(["git", "add", path.name], cwd=tmp_path, check=True)
        staged = subprocess.run(
            ["git", "ls-files", "-s", "--", path.name],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()[0]
        assert mode_of(path.lstat()) == staged, oct(perm)
