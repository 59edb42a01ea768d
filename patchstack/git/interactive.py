"""What git does with the user at the terminal: the editor (``git var GIT_EDITOR``: the
``GIT_EDITOR``, ``core.editor``, ``VISUAL``, ``EDITOR`` order, run through the shell as git runs
it) and the hunk selector of ``git add -p`` / ``git reset -p``, on a temporary index.

These processes run in patchstack's own session, in the foreground, so the editor and the
selector own the terminal and Ctrl-C reaches them as usual (nothing has changed yet when they
run). With ``answers`` the selector reads them instead of the terminal, and what it printed is
returned (scripts, tests, a pipe into ``patchstack new -p``).

The pager and the colour settings are the user's preferences, so they are read with the
caller's own environment and configuration (`user_git`), never the sealed one, which pins
``core.pager=cat`` and ``color.ui=false`` for the plumbing: ``git var GIT_PAGER`` (the
``GIT_PAGER``, ``core.pager``, ``PAGER``, ``less`` order) and ``color.patchstack`` /
``color.ui``. The pager runs through the shell with git's ``LESS=FRX`` and ``LV=-c`` when they
are not set, and ``GIT_PAGER_IN_USE`` tells the processes after it (and git) that a pager reads
the output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence

from ..errors import PatchstackError
from ..lock import inherited_fds
from .base import GitBase
from .index import TempIndex
from .process import git_program, sealed_env


class Interactive(GitBase):
    def editor(self) -> str:
        proc = self.run("var", "GIT_EDITOR", check=False)
        editor = proc.stdout.decode("utf-8", "surrogateescape").strip()
        if proc.returncode != 0 or not editor:
            raise PatchstackError(
                "no editor: " + proc.stderr.decode("utf-8", "replace").strip(),
                "set GIT_EDITOR or core.editor, or give the message with -m",
            )
        return editor

    def launch_editor(self, path: str) -> None:
        """Let the user edit ``path`` (as ``git commit`` does); an editor that fails aborts."""
        editor = self.editor()
        if editor == ":":
            return
        proc = subprocess.Popen(
            ["sh", "-c", editor + ' "$@"', editor, path], cwd=self.top, pass_fds=inherited_fds()
        )
        with _interrupts_to_the_editor():
            code = proc.wait()
        if code != 0:
            raise PatchstackError(
                f"the editor '{editor}' exited with status {code}", "nothing was changed"
            )

    def select_hunks(
        self,
        index: TempIndex,
        args: Sequence[str],
        paths: Sequence[str],
        answers: bytes | None,
    ) -> str:
        """Run git's hunk selector (``add -p`` or ``reset -p TREE``) on ``index`` for
        ``paths``; what it printed, when it read ``answers``."""
        env = sealed_env(index.env)
        argv = [git_program(env), *args, "--", *paths]  # literal pathspecs: see `process`
        if answers is None:
            proc = subprocess.run(argv, cwd=self.top, env=env, pass_fds=inherited_fds())
            out = ""
        else:
            proc = subprocess.run(
                argv,
                cwd=self.top,
                env=env,
                input=answers,
                capture_output=True,
                pass_fds=inherited_fds(),
            )
            out = (proc.stdout + proc.stderr).decode("utf-8", "replace")
        if proc.returncode != 0:
            raise PatchstackError(
                f"git {args[0]} -p failed (exit status {proc.returncode})" + _tail(out),
                "nothing was changed",
            )
        return out


@contextlib.contextmanager
def _interrupts_to_the_editor() -> Iterator[None]:
    """Ctrl-C and Ctrl-\\ belong to the editor while it runs (as git does it): patchstack
    ignores them meanwhile (main thread only; the editor, started before, keeps its own)."""
    try:
        old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGQUIT)}
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _tail(out: str) -> str:
    last = [ln for ln in out.strip().splitlines() if ln.strip()][-1:]
    return f": {last[0]}" if last else ""


def user_git(*args: str) -> subprocess.CompletedProcess[bytes] | None:
    """git run with the caller's environment and configuration, from the current folder (a
    read of the user's preferences); None when git cannot run."""
    try:
        return subprocess.run(["git", *args], capture_output=True, stdin=subprocess.DEVNULL)
    except OSError:
        return None


def pager_command() -> str | None:
    """The pager git would use (``git var GIT_PAGER``); None for none (``cat`` or empty)."""
    proc = user_git("var", "GIT_PAGER")
    if proc is None or proc.returncode != 0:
        return None
    found = proc.stdout.decode("utf-8", "surrogateescape").strip()
    return None if found in ("", "cat") else found


def color_setting(git: GitBase | None = None) -> str | None:
    """``color.patchstack``, else ``color.ui``, as the user configured it (or None): from the
    configuration ``git`` read for the command where it is the user's here
    (`GitBase.user_config`), else from a ``git config`` of the caller's own."""
    listed = git.user_config() if git is not None else None
    if listed is None:
        proc = user_git("config", "-z", "--get-regexp", r"^color\.(patchstack|ui)$")
        if proc is None or proc.returncode != 0:
            return None
        listed = []
        for entry in proc.stdout.decode("utf-8", "replace").split("\0")[:-1]:
            key, nl, value = entry.partition("\n")
            listed.append((key.lower(), value if nl else None))
    found: dict[str, str] = {}
    for name, said in listed:
        if name in ("color.patchstack", "color.ui"):
            found[name] = "true" if said is None else said
    return found.get("color.patchstack", found.get("color.ui"))


def start_pager(command: str) -> subprocess.Popen[bytes]:
    """The pager, reading its standard input from a pipe; it writes to the terminal and reads
    the keyboard from it (the same session and process group as patchstack)."""
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    env["GIT_PAGER_IN_USE"] = "true"
    return subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE, env=env)
