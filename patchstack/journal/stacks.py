"""The applied patches a snapshot records at a HEAD, read from history once per command: the
HEAD a pop leaves is in the stack read before it (`model.stack.names_below`)."""

from __future__ import annotations

import weakref

from ..git import Git
from ..model.ids import Oid
from ..model.stack import Stack, names_below, stack_from_history

_STACKS: weakref.WeakKeyDictionary[Git, list[Stack]] = weakref.WeakKeyDictionary()


def names_at(git: Git, head: Oid) -> tuple[str, ...]:
    known = _STACKS.setdefault(git, [])
    found = names_below(head, known)
    if found is not None:
        return found
    try:
        stack = stack_from_history(head, git.iter_first_parent(head))
    except ValueError:
        return ()
    known.append(stack)
    return stack.names


def remember(git: Git, stack: Stack) -> None:
    """A stack a command read from history at its head (``stack_from_history``): the
    snapshots that command takes do not walk it again."""
    _STACKS.setdefault(git, []).append(stack)


def known_at(git: Git, head: Oid) -> Stack | None:
    """The stack at ``head`` as a walk from it gives, when this command read one that holds
    it (its head, or an applied commit: the stack up to it, on the same base); None else."""
    for stack in _STACKS.get(git, []):
        if head == stack.head:
            return stack
        for i, ap in enumerate(stack.applied):
            if ap.commit == head:
                return Stack(head, stack.base, stack.base_tree, stack.applied[: i + 1])
    return None
