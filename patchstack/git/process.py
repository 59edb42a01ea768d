"""Running git: one sealed environment, one way to start a process, failures as errors.

Every git process runs from the top of the work tree (from a subfolder, ``git apply`` silently
skips paths outside it), in a session of its own (a Ctrl-C at the terminal reaches patchstack
alone, which decides whether to finish or roll back, see `lock`), holding the repository lock
(its descriptor is inherited, so the lock outlives a killed patchstack until its last git child
is done), and with an environment that makes its output independent of the user:

- ``LC_ALL=C``: messages and dates are not translated;
- ``GIT_LITERAL_PATHSPECS=1``: a path is a path, never a glob or pathspec magic
  (``app/[slug]/page.tsx`` names one file);
- configuration that would change what plumbing prints is pinned with ``GIT_CONFIG_COUNT``
  (the strongest source git has, stronger than any configuration file): no colour, no
  signatures or mailmap in logs, UTF-8 log output, unquoted paths (listings
  use ``-z`` anyway);
- ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` and ``GIT_PREFIX`` of the caller are
  dropped: patchstack finds the repository itself and names its index explicitly.

A git process that fails is a `GitFailure` naming the command and git's message, never an empty
result, unless the caller asks for the exit status (``check=False``) because failure is an
expected answer ("is this an ancestor?").
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO

from ..errors import GitFailure, PatchstackError
from ..lock import inherited_fds

MIN_VERSION = (2, 38)

# Configuration pinned for every git process (see the module docstring).
PINNED_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.quotePath", "false"),
    ("color.ui", "false"),
    ("log.showSignature", "false"),
    ("log.mailmap", "false"),
    ("log.decorate", "false"),
    ("log.follow", "false"),
    ("i18n.logOutputEncoding", "UTF-8"),
    ("core.pager", "cat"),
    ("advice.detachedHead", "false"),
)

_DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY")


def sealed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process (the caller's, sealed as described above)."""
    env = {k: v for k, v in os.environ.items() if k not in _DROPPED}
    env.update(LC_ALL="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1")
    try:
        count = int(env.get("GIT_CONFIG_COUNT", "0"))
    except ValueError:
        count = 0
    for key, value in PINNED_CONFIG:
        env[f"GIT_CONFIG_KEY_{count}"] = key
        env[f"GIT_CONFIG_VALUE_{count}"] = value
        count += 1
    env["GIT_CONFIG_COUNT"] = str(count)
    if extra:
        env.update(extra)
    return env


def describe(args: Sequence[str]) -> str:
    """``git <verb>`` for messages (the first word that is not an option of git itself)."""
    words = list(args)
    while words and words[0] == "-c":
        words = words[2:]
    return "git " + (words[0] if words else "")


def run_git(
    args: Sequence[str],
    cwd: str | None = None,
    input: bytes | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            input=input,
            env=sealed_env(env),
            capture_output=True,
            start_new_session=True,  # a Ctrl-C at the terminal must not cut git short
            pass_fds=inherited_fds(),  # git holds the repository lock while it runs
        )
    except FileNotFoundError as exc:
        raise _not_found(exc, cwd) from exc
    if check and proc.returncode != 0:
        raise failure(args, proc.returncode, proc.stderr)
    return proc


def _not_found(exc: FileNotFoundError, cwd: str | None) -> PatchstackError:
    """git missing, or the folder it was to run in (the two raise the same error)."""
    if cwd is not None and not os.path.isdir(cwd):
        return PatchstackError(
            f"the folder {cwd!r} does not exist (git was to run there)",
            "run the command again from an existing folder; nothing was changed",
        )
    return PatchstackError("git is not installed", "install git >= 2.38")


def failure(args: Sequence[str], code: int, stderr: bytes) -> GitFailure:
    """The failure in one line: git's first ``fatal:`` or ``error:`` line (the cause), else its
    first line."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    cause = next((ln for ln in lines if ln.startswith(("fatal:", "error:"))), None)
    err = cause or (lines[0] if lines else f"exit status {code}")
    return GitFailure(f"{describe(args)} failed: {err}")


def spawn(
    args: Sequence[str],
    cwd: str,
    stdin: int | IO[bytes] | None = None,
    stderr: int | IO[bytes] | None = None,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """A long-running git process (a stream or a batch), like every git run here in its own
    session and holding the repository lock; ``prefix`` runs it under another program
    (``stdbuf -o0``)."""
    return subprocess.Popen(
        [*prefix, "git", *args],
        cwd=cwd,
        env=sealed_env(env),
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=stderr,
        start_new_session=True,
        pass_fds=inherited_fds(),
    )


def version() -> tuple[tuple[int, int], str]:
    """((major, minor), what ``git version`` printed): asked once per git found on ``PATH``."""
    return _version(os.environ.get("PATH", ""), os.environ.get("GIT_EXEC_PATH", ""))


@functools.lru_cache(maxsize=8)
def _version(path: str, exec_path: str) -> tuple[tuple[int, int], str]:
    out = run_git(["version"]).stdout.decode("utf-8", "replace").strip()
    m = re.search(r"(\d+)\.(\d+)", out)
    return ((int(m.group(1)), int(m.group(2))) if m else (0, 0)), out


def check_version() -> None:
    found, text = version()
    if found < MIN_VERSION:
        raise PatchstackError(
            f"patchstack needs git >= {MIN_VERSION[0]}.{MIN_VERSION[1]}, found: {text}",
            "install a newer git (merge-tree --write-tree appeared in 2.38)",
        )
