"""``refresh --publish ff``: the refreshed fork published as a fast-forward of the branch
before the refresh, so that every consumer of the fork (a teammate, CI, a deployment) follows
it with ``git pull --ff-only``, across refreshes.

The refresh makes the new base plus the patch commits, as always; the branch then gets one
merge on top whose tree is exactly that refreshed fork, whose first parent is the new top of
the patches (so the stack reads on: first-parent history is the new base and the patches) and
whose second parent is the tip before the refresh (so that tip is an ancestor: a
fast-forward). `published` recognises such a merge on top of the patches; `state.read_stack`
reads the stack under it, so ``status``, ``series``, ``log``, ``pop`` and ``push`` work on a
branch published so (``pop`` and ``push`` move the branch off it, as on any branch; the next
``refresh --publish ff`` merges the tip it starts from).
"""

from __future__ import annotations

from ...git import Git
from ...model.ids import Oid
from ...model.stack import Stack, stack_from_history

FF = "ff"
WAYS = (FF,)


def published_head(git: Git, top: Oid, old_tip: Oid, new_base: str, ref: str | None) -> Oid:
    """The merge that publishes ``top`` (the refreshed fork) as a fast-forward of
    ``old_tip``; ``top`` itself when it already is one."""
    if top == old_tip or git.is_ancestor(old_tip, top):
        return top
    author, date = git.ident()
    onto = new_base[:12] + (f" ({ref})" if ref else "")
    message = (
        f"Publish the fork refreshed onto {onto}\n\n"
        f"The tree of {top}, the series on its new base; a merge of the tip before the\n"
        f"refresh, {old_tip}, so that 'git pull --ff-only' follows it.\n"
    )
    return git.commit_tree(git.tree_of(top), [top, old_tip], message, author, date)


def published(git: Git, stack: Stack) -> Oid | None:
    """The merge ``refresh --publish ff`` put on top of the applied patches, when HEAD is one:
    two parents, the first the top patch commit, and that commit's very tree; the second a
    tip that carried patches."""
    if len(stack.on_top) != 1 or not stack.applied or stack.on_top[0] != stack.head:
        return None
    info = next(git.iter_first_parent(stack.head))
    if len(info.parents) != 2 or info.parents[0] != stack.top or info.tree != stack.top_tree:
        return None
    # The tip before was the fork too (patches on top, maybe under an earlier such merge):
    # a merge of anything else is the user's, named as a commit on top.
    old_tip = info.parents[1]
    try:
        before = stack_from_history(old_tip, git.iter_first_parent(old_tip))
    except ValueError:
        return None
    return stack.head if before.applied else None
