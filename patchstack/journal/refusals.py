"""The states in which a command that changes state is refused before it plans anything,
besides those the operation log shows itself (`oplog.interrupted_error`): a git operation
stopped half way in the work tree, and a refresh stopped at a conflict."""

from __future__ import annotations

import os

from ..checkout import Checkout
from ..errors import RefusedError
from .oplog import stopped_command

_NEXT_STEPS = {
    "merge": "finish it with 'git commit' (after resolving and 'git add'), or 'git merge --abort'",
    "rebase": "finish it with 'git rebase --continue', or 'git rebase --abort'",
    "cherry-pick": "finish it with 'git cherry-pick --continue', or 'git cherry-pick --abort'",
    "revert": "finish it with 'git revert --continue', or 'git revert --abort'",
    "am": "finish it with 'git am --continue', or 'git am --abort'",
    "bisect": "end it with 'git bisect reset'",
}


def foreign_error(ws: Checkout) -> RefusedError | None:
    """A git merge, rebase, cherry-pick, revert, am or bisect stopped half way: patchstack
    acts on nothing then (its HEAD, index and files are git's work in progress)."""
    found = ws.git.operation_in_progress()
    if found is None:
        return None
    op, path = found
    return RefusedError(
        f"a git {op} is in progress ({os.path.relpath(path, ws.git.top)})",
        _NEXT_STEPS[op] + ", then run the command again; nothing was changed",
    )


def refresh_error(ws: Checkout) -> RefusedError | None:
    """The refusal every other command meets while a refresh (or an ``import branch``) is
    stopped at a conflict."""
    if (command := stopped_command(ws.git)) is None:
        return None
    return RefusedError(
        f"{'an import' if 'import' in command else 'a refresh'} is stopped at a conflict",
        f"resolve the conflict markers and run '{command} --continue',"
        f" or run '{command} --abort' to go back to the state before it",
    )
