"""Recorded resolutions: a conflict resolved once is settled the same way wherever the very
same versions meet again, on a colleague's clone too.

``refresh --continue`` records, for each conflicted file of the patch it resumes after, what
the user made of it, keyed by the patch, the path and the exact three versions the merge saw
there (the patch's base, what was there, what the patch wants: mode and blob id each, or
absent). The record is a file of the series folder (``resolutions/<key>``: a short header, a
blank line, the resolved bytes), so it travels with the series in the team's repository.
`Resolutions.settle` is the replays' and the engine's hook: a conflict whose every conflicted
file has a record for exactly those versions is settled with them (``merged (recorded
resolution)``); one with a record for other versions of a file is left a conflict, with a
note saying the record no longer matches: never applied approximately.

The records are written outside the journal, as git's rerere cache is: ``undo`` takes back a
refresh, not what it learned; ``patchstack resolutions --forget`` removes them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from ...checkout import Checkout
from ...files import write_atomic
from ...git import Git, MergeResult
from ...model.ids import Oid

FOLDER = "resolutions"
MAGIC = "patchstack-resolution 1"
Entry = tuple[str, str] | None  # (mode, id), or absent


def _text(entry: Entry) -> str:
    return f"{entry[0]} {entry[1]}" if entry else "-"


def _entry(text: str) -> Entry:
    if text.strip() == "-":
        return None
    mode, oid = text.split()
    return mode, oid


def key_of(patch: str, path: str, base: Entry, ours: Entry, theirs: Entry) -> str:
    text = "\0".join((patch, path, _text(base), _text(ours), _text(theirs)))
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Recorded:
    key: str
    patch: str
    path: str
    base: Entry
    ours: Entry
    theirs: Entry
    mode: str | None  # the resolved file's mode; None: resolved by deleting it
    data: bytes
    recorded: str  # when (ISO 8601, UTC)
    file: str


def parse_record(data: bytes, file: str) -> Recorded | None:
    """The record a resolution file's bytes hold (``file`` names it), or None when they are
    not one. The one parser of the format: refresh's replays and ``review`` read with it."""
    try:
        head, _, body = data.partition(b"\n\n")
        lines = head.decode("utf-8", "surrogateescape").split("\n")
        if lines[0] != MAGIC:
            return None
        fields = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        resolved = _entry(fields["resolved"])
        base, ours, theirs = (_entry(fields[k]) for k in ("base", "ours", "theirs"))
        key = key_of(fields["patch"], fields["path"], base, ours, theirs)
        mode = resolved[0] if resolved else None
        recorded = fields.get("recorded", "")
        return Recorded(
            key, fields["patch"], fields["path"], base, ours, theirs, mode, body, recorded, file
        )
    except (KeyError, ValueError, IndexError):
        return None


class Resolutions:
    """The series folder's recorded resolutions, read when first wanted."""

    def __init__(self, ws: Checkout) -> None:
        self.ws = ws
        self.git: Git = ws.git
        self.folder = os.path.join(ws.series_dir, FOLDER)
        self._all: dict[str, Recorded] | None = None
        self.used: list[str] = []  # patches settled with a record
        self.stale: list[tuple[str, str]] = []  # (patch, path) with a record for other versions

    def all(self) -> dict[str, Recorded]:
        if self._all is None:
            self._all = {}
            if os.path.isdir(self.folder):
                for name in sorted(os.listdir(self.folder)):
                    found = self._read(os.path.join(self.folder, name))
                    if found is not None:
                        self._all[found.key] = found
        return self._all

    def _read(self, path: str) -> Recorded | None:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        return parse_record(data, path)

    def record(
        self,
        patch: str,
        before: Oid,
        ours: Oid,
        after: Oid,
        resolved: Oid,
        paths: Sequence[str],
    ) -> list[str]:
        """Record what ``resolved`` has at each conflicted path of ``patch`` (whose merge of
        ``before -> after`` onto ``ours`` conflicted there); the keys written."""
        git = self.git
        sides = [git.entries_at(t, list(paths)) for t in (before, ours, after, resolved)]
        when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        keys = []
        for path in paths:
            base, mine, theirs, done = (s.get(path) for s in sides)
            if done is not None and done[0] in ("040000", "160000"):
                continue  # a folder or a submodule: not a file's resolution
            key = key_of(patch, path, base, mine, theirs)
            body = git.read_blob(done[1]) if done else b""
            head = "\n".join(
                (
                    MAGIC,
                    f"patch: {patch}",
                    f"path: {path}",
                    f"base: {_text(base)}",
                    f"ours: {_text(mine)}",
                    f"theirs: {_text(theirs)}",
                    f"resolved: {_text(done)}",
                    f"recorded: {when}",
                )
            )
            os.makedirs(self.folder, exist_ok=True)
            write_atomic(os.path.join(self.folder, key), head.encode() + b"\n\n" + body)
            keys.append(key)
        self._all = None
        return keys

    def settle(
        self, name: str, before: Oid, ours: Oid, after: Oid, merged: MergeResult
    ) -> Oid | None:
        """The merge ``merged`` of patch ``name`` settled by records of exactly these
        versions of every conflicted file, or None."""
        known = self.all()
        if not known or not merged.conflicted:
            return None
        git = self.git
        paths = list(merged.conflicted)
        sides = [git.entries_at(t, paths) for t in (before, ours, after)]
        changes: dict[str, tuple[str, str] | None] = {}
        for path in paths:
            key = key_of(name, path, *(s.get(path) for s in sides))
            found = known.get(key)
            if found is None:
                if any(r.patch == name and r.path == path for r in known.values()):
                    self.stale.append((name, path))
                return None
            changes[path] = (found.mode, git.write_blob(found.data)) if found.mode else None
        self.used.append(name)
        return git.edit_tree(merged.tree, changes)

    def note(self, name: str) -> str:
        """What to say in a conflict report of ``name`` about records that did not match."""
        stale = sorted({path for patch, path in self.stale if patch == name})
        if not stale:
            return ""
        return (
            "a recorded resolution of " + ", ".join(stale) + " is for other versions of the"
            " file (upstream or the patch changed since it was recorded); it was not applied"
        )

    def forget(self, patch: str | None = None) -> list[Recorded]:
        """Remove the records (of ``patch`` only, when given); those removed."""
        gone = [r for r in self.all().values() if patch is None or r.patch == patch]
        for r in gone:
            os.unlink(r.file)
        if os.path.isdir(self.folder) and not os.listdir(self.folder):
            os.rmdir(self.folder)
        self._all = None
        return gone
