"""The snapshot after a publish, derived from the snapshot before and what the publish
changed, instead of reading the whole work tree again (`journal.snapshot.take_snapshot`: a
scan of every file and six git processes); each function gives the very snapshot a scan
would take, or None where it cannot know it, and the caller takes one.
``PATCHSTACK_NO_SNAPSHOT_DERIVE=1`` always takes it (the differential tests compare them).

What a scan records of a path (`take_snapshot`): its index entry when git finds the file
clean by its stat data, else the file's bytes as they are (no filter), or nothing when it is
missing; an untracked file unless ignored; nothing of what is in the series directory but its
index entry. So a path neither the move nor the index changed keeps its record; a path the
move wrote has the new index entry (git wrote the file and its stat data); a path whose index
entry was set without stat data (`Git.set_index_entries`) is read as it is.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from ..checkout import Checkout
from ..git import Git
from ..git.objects import file_bytes, staged_mode
from ..model.ids import Oid
from .blobs import inside, max_untracked, nested
from .seriestree import series_tree
from .snapshot import Snapshot
from .stacks import names_at as _names

Entry = tuple[str, str]  # (mode, id)


def enabled() -> bool:
    """Whether the snapshot after a publish may be derived (read at each call)."""
    return not os.environ.get("PATCHSTACK_NO_SNAPSHOT_DERIVE")


def moved_snapshot(
    ws: Checkout, before: Snapshot, new_head: Oid, refresh: str | None
) -> Snapshot | None:
    """The snapshot after ``read-tree -m -u`` moved the index and work tree from the tree of
    ``before.head`` to the tree of ``new_head`` (and nothing else changed).

    With nothing staged (the index is HEAD's tree), the move writes exactly the paths that
    differ between the two trees, each to its new version, and refuses before writing anything
    when an edit or an untracked file is in the way (``git read-tree`` two-tree rules 1, 2,
    10, 20); so the index becomes the new tree and the work tree is ``before``'s with those
    paths put to the new tree's entries, and the untracked files a ``.gitignore`` it moved
    shows or hides (`_unignored`). None otherwise (something staged, or a path that turns from
    a file into a folder): the caller takes a snapshot."""
    git = ws.git
    old_tree, new_tree = git.trees_of([before.head, new_head])
    if before.index != old_tree:
        return None
    worktree: Oid | None = new_tree
    changes = {d[4]: _new_side(d) for d in git.changed_entries(old_tree, new_tree)}
    seen: dict[str, Entry | None] | None = {}
    if any(p.rpartition("/")[2] == ".gitignore" for p in changes):
        seen = _unignored(ws, before, changes)  # (the untracked files it shows or hides)
    if seen is None:
        return None
    if before.worktree != old_tree or seen:
        worktree = _edited(git, before, old_tree, (new_tree, changes), seen)
    if worktree is None:
        return None
    names = _names(git, new_head)
    return replace(
        before, head=new_head, index=new_tree, worktree=worktree, stack=names, refresh=refresh
    )


def overlaid_snapshot(
    ws: Checkout,
    before: Snapshot,
    new_head: Oid,
    moved: tuple[Oid, Collection[str], Oid | None],
    refresh: str | None,
    files: Sequence[object],
) -> Snapshot | None:
    """The snapshot after `transaction.Overlay` (``moved``: ``src``, ``overlaid``, ``shown``)
    moved a work tree that held ``src`` (the tree of ``before.head`` with ``overlaid`` as they
    are in the work tree: a stop's files) to ``shown`` (a stop's merge with markers; the new
    HEAD's tree when None), the index to the new HEAD's tree; ``files``: the series files the
    publish wrote.

    With nothing staged but ``overlaid``, the index is ``src`` once the publish set their
    entries, the move makes it ``shown``, and the files ``shown`` has that the new tree has not
    are set back to the new tree's entries without stat data (so a scan reads those files as
    they are). A file ``overlaid`` that the move leaves alone must hold ``src``'s version
    (else a filter or an edit made meanwhile: the caller scans). None also where a path turns
    from a file into a folder, is in the series directory or a submodule. A ``.gitignore``
    moved changes which untracked files are recorded (`_unignored`)."""
    git = ws.git
    src, overlaid, shown = moved
    old_tree, new_tree = git.trees_of([before.head, new_head])
    dst = shown or new_tree
    if before.index != old_tree or git.scratch is not None:
        return None
    lone = set(overlaid)
    if not set(git.changed_paths(old_tree, src)) <= lone:
        return None  # something else staged
    diffs, reset = git.changed_entries(src, dst), git.changed_entries(dst, new_tree)
    if any("160000" in d[:2] for d in (*diffs, *reset)):
        return None  # a submodule: its folder is no file
    written = {d[4]: _new_side(d) for d in diffs}
    unstatted = {d[4]: _new_side(d) for d in reset}
    lone -= written.keys() | unstatted.keys()
    paths = {*written, *unstatted, *lone}
    series_dir, left_out = ws.in_tree, set(before.left_out)
    if any(p in left_out or inside(p, series_dir) for p in paths):
        return None
    read = _read_files(ws, unstatted)
    if read is None:
        return None
    more: dict[str, Entry | None] = dict(read)  # what the work tree holds besides ``dst``
    if any(p.rpartition("/")[2] == ".gitignore" for p in paths):
        seen = _unignored(ws, before, written | more)
        if seen is None:
            return None
        more.update(seen)
    expected = git.ls_tree_paths(src, sorted(lone))
    for path in lone:
        if _as_it_is(git, path, expected.get(path)) is False:
            return None
        more[path] = expected.get(path)
    if any(e is not None and e[0] == "160000" for e in expected.values()):
        return None
    worktree = _edited(git, before, old_tree, (dst, written), more)
    if worktree is None:
        return None
    series, exists = series_tree(ws) if files else (Oid(before.series), before.series_exists)
    return replace(
        before,
        head=new_head,
        index=new_tree,
        worktree=worktree,
        series=series,
        series_exists=exists,
        stack=_names(git, new_head),
        refresh=refresh,
    )


def _unignored(
    ws: Checkout, before: Snapshot, changes: Mapping[str, Entry | None]
) -> dict[str, Entry | None] | None:
    """A publish that wrote a ``.gitignore`` changed which untracked files a scan records:
    those it lists now and did not before (an ignored file no longer ignored), stored as they
    are, and those it listed before and no longer does (now ignored: no record); the paths
    ``changes`` holds already are left to it. The untracked files before are the paths
    ``before``'s work tree has and its index has not. None where a scan would leave a file out
    for its size, or ``before`` left one out (then a scan says which are left out now)."""
    git = ws.git
    if before.left_out or before.index is None:
        return None
    was = {d[4] for d in git.changed_entries(before.index, before.worktree) if d[0] == "000000"}
    now = {p for p in git.untracked(ws.in_tree) if not p.endswith("/")}  # (a scan skips those)
    found: dict[str, Entry | None] = dict.fromkeys(was - now - changes.keys())
    for path in sorted(now - was - changes.keys()):
        full = os.path.join(git.top, path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if staged_mode(st) is None or st.st_size > max_untracked(git):
            return None
        found[path] = git.write_file(full, st)
    return found


def _new_side(d: tuple[str, str, str, str, str]) -> Entry | None:
    return None if d[1] == "000000" else (d[1], d[3])


def _read_files(ws: Checkout, index: Mapping[str, Entry | None]) -> dict[str, Entry | None] | None:
    """The files at these paths, whose index entries (``index``; None: untracked) have no
    stat data, as a scan records them: their bytes stored as they are, or nothing when missing
    or ignored; None for a folder, or an untracked file a scan leaves out for its size."""
    git = ws.git
    found: dict[str, Entry | None] = {}
    untracked: list[str] = []
    for path, entry in index.items():
        full = os.path.join(git.top, path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            found[path] = None
            continue
        if staged_mode(st) is None:
            return None
        if entry is None:
            if st.st_size > max_untracked(git):
                return None
            untracked.append(path)
        found[path] = git.write_file(full, st)
    for path in git.ignored(untracked) if untracked else ():
        found[path] = None
    return found


def _as_it_is(git: Git, path: str, entry: Entry | None) -> bool:
    """Whether the work tree's file at ``path`` is ``entry`` byte for byte (missing: None)."""
    full = os.path.join(git.top, path)
    try:
        st = os.lstat(full)
    except (FileNotFoundError, NotADirectoryError):
        return entry is None
    mode = staged_mode(st)
    if entry is None or mode is None:
        return False
    return (mode, git.fmt.blob_id(file_bytes(full, st))) == entry


def _edited(
    git: Git,
    before: Snapshot,
    old_tree: str,
    moved: tuple[str, Mapping[str, Entry | None]],
    more: Mapping[str, Entry | None],
) -> Oid | None:
    """``before``'s work tree (``old_tree`` and what the user had besides) once a move wrote
    the paths of ``moved`` (the tree it wrote, and the entries it wrote), and with ``more``:
    made from that tree and the few paths that differ from it (the user's own, ``more``), not
    from ``before``'s with the thousands of paths a move onto a new upstream writes. Made in
    process; None when a path is a folder of another (a file turned into a folder, or back:
    the caller scans), or while a scratch store would take the trees written (`git.scratch`:
    a snapshot's objects are kept)."""
    tree, written = moved
    own = {d[4]: _new_side(d) for d in git.changed_entries(old_tree, before.worktree)}
    edits = {p: e for p, e in own.items() if p not in written and p not in more} | dict(more)
    if git.scratch is not None or nested({*written, *edits}):
        return None
    return git.edit_tree(tree, edits)
