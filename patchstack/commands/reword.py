"""Rewriting applied commits without changing a tree, for the commands that edit the series'
metadata (edit, rename, tag, new --from-commit); `reorder` is the other way, for the commands
that move changes.

Each applied commit from the first one concerned upward is made again on its new parent with
its very tree; the ones concerned get a new message (trailers by `model.trailers`, the one
writer) or author, the others keep theirs, with their dates. One fast-import stream; the work
tree does not move.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import PatchstackError
from ..git import CommitMeta, Git
from ..model import message, trailers
from ..model.ids import Oid
from ..model.stack import Stack


@dataclass(frozen=True)
class Reword:
    """What changes in the commit of one applied patch: the name and tag its trailers say,
    its message (without our trailers; None: kept) and author (None: kept)."""

    name: str
    tag: str
    message: str | None = None
    author: str | None = None


def reword(git: Git, stack: Stack, changes: Mapping[str, Reword]) -> Oid:
    """The new HEAD: the applied commits from the first one in ``changes`` up, made again with
    the same trees (so the work tree does not move)."""
    first = next((i for i, ap in enumerate(stack.applied) if ap.name in changes), None)
    if first is None:
        return stack.head
    metas = git.commit_range(f"{stack.applied[first].parent}..{stack.head}")
    if [m.oid for m in metas] != [ap.commit for ap in stack.applied[first:]]:
        raise PatchstackError(
            "the applied commits are not a straight line", "see 'git log --graph'"
        )
    new: dict[Oid, tuple[str, str]] = {}
    for ap, meta in zip(stack.applied[first:], metas, strict=True):
        change = changes.get(ap.name)
        if change is not None:
            text = trailers.write(change.message or meta.message, change.name, change.tag)
            new[meta.oid] = (text, change.author or meta.author)
    return reparent(git, stack.applied[first].parent, metas, new)


def reparent(
    git: Git, parent: Oid, metas: Sequence[CommitMeta], new: Mapping[Oid, tuple[str, str]]
) -> Oid:
    """``metas`` (oldest first) made again on ``parent``, one on the other, with their trees,
    dates, and messages and authors (those in ``new``: (message, author)); the last one."""
    stream = git.fast_import()
    try:
        for meta in metas:
            text, author = new.get(meta.oid, (meta.message, meta.author))
            data = text.encode("utf-8", "surrogateescape")
            parent = stream.commit(parent, author, meta.date, data, [("040000", meta.tree, "")])
    finally:
        stream.close()
    return parent


def mail_of(git: Git, text: str, author: str, date: str) -> bytes:
    """The header and description ``format-patch`` writes for this message, author and date
    (they do not depend on the diff: made from a commit that creates one empty file)."""
    blob = git.write_blob(b"")
    tree = git.mktree([("100644", blob, "x")])
    commit = git.commit_tree(tree, [], text, author, date)
    return message.mail_part(git.format_patch(commit))
