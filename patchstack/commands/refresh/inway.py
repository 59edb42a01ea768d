"""The uncommitted edits a refresh's move would refuse that are known before its replay: refused
then, with the move's own message (`moves.edits_in_the_way`), not after seconds of planning."""

from __future__ import annotations

import os

from ...checkout import Checkout
from ...git import DirtyState
from ...journal.moves import edits_in_the_way
from ...model.ids import Oid
from ...model.series import Series
from ...model.stack import Stack


def refuse_edits_early(
    ws: Checkout, series: Series, stack: Stack, head: Oid, new_base: Oid, dirty: DirtyState
) -> None:
    """Uncommitted edits the move to the refreshed tree would refuse, refused before the
    replay, as the move refuses them (`moves.edits_in_the_way`: the message, exit 2, nothing
    changed). Known before the replay only where no patch is involved: a file upstream
    changed (``stack.base`` to ``new_base``) that neither HEAD's commits above the stack's
    base nor any patch file of the series touches is the old base's in HEAD and
    ``new_base``'s after the refresh, so the move changes it; ``read-tree`` refuses an
    untracked file there, and a tracked one whose index entry is not the new version (an
    entry that is, it keeps; a file deleted from the work tree alone, it writes again; a
    submodule, it leaves: none is named here). Edits in a patch's files are in the way or
    not by what the replay makes: the move names those, after it."""
    git = ws.git
    asked = {
        p for p in (*dirty.modified, *dirty.untracked) if os.path.lexists(os.path.join(git.top, p))
    }
    if not asked:
        return
    changed = asked.intersection(git.changed_paths(stack.base, new_base))
    if changed:
        changed.difference_update(git.changed_paths(stack.base, head))
    for entry in series.entries if changed else ():
        changed.difference_update(ws.proven_bytes(entry)[1].paths)
    if not changed:
        return
    untracked = set(dirty.untracked)
    entries, _stat = git.index_entries(sorted(changed - untracked))
    at_new = git.ls_tree_paths(new_base, sorted(changed))
    gitlink = "160000"  # a submodule out of step with its entry: read-tree lets it be
    in_the_way = sorted(
        p
        for p in changed
        if p in untracked
        or (
            p in entries
            and entries[p] != at_new.get(p)
            and gitlink not in (entries[p][0], at_new.get(p, ("", ""))[0])
        )
    )
    if in_the_way:
        raise edits_in_the_way(in_the_way, foldable=False)
