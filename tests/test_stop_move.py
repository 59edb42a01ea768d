"""A stop's move writes the index once (`journal.moves._showing`): the work tree to the merge
with its markers, the index to the stop's HEAD, without an ``update-index`` after ``read-tree``
(which hashed again every file the move wrote in the same second: git's racily clean entries).
Differential: stop by stop, with the user's edits, untracked, staged, ignored files, odd kinds
and line-ending filters, every stop's output, index entries (all but stat data), work tree,
snapshots and series are the same as with ``PATCHSTACK_NO_SHOWN_MOVE=1`` (move to the shown
tree, then set the index's entries); and an edit or an untracked file in the way is refused
the same way, before anything is written."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from patchstack import transaction
from patchstack.commands.refresh import settle
from patchstack.git.worktree import HELD
from patchstack.journal import derived, moves
from patchstack.journal.moves import SHOWN_OFF

from .conftest import Repo, copy_repo, slow_after
from .refresh_fixtures import series_fork
from .test_derived_snapshots import EVENTS, Event, _crlf, _moved
from .test_kept_verdicts import _fork

_STAT = re.compile(r"^  (ctime|mtime|dev|uid|gid): .*\n|^  size: \d+\t", re.M)


def _index(repo: Repo) -> str:
    """``ls-files -s --debug`` but for stat data (the flags kept)."""
    return _STAT.sub("", repo.git("--no-optional-locks", "ls-files", "-s", "--debug"))


def _stopped(repo: Repo, event: Event) -> tuple[Any, ...]:
    seen: list[str] = []

    def at_stop(repo: Repo, stops: int) -> None:
        if stops:
            seen.append(_index(repo))
        event(repo, stops)

    return (*_moved(repo, at_stop), seen)


# By default the user's edits and untracked files at each stop (a superset of nothing) and a
# file staged at a stop (the one event whose snapshots are not all derived); ignored files, odd
# kinds and line-ending filters under -m slow (.ci/run runs them).
DEFAULT_EVENTS = ("_edits", "_staged")
SHOWN_EVENTS = [
    *[pytest.param(*e, id=e[0].__name__) for e in EVENTS if e[0].__name__ in DEFAULT_EVENTS],
    *slow_after(
        [pytest.param(*e, id=e[0].__name__) for e in EVENTS if e[0].__name__ not in DEFAULT_EVENTS],
        0,
    ),
]


@pytest.mark.parametrize(("event", "made"), SHOWN_EVENTS)
def test_a_stop_shows_what_the_plain_move_shows(
    tmp_path, monkeypatch, event: Event, made: int
) -> None:
    """Three runs of the same moves: as a user has them; without the derived snapshots
    (test_derived_snapshots' claim: every snapshot, output and file the same); and then also
    without the shown move (this module's: the same again, every stop's index too)."""
    repo = _fork(tmp_path)
    derived_on = copy_repo(repo.path, tmp_path / "derived")
    plain = copy_repo(repo.path, tmp_path / "plain")
    spied_on: dict[str, list[bool]] = {"derived": [], "shown": []}

    def spy(module: Any, name: str, key: str) -> None:
        real = getattr(module, name)

        def spied(*args, **kwargs):  # type: ignore[no-untyped-def]
            got = real(*args, **kwargs)
            spied_on[key].append(got is not None)
            return got

        monkeypatch.setattr(module, name, spied)

    spy(derived, "overlaid_snapshot", "derived")
    with_derived = _stopped(derived_on, event)
    assert spied_on["derived"].count(True) == made, spied_on["derived"]
    assert len(with_derived[0]) == 3  # A, B and C stop
    files = with_derived[3][2]
    assert (event is _crlf) == any(b"\r\n" in data for data in files.values())

    monkeypatch.setenv("PATCHSTACK_NO_SNAPSHOT_DERIVE", "1")  # the snapshots read the real state
    spy(moves, "_showing", "shown")
    shown = _stopped(repo, event)
    assert shown == with_derived
    assert spied_on["shown"] == [True, True, True], spied_on["shown"]  # the way under test
    monkeypatch.setenv(SHOWN_OFF, "1")
    assert _stopped(plain, event) == shown
    assert len(shown[0]) == 3 and len(shown[-1]) == 3


def _skipped(repo: Repo) -> tuple[Any, ...]:
    """What a skip at a stop says and leaves: exit status, output, state and index."""
    step = repo.ps("refresh", "--skip", code=None)
    return step.exit_code, step.stderr, repo.state(), _index(repo)


def _index_writes(repo: Repo, *args: str, code: int) -> list[str]:
    """The git processes a command's publish runs that write the held index after its
    ``read-tree -m -u``."""
    from patchstack.git import base as process

    after: list[str] = []
    moved: list[bool] = []
    real_run, real_publish = process.run_git, transaction.publish

    def run_git(args, *a, **k):  # type: ignore[no-untyped-def]
        verb = next(x for x in args if not x.startswith("-") and "=" not in x)
        env = k.get("env") or {}
        held = str(env.get("GIT_INDEX_FILE", "")).endswith(HELD)
        if moved and held and verb in ("update-index", "read-tree", "add", "rm", "reset"):
            after.append(verb)
        if verb == "read-tree" and "-u" in args and held:
            moved.append(True)
        return real_run(args, *a, **k)

    def publish(*a, **k):  # type: ignore[no-untyped-def]
        process.run_git = run_git
        try:
            return real_publish(*a, **k)
        finally:
            process.run_git = real_run

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(transaction, "publish", publish)
        patched.setattr(settle, "publish", publish)
        repo.ps(*args, code=code)
    assert moved, "the publish moved no work tree"
    return after


def test_a_stop_writes_the_index_once(tmp_path: Path) -> None:
    """The first stop and a skip's: ``read-tree -m -u`` writes the held index, nothing after."""
    repo = _fork(tmp_path)
    assert _index_writes(repo, "refresh", "--onto", "up", code=1) == []
    assert _index_writes(repo, "refresh", "--skip", code=1) == []


FILES = {"f.py": "".join(f"line {i}\n" for i in range(1, 31)), "u.py": "u\n"}
# A stops; B, skipped to, adds new.py and sub/new.py (neither in A's stop nor in B's HEAD)
SERIES = [
    ("A", [("f", 5, "A f5")]),
    ("B", [("f", 10, "B f10"), ("new", 0, "new 1\n"), ("sub/new", 0, "sub new\n")]),
]
UPSTREAM = [("rewrites f", [("f", 5, "up f5"), ("f", 10, "up f10")])]


@pytest.mark.parametrize("plain", [False, True], ids=["shown", "plain"])
@pytest.mark.parametrize("way", ["file", "folder-is-a-file"])
def test_what_is_in_the_way_of_a_skip_is_refused_and_kept(
    tmp_path: Path, monkeypatch, plain: bool, way: str
) -> None:
    """B's stop writes new.py and sub/new.py, which the move to B's HEAD leaves alone: an
    untracked file there, or a file where the folder goes, stops the skip before anything is
    written, named, and kept. (An edit in the way: `test_derived_snapshots`.)"""
    if plain:
        monkeypatch.setenv(SHOWN_OFF, "1")
    repo = series_fork(tmp_path / "fork", FILES, SERIES, UPSTREAM)
    repo.ps("refresh", "--onto", "up", code=1)
    named = {"file": "new.py", "folder-is-a-file": "sub"}[way]
    repo.write(named, "mine\n")
    at_stop = repo.state()
    refused = repo.ps("refresh", "--skip", code=None)
    assert refused.exit_code != 0
    assert named in refused.stderr and "nothing was changed" in refused.stderr
    assert repo.state() == at_stop
    (repo.path / named).unlink()
    step = repo.ps("refresh", "--skip", code=1)
    assert "B.patch" in step.stderr
    assert repo.read("new.py") == "new 1\n" and repo.read("sub/new.py") == "sub new\n"


def test_a_stop_that_fails_after_the_move_puts_everything_back(tmp_path, monkeypatch) -> None:
    """The skip's move to B's HEAD done, writing B's conflicted files fails (a full disk):
    every file the move wrote (the HEAD's version, or the stop's) is put back, and the index;
    the stop at A is as it was."""
    from patchstack.git import Git

    from .test_derived_snapshots import _edits, _log

    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    _edits(repo, 1)
    at_stop, log, index = repo.state(), _log(repo), _index(repo)

    def full(self, entries, tree=None):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Git, "write_entries", full)
    failed = repo.ps("refresh", "--skip", code=None)
    assert failed.exit_code != 0 and "space" in failed.stderr
    assert (repo.state(), _log(repo), _index(repo)) == (at_stop, log, index)


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_a_file_git_leaves_alone_is_left_to_the_plain_move(tmp_path, monkeypatch, flag) -> None:
    """g.py, which B's stop writes and the move to B's HEAD leaves alone, marked so that git
    leaves its file alone (and the user's edit in it): the skip does what the plain move
    does (read-tree's own rules), never writes the stop's version over it unasked."""
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.git("update-index", flag, "g.py")
    repo.write("g.py", repo.read("g.py") + "mine\n")
    plain = copy_repo(repo.path, tmp_path / "plain")

    shown = _skipped(repo)
    monkeypatch.setenv(SHOWN_OFF, "1")
    assert _skipped(plain) == shown


