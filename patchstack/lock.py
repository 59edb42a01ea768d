"""One command at a time, and signals that never cut a publish in half.

**The lock.** A command takes an ``flock`` on ``patchstack/lock`` in git's *common* directory
(shared by every linked worktree, like the objects, refs and cache it protects): exclusive for
a command that changes state, shared for one that only reads, never waiting. A second command
is refused at once with the name and process id of the one that holds it, which the holder
writes into the file. The kernel drops an flock when its holder dies, however it dies, so no
stale lock is ever left behind; the file itself stays, and is never the evidence of a lock.

**Signals.** git runs in its own session (see `git.run_git`), so a Ctrl-C at the terminal
reaches patchstack only. Outside a critical section SIGINT, SIGTERM and SIGHUP (the terminal
was closed) raise `Interrupted`: nothing has been published yet, temporary files are cleaned up
on the way out, and the exit status is 130, 143 or 129. Inside `critical()` (the journalled
publish, see `journal`) they are held back: the section finishes, and the signal is raised when
it ends.

**Test hook.** ``PATCHSTACK_TEST_KILL_AT=<point>`` makes the process SIGKILL itself when it
reaches the named `point` (and ``PATCHSTACK_TEST_SIGNAL_AT`` sends SIGINT, SIGTERM or SIGHUP, or
SIGSTOP to pause it there), so tests can stop a command at every step that matters,
deterministically.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import time
from collections.abc import Iterator

from .errors import RefusedError


class Interrupted(BaseException):  # noqa: N818 - like KeyboardInterrupt, not an error
    """SIGINT, SIGTERM or SIGHUP arrived; ``exit_code`` is 128 + the signal number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.exit_code = 128 + signum


_inherited: list[int] = []


def inherited_fds() -> tuple[int, ...]:
    """Descriptors every git child keeps: the lock, so that it outlives a killed patchstack
    until its last git child has finished too."""
    return tuple(_inherited)


class Lock:
    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    def release(self) -> None:
        if self.fd >= 0:
            if self.fd in _inherited:
                _inherited.remove(self.fd)
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = -1


def acquire(common_dir: str, command: str, exclusive: bool = True) -> Lock:
    """Take the repository's patchstack lock, or refuse at once naming the holder."""
    folder = os.path.join(common_dir, "patchstack")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        if not exclusive or _writer_holds(path):
            holder = _read_holder(path)
        else:
            holder = "a command that only reads (status, check, show, ...)"
        raise RefusedError(
            "another patchstack command is running on this repository"
            + (f": {holder}" if holder else ""),
            "wait for it to finish, then run your command again; nothing was changed",
        ) from None
    if exclusive:
        # Only the exclusive holder writes; readers leave the last writer's note alone.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{command} (pid {os.getpid()})\n".encode(), 0)
    _inherited.append(fd)
    return Lock(fd, path)


def _writer_holds(path: str) -> bool:
    """Whether the lock's holder is a writer (whose note the file holds): a reader shares it,
    so a shared lock is refused only by a writer. The note a writer left is not the holder's
    while readers hold the lock (a refresh that ended, then a running check)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # (closing drops the shared lock, if it was had)
    return False


def _read_holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            note = f.read(500).strip()
    except OSError:
        return ""
    pid = note.rpartition("(pid ")[2].rstrip(")")
    if pid.isdigit():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            note += " - it has died, and a git process it started is still finishing"
        except OSError:
            pass
    return note


# -- signals ----------------------------------------------------------------------------------

_held: list[int] = []  # signals that arrived inside a critical section
_depth = 0
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _handler(signum: int, _frame: object) -> None:
    if _depth:
        _held.append(signum)
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def signals_handled() -> Iterator[None]:
    """Turn SIGINT, SIGTERM and SIGHUP into `Interrupted` for the duration (main thread
    only)."""
    try:
        with also_handled(*HANDLED):
            yield
    finally:
        _held.clear()


@contextlib.contextmanager
def also_handled(*signums: int) -> Iterator[None]:
    """Handle ``signums`` as SIGINT and SIGTERM are, for the duration (bisect: SIGHUP, a closed
    terminal, must end COMMAND and remove the scratch worktree as they do); outside the main
    thread, signals are left alone."""
    try:
        old = {s: signal.signal(s, _handler) for s in signums}
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def critical() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back until the section ends, then raise the first."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth and _held:
            signum = _held[0]
            _held.clear()
            raise Interrupted(signum)


_reached: dict[str, int] = {}


def point(name: str) -> None:
    """A named point where tests stop the process deterministically.

    ``PATCHSTACK_TEST_KILL_AT=<point>[#<n>]`` sends SIGKILL at the n-th time (default the
    first) the point is reached; ``PATCHSTACK_TEST_SIGNAL_AT=<point>[#<n>]:<INT|TERM|HUP>`` sends
    that signal instead, which the command handles as a Ctrl-C, and ``:STOP`` pauses the
    process there (SIGSTOP: the test does what races it, then sends SIGCONT). With
    ``PATCHSTACK_TEST_POINT_LOG`` set, each point reached and its time are appended to that
    file (the soak tests aim random kills at the window between the first and the last)."""
    _reached[name] = _reached.get(name, 0) + 1
    here = f"{name}#{_reached[name]}"
    log = os.environ.get("PATCHSTACK_TEST_POINT_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{here} {time.time()}\n")
    kill = os.environ.get("PATCHSTACK_TEST_KILL_AT")
    if kill and (kill == here or (kill == name and _reached[name] == 1)):
        os.kill(os.getpid(), signal.SIGKILL)
    sig = os.environ.get("PATCHSTACK_TEST_SIGNAL_AT")
    if sig:
        where, _, which = sig.rpartition(":")
        if where == here or (where == name and _reached[name] == 1):
            os.kill(os.getpid(), _TEST_SIGNALS.get(which, signal.SIGTERM))


_TEST_SIGNALS = {
    "INT": signal.SIGINT,
    "TERM": signal.SIGTERM,
    "HUP": signal.SIGHUP,
    "STOP": signal.SIGSTOP,
}
