"""The three-way merge of one patch file, as the merge driver makes it: the header and
description (up to the ``---`` line) and the diff part (diffstat and diff) merged on their
own, so that a description edited on one side and the diff regenerated on the other (an
``edit`` here, a ``refresh`` there) merge cleanly. Where both sides changed one part, the part
is merged as text by the caller's merger (``git merge-file``); a diff part merged so must
still read as a patch, or the part is left a conflict whole. A conflict leaves git's markers
in the file, which every command refuses as an unresolved merge (`model.conflict`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InputError
from .message import mail_parts
from .patchfile import parse_patch

# (ours, base, theirs) -> (merged, number of conflict regions)
TextMerge = Callable[[bytes, bytes, bytes], tuple[bytes, int]]


@dataclass(frozen=True)
class PatchMerge:
    data: bytes
    conflicts: tuple[str, ...] = ()  # which parts conflict, in words

    @property
    def clean(self) -> bool:
        return not self.conflicts


def whole_conflict(ours: bytes, base: bytes, theirs: bytes, size: int = 7) -> bytes:
    """The three versions as one conflict region, diff3-style."""

    def ended(data: bytes) -> bytes:
        return data if not data or data.endswith(b"\n") else data + b"\n"

    return (
        b"<" * size
        + b" ours\n"
        + ended(ours)
        + b"|" * size
        + b" base\n"
        + ended(base)
        + b"=" * size
        + b"\n"
        + ended(theirs)
        + b">" * size
        + b" theirs\n"
    )


def merge_patch(
    base: bytes, ours: bytes, theirs: bytes, merge: TextMerge, path: str = "patch"
) -> PatchMerge:
    if ours == theirs or theirs == base:
        return PatchMerge(ours)
    if ours == base:
        return PatchMerge(theirs)
    (o_head, o_diff), (a_head, a_diff), (b_head, b_diff) = map(mail_parts, (base, ours, theirs))
    conflicts = []
    head, clashes = merge_description(o_head, a_head, b_head, merge)
    if clashes:
        conflicts.append("the description was changed on both sides")
    diff, clashes = _part(o_diff, a_diff, b_diff, merge)
    if clashes:
        conflicts.append("the diff was changed on both sides")
        diff = whole_conflict(a_diff, o_diff, b_diff)
    elif diff not in (a_diff, b_diff):  # merged as text: it must still be a patch
        try:
            parse_patch(head + diff, path)
        except InputError as exc:
            conflicts.append(f"the diffs of both sides merge as text into no patch ({exc})")
            diff = whole_conflict(a_diff, o_diff, b_diff)
    return PatchMerge(head + diff, tuple(conflicts))


def merge_description(
    base: bytes, ours: bytes, theirs: bytes, merge: TextMerge
) -> tuple[bytes, int]:
    """One part (the header and description, or the diff) merged: a side's change taken
    whole when the other kept the base, else merged as text (the number of clashes)."""
    return _part(base, ours, theirs, merge)


def _part(base: bytes, ours: bytes, theirs: bytes, merge: TextMerge) -> tuple[bytes, int]:
    if ours == theirs or theirs == base:
        return ours, 0
    if ours == base:
        return theirs, 0
    return merge(ours, base, theirs)
