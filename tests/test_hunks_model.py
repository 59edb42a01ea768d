"""The conflict hunk as a key (`commands.refresh.hunks`), normalised as git's rerere does:
labels dropped, the two sides sorted; cut from a merged file and put back byte for byte."""

from __future__ import annotations

from patchstack.commands.refresh.hunks import Hunk, apply, decompose, key_of, split

MERGED = (
    b"a\n"
    b"<<<<<<< 1f2e3d (ours)\nup\n||||||| base label\nold\n=======\nmine\n>>>>>>> 9a8b7c\n"
    b"b\n=======\nc\n"  # a heading's underline outside a hunk is text
    b"<<<<<<< x\nup 2\n||||||| y\nold 2\n=======\nmine 2\n>>>>>>> z\n"
)


def test_the_key_ignores_labels_and_which_side_is_ours() -> None:
    parts = split(MERGED)
    assert parts is not None
    first, second = (p for p in parts if isinstance(p, Hunk))
    assert (first.ours, first.base, first.theirs, first.line) == (b"up\n", b"old\n", b"mine\n", 2)
    relabelled = MERGED.replace(b"1f2e3d (ours)", b"HEAD").replace(b"9a8b7c", b"patch")
    again = split(relabelled)
    assert again is not None and [p.key for p in again if isinstance(p, Hunk)] == [
        first.key,
        second.key,
    ]
    assert key_of(b"up\n", b"old\n", b"mine\n") == key_of(b"mine\n", b"old\n", b"up\n")
    assert key_of(b"up\n", b"old\n", b"mine\n") != key_of(b"up\n", b"older\n", b"mine\n")


def test_a_resolution_is_cut_into_hunks_and_applied_back_exactly() -> None:
    parts = split(MERGED)
    assert parts is not None
    resolved = b"a\nup and mine\nb\n=======\nc\n\nboth 2\nlines\n"
    pieces = decompose(parts, resolved)
    assert pieces is not None
    assert [r for _h, r in pieces] == [b"up and mine\n", b"\nboth 2\nlines\n"]
    applied = apply(parts, {h.key: r for h, r in pieces})
    assert applied == (resolved, [2, 6])
    assert decompose(parts, resolved.replace(b"b\n", b"b changed\n")) is None  # text edited
    assert apply(parts, {pieces[0][0].key: b"x\n"}) is None  # a hunk without a record


def test_markers_that_do_not_read_as_git_writes_them_are_not_cut() -> None:
    assert split(b"a\n<<<<<<< x\nup\n=======\nmine\n>>>>>>> z\n") is None  # no base part
    assert split(MERGED.replace(b"=======\nmine\n", b"=======\n=======\nmine\n", 1)) is None
    assert split(b"no conflict\n") is None