def test_a_sparse_checkout_is_left_to_the_plain_move(tmp_path, monkeypatch) -> None:
    """B's stop adds sub/new.py, outside the sparse checkout's cone: the skip does what the
    plain move does (read-tree leaves the file out), never writes it."""
    repo = series_fork(tmp_path / "fork", FILES, SERIES, UPSTREAM)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.git("config", "core.sparseCheckout", "true")
    (repo.path / ".git" / "info" / "sparse-checkout").write_text("/*\n!/sub/\n")
    plain = copy_repo(repo.path, tmp_path / "plain")

    shown = _skipped(repo)
    monkeypatch.setenv(SHOWN_OFF, "1")
    assert _skipped(plain) == shown


def test_attributes_the_user_edited_are_read_as_the_plain_move_reads_them(
    tmp_path, monkeypatch
) -> None:
    """An uncommitted edit of .gitattributes at A's stop (line endings on checkout): B's stop
    writes its files as the plain move writes them (git reads a checkout's attributes from the
    index first), byte for byte."""
    files = {**FILES, ".gitattributes": "*.txt text\n"}
    repo = series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)
    repo.ps("refresh", "--onto", "up", code=1)
    repo.write(".gitattributes", "*.py text eol=crlf\n")
    plain = copy_repo(repo.path, tmp_path / "plain")

    shown = _skipped(repo)
    monkeypatch.setenv(SHOWN_OFF, "1")
    assert _skipped(plain) == shown
