"""Domain errors. Each carries a message, a hint for the user, and an exit status.

The CLI turns every `PatchstackError` into a message on stderr and its exit status, in one
place (`cli.main`). Exit statuses: 0 done, 1 conflict (or a check that found one), 2 bad input,
usage, or a refusal that changed nothing.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_CONFLICT = 1
EXIT_USAGE = 2


class PatchstackError(Exception):
    """Base class: a message, an optional hint, an exit status."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class InputError(PatchstackError):
    """Malformed input (series file, patch file, arguments): names the file and line."""

    def __init__(self, path: str, line: int | None, message: str, hint: str | None = None):
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {message}", hint)
        self.path = path
        self.line = line


class UnresolvedMerge(InputError):
    """A file of the series holds a merge's conflict markers (a ``git pull`` of the series'
    repository left them)."""

    def __init__(self, path: str, line: int, hint: str | None = None):
        super().__init__(path, line, "unresolved merge conflict", hint)
        self.message = f"unresolved merge conflict in {path}:{line}"
        self.args = (self.message,)


class RefusedError(PatchstackError):
    """The command would lose or overwrite something of the user's, so it changed nothing."""


class GitFailure(PatchstackError):
    """git itself failed in a way patchstack did not expect."""


class ConflictError(PatchstackError):
    """A patch could not be applied or merged; `report` says where and why."""

    exit_code = EXIT_CONFLICT

    def __init__(self, message: str, report: object, hint: str | None = None):
        super().__init__(message, hint)
        self.report = report


class EnvironmentFault(PatchstackError):
    """The machine refused: a full disk, a read-only file system, a permission."""


_FAULT_HINTS = {
    "ENOSPC": "free some space on that file system and run the command again",
    "EDQUOT": "free some space (a disk quota is full) and run the command again",
    "EROFS": "the file system is mounted read-only; remount it or work in a writable copy",
    "EACCES": "you may not write there: fix the permissions or run as the owner",
    "EPERM": "the system does not permit this there: fix the permissions or the attributes",
    "ENAMETOOLONG": "a file name is longer than the file system allows; shorten it",
    "EMFILE": "too many open files: raise the limit (ulimit -n)",
}


def environment_fault(exc: OSError) -> EnvironmentFault:
    """One line naming the cause and the file, and what to do."""
    import errno as errno_names

    name = errno_names.errorcode.get(exc.errno or 0, "")
    where = exc.filename if exc.filename is not None else ""
    message = f"{exc.strerror or exc}" + (f": {where}" if where else "")
    hint = _FAULT_HINTS.get(name, "the operating system refused; see the message")
    return EnvironmentFault(message, hint + "; nothing was changed")


def git_fault_hint(message: str) -> str | None:
    """A hint for a git failure that is the machine's, not the repository's."""
    lowered = message.lower()
    if "no space left on device" in lowered or "out of diskspace" in lowered:
        return _FAULT_HINTS["ENOSPC"] + "; nothing was changed"
    if "read-only file system" in lowered:
        return _FAULT_HINTS["EROFS"] + "; nothing was changed"
    if "permission denied" in lowered:
        return _FAULT_HINTS["EACCES"] + "; nothing was changed"
    return None
