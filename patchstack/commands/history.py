"""``log NAME``: the history of one patch, from the operation log.

Every entry of the log holds the series directory before and after its command (as trees, see
`journal.snapshot`) and the applied stack. An entry belongs to a patch's history when it
changed the patch's file, its series line (tag, labels, place) or whether it is applied; each
says what changed. The patch is followed through renames (a file that left under one name and
came back under another with the same bytes), newest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..checkout import Checkout
from ..errors import PatchstackError
from ..git import Git
from ..journal import oplog as journal
from ..journal.snapshot import Snapshot
from ..model.patchfile import Patch, parse_patch
from ..model.selection import resolve_name
from ..model.series import Entry, Series, parse_series


@dataclass(frozen=True)
class Event:
    seq: int
    time: int
    command: str
    live: bool  # False when a later undo took it back
    changes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "time": self.time,
            "command": self.command,
            "undone": not self.live,
            "changes": list(self.changes),
        }


@dataclass(frozen=True)
class _Side:
    data: bytes | None  # the patch file
    entry: Entry | None  # its series line
    order: tuple[str, ...]  # the series' patches
    applied: bool


class _Reader:
    """Series directories of snapshots, read once each (by tree id)."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.series: dict[str, Series | None] = {}

    def series_of(self, snap: Snapshot) -> Series | None:
        if snap.series not in self.series:
            found = self.git.read_object(f"{snap.series}:series")
            try:
                text = found[1].decode("utf-8", "surrogateescape") if found else None
                self.series[snap.series] = parse_series(text) if text is not None else None
            except PatchstackError:
                self.series[snap.series] = None
        return self.series[snap.series]

    def side(self, snap: Snapshot, name: str) -> _Side:
        found = self.git.read_object(f"{snap.series}:{name}")
        series = self.series_of(snap)
        entry = series.entry(name) if series and name in series else None
        order = series.names if series else ()
        return _Side(found[1] if found else None, entry, order, name in snap.stack)

    def renamed_from(self, before: Snapshot, after: Snapshot, name: str) -> str | None:
        """The name the file ``name`` of ``after`` had in ``before``, when it was renamed."""
        new = self.git.read_object(f"{after.series}:{name}")
        if new is None:
            return None
        old_files = self.git.ls_tree(before.series)
        new_files = self.git.ls_tree(after.series)
        oid = new_files.get(name, ("", ""))[1]
        gone = [n for n, (_m, o) in old_files.items() if o == oid and n not in new_files]
        return gone[0] if gone else None


def resolve(ws: Checkout, text: str, log: list[journal.Entry], reader: _Reader) -> str:
    """A patch of the series, or one the log knows (a deleted patch still has a history)."""
    try:
        return resolve_name(ws.load_series(), text)
    except PatchstackError:
        for e in log:
            for snap in (e.after, e.before):
                series = reader.series_of(snap) if snap else None
                for candidate in (text, text + ".patch"):
                    if series and candidate in series:
                        return candidate
        raise


def history(ws: Checkout, text: str) -> tuple[str, list[Event]]:
    git = ws.git
    log = journal.entries(git)
    reader = _Reader(git)
    name = resolve(ws, text, log, reader)
    live = {e.seq for e in journal.effective(log)}
    events: list[Event] = []
    current = name
    for e in log:
        if e.after is None or e.status != "done":
            continue
        after = reader.side(e.after, current)
        before = reader.side(e.before, current)
        old_name = None
        if before.data is None and before.entry is None and after.data is not None:
            old_name = reader.renamed_from(e.before, e.after, current)
            if old_name is not None:
                before = reader.side(e.before, old_name)
        changes = _changes(before, after, old_name, current)
        changes += [n.split(": ", 1)[1] for n in e.notes if n.startswith(f"{current}: ")]
        if changes:
            events.append(Event(e.seq, e.time, e.command, e.seq in live, tuple(changes)))
        if old_name is not None:
            current = old_name
    return name, events


def _changes(before: _Side, after: _Side, old_name: str | None, name: str) -> list[str]:
    out: list[str] = []
    if old_name is not None:
        out.append(f"renamed from {old_name}")
    if before.entry is None and after.entry is not None and old_name is None:
        out.append(f"added to the series [{', '.join((after.entry.tag, *after.entry.labels))}]")
    elif before.entry is not None and after.entry is None:
        out.append("taken out of the series")
    elif before.entry is not None and after.entry is not None:
        b, a = before.entry, after.entry
        if b.tag != a.tag:
            out.append(f"tag {b.tag} -> {a.tag}")
        if b.labels != a.labels:
            gone = [x for x in b.labels if x not in a.labels]
            came = [x for x in a.labels if x not in b.labels]
            out.append("labels " + " ".join([*(f"+{x}" for x in came), *(f"-{x}" for x in gone)]))
        moved = _moved(before, after, old_name or name, name)
        if moved:
            out.append(moved)
    if before.data != after.data:
        out.append(_file_change(before.data, after.data, name))
    if before.applied != after.applied:
        out.append("applied" if after.applied else "popped")
    return out


def _moved(before: _Side, after: _Side, old: str, new: str) -> str | None:
    """Where the patch went, when it (and not the others around it) changed places among the
    patches of both series."""
    both = set(before.order) & set(after.order) - {old, new}
    was = [n for n in before.order if n in both or n == old]
    now = [n for n in after.order if n in both or n == new]
    i, j = was.index(old), now.index(new)
    others_kept = [n for n in was if n != old] == [n for n in now if n != new]
    if was[:i] == now[:j] or not others_kept:
        return None
    return f"moved after {now[j - 1]}" if j else "moved to the bottom (first)"


def _file_change(old: bytes | None, new: bytes | None, name: str) -> str:
    if old is None:
        return "file written" if new is not None else "file removed"
    if new is None:
        return "file removed"
    a, b = _parse(old, name), _parse(new, name)
    if a is None or b is None:
        return "file changed"
    what = []
    if (a.subject, a.description) != (b.subject, b.description):
        what.append("message")
    if a.author != b.author:
        what.append("author")
    if _lines(a) != _lines(b):
        what.append(f"diff (+{b.added} -{b.removed}, was +{a.added} -{a.removed})")
    elif [f.paths for f in a.files] != [f.paths for f in b.files] or not what:
        what.append("context or line numbers")
    return "changed: " + ", ".join(what)


def _parse(data: bytes, name: str) -> Patch | None:
    try:
        return parse_patch(data, name)
    except PatchstackError:
        return None


def _lines(patch: Patch) -> list[tuple[str, tuple[str, ...]]]:
    """What a patch adds and removes, file by file (context and line numbers left out)."""
    return sorted(
        (f.path, tuple(ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"))
        for f in patch.files
    )
