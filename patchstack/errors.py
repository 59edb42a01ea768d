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
