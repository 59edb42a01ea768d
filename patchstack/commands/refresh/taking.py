"""What ``refresh --continue`` takes from the work tree: what the user changed since the stop.

The rule is git's (``git add -A && git rebase --continue``), with one exception, for untracked
files:

- the files the stopped patch's merge wrote (its conflicted files and the others it changed)
  are taken as the work tree holds them, as before;
- every other tracked file (in HEAD or in the index) the user changed since the stop is taken
  too: the edit ported into the file upstream moved the code to, a deleted file, a file the
  user ``git add``-ed;
- a file the user already had uncommitted when the refresh stopped, and has not touched since,
  is the user's own and stays so (`at_stop` fingerprints them at the stop);
- an untracked file that was not there at the stop is not taken and not left silently either:
  ``--continue`` refuses, naming it. It may be a file the patch should create, or a merge
  tool's ``*.orig``, a log, a scratch copy; git's ``add -A`` would commit all of those into
  the patch (and its recorded resolution, which travels with the series), so the user says
  which: ``git add`` it to take it, or delete it (or ignore it) to leave it out.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Sequence

from ...checkout import Checkout
from ...errors import RefusedError
from ...journal.blobs import inside, mode_of
from ...journal.oplog import current_refresh
from ...journal.snapshot import Scan, Snapshot, take_snapshot
from ...model.ids import Oid

OFF = "PATCHSTACK_NO_SCANNED_AT_STOP"  # set: `at_stop` asks `git status` of its own
STAT_DIRTY_MAX = 100  # files whose stat data differs, hashed again at most (else: status)


def fingerprints(ws: Checkout, paths: Iterable[str]) -> dict[str, str]:
    """path -> what it holds: a regular file's blob id (its bytes, no filters), ``-`` when
    missing, a link's target, or the kind of anything else."""
    found: dict[str, str] = {}
    files: list[tuple[str, str]] = []
    for path in paths:
        full = os.path.join(ws.git.top, path)
        try:
            st = os.lstat(full)
        except (FileNotFoundError, NotADirectoryError):
            found[path] = "-"
            continue
        if stat.S_ISREG(st.st_mode):
            files.append((path, mode_of(st)))
        elif stat.S_ISLNK(st.st_mode):
            found[path] = "link " + os.readlink(full)
        else:
            found[path] = f"kind {stat.S_IFMT(st.st_mode)}"
    oids = ws.git.hash_files([os.path.join(ws.git.top, p) for p, _m in files])
    for (path, mode), oid in zip(files, oids, strict=True):
        found[path] = f"{mode} {oid}"
    return found


def at_stop(ws: Checkout, moved: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(path, fingerprint) of what the work tree holds uncommitted, other than ``moved`` (what
    the stop is about to write): the user's own, which ``--continue`` leaves alone."""
    dirty = ws.git.dirty(exclude=ws.in_tree)
    skip = set(moved)
    paths = [p for p in (*dirty.modified, *dirty.untracked) if p not in skip]
    return tuple(sorted(fingerprints(ws, paths).items()))


def before_stop(
    ws: Checkout, first: bool, head: Oid, moved: Iterable[str]
) -> tuple[Snapshot | None, tuple[tuple[str, str], ...]]:
    """(the publish's snapshot of the state before the stop, taken here, or None for the
    publish to take; `at_stop`, read off it where `scanned_at_stop` can). ``first``: the
    refresh's first stop, whose snapshot is taken here always (--abort goes back to it)."""
    scan: list[Scan] = []
    snap = None
    if first:
        snap = take_snapshot(ws, scanned=scan)
    elif not os.environ.get(OFF):
        ws.progress.step("saving the state before")
        snap = take_snapshot(ws, refresh=current_refresh(ws.git), scanned=scan)
    found = None if snap is None else scanned_at_stop(ws, snap, scan, ws.git.tree_of(head), moved)
    return snap, found if found is not None else at_stop(ws, moved)


def scanned_at_stop(
    ws: Checkout, snap: Snapshot, scan: Sequence[Scan], head_tree: Oid, moved: Iterable[str]
) -> tuple[tuple[str, str], ...] | None:
    """`at_stop` read off the publish's snapshot of the work tree, taken now (``scan``: what
    its scan found), not a ``git status`` of its own: the same paths, each fingerprinted the
    same way. Those ``status`` names are the files the index changes from HEAD's tree
    (``head_tree``), the untracked ones, and the tracked files whose stat data differs whose
    contents, as ``git add`` stages them, are not the index's (`Git.tree_with_files`); None
    where that cannot be shown: unmerged entries, a submodule or nested repository in the
    scan, an untracked file the snapshot left out, staging that is not the file's bytes;
    and where more than `STAT_DIRTY_MAX` files' stat data differs from the index's."""
    if os.environ.get(OFF) or snap.index is None or snap.left_out or len(scan) != 1:
        return None
    stat_dirty, untracked = scan[0]
    if any(m == "160000" for m, _p in stat_dirty) or any(p.endswith("/") for p in untracked):
        return None
    git, skip = ws.git, set(moved)
    mine = [p for p in dict.fromkeys(p for _m, p in stat_dirty) if p not in skip]
    mine = [p for p in mine if not inside(p, ws.in_tree)]
    modified = []
    if len(mine) > STAT_DIRTY_MAX:  # (a copied work tree): status refreshes the index
        return None
    if mine:
        made = git.tree_with_files(snap.index, mine)
        if made is None:
            return None
        modified = git.changed_paths(snap.index, made)
    staged = [p for p in git.changed_paths(head_tree, snap.index) if not inside(p, ws.in_tree)]
    paths = [p for p in dict.fromkeys([*staged, *modified, *untracked]) if p not in skip]
    return tuple(sorted(fingerprints(ws, paths).items()))


def taken(
    ws: Checkout, touched: Sequence[str], before: Sequence[tuple[str, str]], command: str
) -> tuple[str, ...]:
    """The paths ``--continue`` takes: ``touched`` (what the stopped merge wrote) and every
    tracked file changed since the stop (``before``: `at_stop`); refused, naming them, while
    untracked files that were not there at the stop are in the work tree."""
    dirty = ws.git.dirty(exclude=ws.in_tree)
    was = dict(before)
    mine = set(touched)
    new = sorted(p for p in dirty.untracked if p not in mine and p not in was)
    if new:
        shown = ", ".join(new[:10]) + (f" and {len(new) - 10} more" if len(new) > 10 else "")
        raise RefusedError(
            f"untracked file(s) not there when the {command.split()[-1]} stopped: {shown}",
            "'git add' those the patch should hold, delete (or ignore) the others, then run"
            f" '{command} --continue' again; nothing was changed",
        )
    changed = [p for p in dirty.modified if p not in mine]
    now = fingerprints(ws, [p for p in changed if p in was])
    return (*touched, *(p for p in changed if p not in was or now[p] != was[p]))
