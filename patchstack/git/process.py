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
  (stronger than any configuration file): no colour, no signatures or mailmap in logs, UTF-8
  log output, unquoted paths (listings use ``-z`` anyway), diffs with git's ``a/`` and ``b/``;
  for a command that only reads, no hook (`quiet_hooks`). Run as ``git -c KEY=VALUE
  patchstack`` (git passes ``-c`` on in ``GIT_CONFIG_PARAMETERS``, which it reads after
  ``GIT_CONFIG_COUNT``), the pinned entries go at the end of ``GIT_CONFIG_PARAMETERS``
  instead, so that no ``-c`` overrides them either;
- ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE`` and ``GIT_PREFIX`` of the caller are
  dropped: patchstack finds the repository itself and names its index explicitly.

A git process that fails is a `GitFailure` naming the command and git's message, never an empty
result, unless the caller asks for the exit status (``check=False``) because failure is an
expected answer ("is this an ancestor?").
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
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
    # what a diff of `log -p` looks like to the readers of one (`history`): ``a/``, ``b/``
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.srcPrefix", "a/"),
    ("diff.dstPrefix", "b/"),
    ("diff.interHunkContext", "0"),  # -U0 hunks stay apart
    ("log.showRoot", "true"),  # a root commit's lines are its own
)

# Set for a command that only reads: no repository hook fires for its git processes.
_QUIET = {"hooks": False}


def quiet_hooks(on: bool) -> None:
    """Whether the git processes from now on fire no hook (``core.hooksPath=/dev/null``): a
    command that only reads (``status``, ``check``, ``review``) must not run the repository's
    ``reference-transaction`` or ``post-index-change`` as a side effect of its bookkeeping."""
    _QUIET["hooks"] = on


def pinned() -> tuple[tuple[str, str], ...]:
    """The configuration every git process started now is given, after the caller's own
    ``GIT_CONFIG_COUNT`` entries, or after ``git -c``'s (``GIT_CONFIG_PARAMETERS``, which git
    reads last) when there are any."""
    return PINNED_CONFIG + ((("core.hooksPath", os.devnull),) if _QUIET["hooks"] else ())


DROPPED = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY")


# The sealed environment made last, and the caller's it was made from (``os.environ``'s
# encoded variables, compared as they are: a dict comparison, where decoding and sealing them
# anew took 66 us at each git process). ``PATCHSTACK_NO_ENV_MEMO=1``: made anew each time.
_MEMO: list[tuple[dict[bytes, bytes], bool, dict[str, str]]] = []


