"""Programs under a pseudo-terminal, as a user at a terminal runs them: an interactive bash
whose readline completes what is typed (TAB), and one command with its output read back."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

_MARK = "@@LINE@@"


def _read_until(fd: int, done: re.Pattern[str], timeout: float) -> str:
    seen = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
            if done.search(seen.decode("utf-8", "replace")):
                break
    return seen.decode("utf-8", "replace")


class Bash:
    """An interactive bash (no rc files) in a pty, with the completion script given.

    `complete` types a line, presses TAB and returns what readline made of it: the line after
    completion, and the candidates it listed."""

    def __init__(self, cwd: Path, env: Mapping[str, str], setup: Sequence[str]) -> None:
        env = dict(env, TERM="dumb", PS1="$ ", INPUTRC=os.devnull, HISTFILE=os.devnull)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: bash
            os.chdir(cwd)
            os.execvpe("bash", ["bash", "--norc", "--noprofile", "-i"], env)
        lines = [
            "bind 'set show-all-if-ambiguous on'",
            "bind 'set completion-display-width 0'",
            "bind 'set completion-query-items 10000'",
            "bind 'set page-completions off'",
            "bind 'set bell-style none'",
            # Ctrl-X Ctrl-L prints the line being edited between marks.
            f"""bind -x '"\\C-x\\C-l": printf "{_MARK}%s{_MARK}\\n" "$READLINE_LINE"'""",
            *setup,
            "echo READY",
        ]
        for line in lines:
            self._send(line + "\n")
        self.before = _read_until(self.fd, re.compile(r"^READY", re.M), 30)

    def _send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def complete(self, line: str) -> tuple[str, list[str]]:
        """(the line after TAB, the candidates listed meanwhile, one a line)."""
        self._send(line + "\t")  # show-all-if-ambiguous: one TAB lists the candidates
        time.sleep(0.05)
        self._send("\x18\x0c")  # Ctrl-X Ctrl-L
        seen = _read_until(self.fd, re.compile(f"{_MARK}(.*?){_MARK}"), 30)
        self._send("\x15")  # Ctrl-U: the line is dropped, nothing runs
        found = re.findall(f"{_MARK}(.*?){_MARK}", seen)
        program = line.split()[0]
        listed = [  # not the typed line, nor its redisplays after the prompt
            ln.strip()
            for ln in seen.split(_MARK)[0].replace("\r", "\n").split("\n")
            if ln.strip() and not ln.startswith("$") and not ln.startswith(program)
        ]
        return (found[-1] if found else "<no line>"), listed

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def run_in_pty(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float = 60
) -> tuple[int, str]:
    """Run ``argv`` with its standard input, output and error on a pty; (exit status, what
    appeared on the terminal)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execvpe(argv[0], list(argv), dict(env))
    seen = _read_until(fd, re.compile(r"(?!)"), timeout)
    done, status = os.waitpid(pid, os.WNOHANG)
    if not done:  # still running after the timeout (waiting at the terminal): stopped
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), seen.replace("\r\n", "\n")


def screen(seen: str) -> list[str]:
    """The lines a terminal shows for ``seen``: a carriage return writes the line over from
    its start, and an erase-to-end-of-line (``ESC [K``) ends it there."""
    shown = []
    for raw in seen.replace("\r\n", "\n").split("\n"):
        line = ""
        for part in raw.split("\r"):
            text = part.replace("\x1b[K", "")
            line = text + ("" if "\x1b[K" in part else line[len(text) :])
        shown.append(line.rstrip())
    return shown


__all__ = ["Bash", "run_in_pty", "screen"]
