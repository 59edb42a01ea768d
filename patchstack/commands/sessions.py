"""The user's programs (bisect's COMMAND, a patch's probe), each in a session of its own.

A program is started with ``start_new_session``, so a Ctrl-C at the terminal reaches
patchstack only, and everything the program leaves running (a server it started, a pool of
workers) is one process group that `end` stops: asked with SIGTERM, then killed after
`STOP_GRACE` seconds when it was interrupted, killed at once when it is done. Starting is a
critical section (`lock.critical`), so a signal that arrives then waits until the process is
known and can be ended.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

from .. import lock
from ..errors import PatchstackError

STOP_GRACE = 5.0  # seconds between SIGTERM and SIGKILL for an interrupted program
Process = subprocess.Popen[bytes]
PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
DEVNULL = subprocess.DEVNULL


def start(
    command: Sequence[str],
    cwd: str,
    env: Mapping[str, str],
    stdout: int | IO[bytes] = PIPE,
    stderr: int | IO[bytes] | None = None,
    hint: str = "give a command that exists",
    stdin: int | IO[bytes] = DEVNULL,
) -> Process:
    """``command`` running in a session of its own, its standard input closed (or
    ``stdin``). Call it in
    a `lock.critical` section that also keeps the process, so that a signal that arrives
    meanwhile finds it known."""
    try:
        return subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
    except OSError as exc:
        raise PatchstackError(f"cannot run '{command[0]}': {exc.strerror}", hint) from exc


def end(proc: Process) -> None:
    """Stop the program's session: whatever it left running is killed; a program still
    running (interrupted, or out of time) is asked to stop first."""
    with lock.critical():
        if proc.stdout is not None:
            proc.stdout.close()
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(STOP_GRACE)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