def sealed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every git process (the caller's, sealed as described above)."""
    data = getattr(os.environ, "_data", None)
    quiet = _QUIET["hooks"]
    if not isinstance(data, dict) or "PATCHSTACK_NO_ENV_MEMO" in os.environ:
        env = _sealed()
    elif _MEMO and _MEMO[0][1] == quiet and _MEMO[0][0] == data:
        env = dict(_MEMO[0][2])
    else:
        env = _sealed()
        _MEMO[:] = [(dict(data), quiet, dict(env))]
    if extra:
        env.update(extra)
    return env


def _sealed() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(LC_ALL="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1")
    parameters = env.get("GIT_CONFIG_PARAMETERS", "")
    if parameters.strip():  # `git -c` (read last): the pinned entries last of all
        said = " ".join(f"{_sq(key)}={_sq(value)}" for key, value in pinned())
        env["GIT_CONFIG_PARAMETERS"] = f"{parameters} {said}"
    else:
        try:
            count = int(env.get("GIT_CONFIG_COUNT", "0"))
        except ValueError:
            count = 0
        for key, value in pinned():
            env[f"GIT_CONFIG_KEY_{count}"] = key
            env[f"GIT_CONFIG_VALUE_{count}"] = value
            count += 1
        env["GIT_CONFIG_COUNT"] = str(count)
    return env


def _sq(text: str) -> str:
    """``text`` quoted as git quotes a ``GIT_CONFIG_PARAMETERS`` word (``sq_quote``)."""
    return "'" + text.replace("'", "'\\''") + "'"


# What ``git rev-parse --local-env-vars`` lists (git 2.38 to 2.50), should git not answer.
_LOCAL_VARS = (
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_OBJECT_DIRECTORY",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_GRAFT_FILE",
    "GIT_INDEX_FILE",
    "GIT_NO_REPLACE_OBJECTS",
    "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_SHALLOW_FILE",
    "GIT_COMMON_DIR",
)


@functools.lru_cache(maxsize=1)
def local_env_vars() -> frozenset[str]:
    """The variables that tie a git process to one repository (``git rev-parse
    --local-env-vars``, which git itself clears for a command run in another repository)."""
    proc = run_git(["rev-parse", "--local-env-vars"], cwd="/", check=False)
    said = proc.stdout.decode("ascii", "replace").split() if proc.returncode == 0 else []
    return frozenset((*_LOCAL_VARS, *said))


def program_env(base: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a user's program (a probe, bisect's COMMAND): ``base`` without git's
    repository variables, so that one started from a hook (``GIT_INDEX_FILE``, ``GIT_DIR``)
    works in the scratch tree it runs in and never in the user's index or repository."""
    drop = local_env_vars()
    env = {k: v for k, v in base.items() if k not in drop}
    env.update(extra or {})
    return env


# The git that ``PATH`` names, looked up once a process for each ``PATH`` (and its absolute
# path started): a bare ``git`` is looked up at each start, an exec tried in every folder of
# ``PATH`` before git's (ten on the project's machine; 0.2 ms of CPU of the 2.4 a git process
# costs). ``PATCHSTACK_NO_GIT_LOOKUP_ONCE=1``: the bare name each time.
_GIT_AT: dict[str, str] = {}


def git_program(env: Mapping[str, str]) -> str:
    """The program a git process started with ``env`` runs: the ``git`` its ``PATH`` names,
    by its absolute path, as the exec of a bare ``git`` would find it; the bare name where
    ``PATH`` has a relative folder (found from the folder git runs in), none is found (the
    exec fails as before), or ``PATCHSTACK_NO_GIT_LOOKUP_ONCE`` is set."""
    path = env.get("PATH", os.defpath)
    found = _GIT_AT.get(path)
    if found is None:
        folders = path.split(os.pathsep)
        if all(os.path.isabs(f) for f in folders):
            found = shutil.which("git", path=path) or "git"
        else:
            found = "git"
        _GIT_AT[path] = found
    if found != "git" and os.environ.get("PATCHSTACK_NO_GIT_LOOKUP_ONCE") is not None:
        return "git"
    return found


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
    sealed = sealed_env(env)
    try:
        proc = subprocess.run(
            [git_program(sealed), *args],
            cwd=cwd,
            input=input,
            env=sealed,
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
    stdout: int | IO[bytes] = subprocess.PIPE,
) -> subprocess.Popen[bytes]:
    """A long-running git process (a stream or a batch), like every git run here in its own
    session and holding the repository lock; ``prefix`` runs it under another program
    (``stdbuf -o0``); ``stdout``: a file it writes to instead of a pipe (a walk in the
    background, which then never waits for a reader)."""
    sealed = sealed_env(env)
    return subprocess.Popen(
        [*prefix, git_program(sealed), *args],
        cwd=cwd,
        env=sealed,
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        start_new_session=True,
        pass_fds=inherited_fds(),
    )


# git's version, by the git found on ``PATH`` (and ``GIT_EXEC_PATH``): asked once a process.
_VERSIONS: dict[tuple[str, str], tuple[tuple[int, int], str]] = {}


def _found_git() -> tuple[str, str]:
    return os.environ.get("PATH", ""), os.environ.get("GIT_EXEC_PATH", "")


def _parsed(text: str) -> tuple[tuple[int, int], str]:
    m = re.search(r"(\d+)\.(\d+)", text)
    return ((int(m.group(1)), int(m.group(2))) if m else (0, 0)), text


def version() -> tuple[tuple[int, int], str]:
    """((major, minor), what ``git version`` prints): learnt from the first git process of the
    command (`version_env`), else asked with ``git version``."""
    found = _found_git()
    if found not in _VERSIONS:
        _VERSIONS[found] = _parsed(run_git(["version"]).stdout.decode("utf-8", "replace").strip())
    return _VERSIONS[found]


def version_env() -> dict[str, str]:
    """The environment of a git process that also tells git's version, when it is not known
    yet: git's trace2 event stream on its standard error (``GIT_TRACE2_EVENT=2``), whose first
    event names the version (git >= 2.22, as ``git version`` prints it); nothing when the
    caller traces git's events themselves."""
    if _found_git() in _VERSIONS or "GIT_TRACE2_EVENT" in os.environ:
        return {}
    return {"GIT_TRACE2_EVENT": "2"}


_EVENT = re.compile(rb'^\{"event":"(\w+)".*$\n?', re.M)


def learn_version(stderr: bytes) -> bytes:
    """``stderr`` of a git process run with `version_env`, its events taken out; the version
    its first event names is noted (``git version`` is asked where it named none)."""
    for m in _EVENT.finditer(stderr):
        if m.group(1) == b"version":
            with contextlib.suppress(ValueError, AttributeError):
                exe = json.loads(m.group(0))["exe"]
                if isinstance(exe, str) and exe:
                    _VERSIONS.setdefault(_found_git(), _parsed(f"git version {exe}"))
            break
    return _EVENT.sub(b"", stderr)


def check_version() -> None:
    found, text = version()
    if found < MIN_VERSION:
        raise PatchstackError(
            f"patchstack needs git >= {MIN_VERSION[0]}.{MIN_VERSION[1]}, found: {text}",
            "install a newer git (merge-tree --write-tree appeared in 2.38)",
        )
