"""Recorded resolutions: a conflict resolved once is settled the same way wherever the same
conflict meets again, on a colleague's clone too.

``refresh --continue`` records what the user made of a conflict, as a file of the series
folder (``resolutions/<key>``: a short header, a blank line, the bytes), so it travels with
the series. When the user changed only the conflict hunks, one record per hunk, keyed by the
hunk as git's rerere keys it (`hunks`): it survives upstream's edits elsewhere in the file.
Otherwise (the text around the hunks edited, a file deleted, another file changed with it),
and in the records of earlier versions: one per file, keyed by the path and the exact three
versions the merge saw (mode and blob id each, or absent), with every other file the user
changed, each keyed by its own versions and the conflict's (`group_of`). No key holds the
patch's name (a `rename` keeps it matching); the ``patch:`` field names it for
``resolutions`` and ``--forget``. `Resolutions.settle` is the one lookup, every replay's and
the engine's hook (``merged (recorded resolution)``); a record of other versions of a file,
or of some of its hunks only, leaves the conflict, with a note: never applied approximately.

The folder arrives through teammates' pull requests, so every record is checked when read
(`_parse`): a regular file (no link is followed, no FIFO or device opened), at most
``patchstack.snapshotMaxSize``, named by its own key, a resolved mode of 100644 or 100755, the
header's blob id that of the body. A bad one is refused naming it (exit 2) before anything is
written.

The records are written outside the journal, as git's rerere cache is: ``undo`` takes back a
refresh, not what it learned (``refresh --abort`` says which it keeps). ``patchstack
resolutions --forget`` removes them as one entry of the operation log, whose state before holds
them, so ``undo`` puts them back.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Sequence
from datetime import datetime, timezone

from ...checkout import Checkout
from ...errors import InputError
from ...files import write_atomic
from ...git import Git, MergeResult
from ...journal.snapshot import max_untracked
from ...model.ids import Oid
from . import hunks
from .hunks import BadRecord as BadRecord  # (re-exported: the one error of a record)
from .hunks import HunkRecord
from .records import FILE_MODES as FILE_MODES
from .records import FOLDER, MAGIC, entry_text, group_of, key_of, quoted
from .records import Record as Record
from .records import Recorded as Recorded
from .records import parse_record as parse_record
from .records import read_bounded as read_bounded
from .reuse import hunks_of, proposed_at_stop, settle_hunks


class Resolutions:
    """The series folder's recorded resolutions, read (and checked) when first wanted."""

    def __init__(self, ws: Checkout) -> None:
        self.ws = ws
        self.git: Git = ws.git
        self.folder = os.path.join(ws.series_dir, FOLDER)
        self._all: dict[str, Record] | None = None
        self.used: list[str] = []  # patches settled with a record
        self.reused: dict[str, tuple[str, ...]] = {}  # patch -> "path:line" of hunks settled
        # patch -> its merge with the hunks records settle resolved, and where (`Outcome`)
        self.partial: dict[str, tuple[Oid, tuple[str, ...]]] = {}
        self.stale: list[tuple[str, str]] = []  # (patch, path) with a record for other versions
        self.notes: list[tuple[str, str]] = []  # (patch, why a hunk's record was not applied)

    def may_settle(self) -> bool:
        """Whether a record may settle a conflict: something is where they are kept (read
        when `settle` asks; a record reads the merge's markers, labels and all)."""
        return os.path.lexists(self.folder)

    def all(self) -> dict[str, Record]:
        if self._all is None:
            found: dict[str, Record] = {}
            if self._folder_exists():
                limit = max_untracked(self.git)
                for name in sorted(os.listdir(self.folder)):
                    if not name.startswith("."):  # (a write's temporary file; never read)
                        record = self._parse(os.path.join(self.folder, name), limit)
                        found[record.key] = record
            self._all = found
        return self._all

    def _folder_exists(self) -> bool:
        try:
            st = os.lstat(self.folder)
        except (FileNotFoundError, NotADirectoryError):
            return False
        if not stat.S_ISDIR(st.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder"
            raise self._bad(self.folder, f"is {kind}; the recorded resolutions are a folder")
        return True

    def _bad(self, path: str, why: str, line: int | None = None) -> InputError:
        shown = self.ws.display(path)
        return InputError(
            shown,
            line,
            why,
            f"remove it (git rm -r -- {shown}, or rm) and resolve the conflict again;"
            " nothing was changed",
        )

    def _parse(self, path: str, limit: int) -> Record:
        try:
            return parse_record(read_bounded(path, limit), path, os.path.basename(path))
        except BadRecord as exc:
            raise self._bad(path, str(exc), exc.line) from None

    def record(
        self,
        patch: str,
        before: Oid,
        ours: Oid,
        after: Oid,
        merged: Oid,
        resolved: Oid,
        conflicted: Sequence[str],
        by: str = "",
    ) -> list[str]:
        """Record what ``resolved`` has at each conflicted path of ``patch`` (whose merge of
        ``before -> after`` onto ``ours`` gave ``merged``) and at every other path where it
        differs from ``merged``; the keys written. ``by``: the command that proposed it
        (``resolved by COMMAND``, machine-made), not a person. Nothing is recorded when a file
        is resolved to a link, a folder or a submodule (a record holds a file): it is asked
        again."""
        git = self.git
        others = [p for p in git.changed_paths(merged, resolved) if p not in conflicted]
        # A machine-made resolution stays whole-file: its record says who made it (`by`).
        # Otherwise each file that can be cut into its hunks' resolutions is recorded hunk by
        # hunk (as rerere records each file on its own), the rest whole, with the other files
        # the user changed: beside the hunks (`beside`), settled as one part.
        found, rest = ([], list(conflicted)) if by else hunks_of(git, merged, resolved, conflicted)
        if found and others and not rest:
            found, rest = [], list(conflicted)  # (the other files go with the whole conflict)
        written: list[str] = []
        if found:
            when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            os.makedirs(self.folder, exist_ok=True)
            for path, hunk, resolution in found:
                data = hunks.render(quoted(patch), quoted(path), hunk, resolution, when)
                write_atomic(os.path.join(self.folder, hunk.key), data)
            self._all = None
            written = [hunk.key for _p, hunk, _r in found]
            if not rest:
                return written
        return written + self._record_whole(
            patch, (before, ours, after, resolved), rest, others, by, beside=bool(found)
        )

    def _record_whole(
        self,
        patch: str,
        trees: tuple[Oid, Oid, Oid, Oid],
        conflicted: Sequence[str],
        others: Sequence[str],
        by: str,
        beside: bool,
    ) -> list[str]:
        """Records of whole files: each conflicted file by its three versions, the other files
        the user changed with the conflict's key (`group_of`); ``beside``: next to hunk
        records of the same conflict (a part that settles alone)."""
        git = self.git
        known = self.all()
        before, ours, after, resolved = trees
        paths = [*conflicted, *others]
        sides = [git.entries_at(t, paths) for t in (before, ours, after, resolved)]
        if any(s[path][0] not in FILE_MODES for s in sides[3:] for path in paths if path in s):
            return []
        keys = [key_of(p, [s.get(p) for s in sides[:3]]) for p in conflicted]
        group = group_of(keys)
        for old in known.values():
            if isinstance(old, Recorded) and old.group == group:
                os.unlink(old.file)  # an earlier resolution of the same conflict
        when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        for path in others:
            keys.append(key_of(path, [s.get(path) for s in sides[:3]], group=group))
        os.makedirs(self.folder, exist_ok=True)
        for i, (path, key) in enumerate(zip(paths, keys, strict=True)):
            base, mine, theirs, done = (s.get(path) for s in sides)
            body = git.read_blob(done[1]) if done else b""
            head = [
                MAGIC,
                f"patch: {quoted(patch)}",
                f"path: {quoted(path)}",
                f"base: {entry_text(base)}",
                f"ours: {entry_text(mine)}",
                f"theirs: {entry_text(theirs)}",
                f"resolved: {entry_text(done)}",
                *([f"with: {group}"] if i >= len(conflicted) else []),
                *([f"beside: {group}"] if beside and i < len(conflicted) else []),
                *([f"by: {quoted(by)}"] if by else []),
                f"recorded: {when}",
            ]
            text = "\n".join(head).encode("utf-8", "surrogateescape")
            write_atomic(os.path.join(self.folder, key), text + b"\n\n" + body)
        self._all = None
        return keys

    def settle(
        self, name: str, before: Oid, ours: Oid, after: Oid, merged: MergeResult
    ) -> Oid | None:
        """The merge ``merged`` of patch ``name`` settled by records of exactly these versions
        of every conflicted file (and of the files recorded with them), else of each conflict
        hunk of every conflicted file (`reuse`); or None. Every replay asks this one lookup."""
        if not self.all() or not merged.conflicted:
            return None
        stale: list[tuple[str, str]] = []
        found = self._settle_files(name, [before, ours, after], merged, stale)
        if found is None:
            hunked = [r for r in self.all().values() if isinstance(r, HunkRecord)]
            whole = self._beside(name, [before, ours, after], merged, stale)
            outcome = settle_hunks(self.ws, name, hunked, merged, whole)
            self.notes += [(name, n) for n in outcome.notes]
            found = outcome.tree
            if found is not None:
                self.reused[name] = outcome.hunks
            elif outcome.partial is not None:
                self.partial[name] = (outcome.partial, outcome.partial_hunks)
        if found is None:
            self.stale += stale
            return None
        self.used.append(name)
        return found

    def _settle_files(
        self, name: str, trees: list[Oid], merged: MergeResult, stale: list[tuple[str, str]]
    ) -> Oid | None:
        known = {k: r for k, r in self.all().items() if isinstance(r, Recorded)}
        git = self.git
        paths = list(merged.conflicted)
        sides = [git.entries_at(t, paths) for t in trees]
        changes: dict[str, tuple[str, str] | None] = {}
        keys = []
        for path in paths:
            key = key_of(path, [s.get(path) for s in sides])
            found = known.get(key)
            if found is None:
                if any(r.patch == name and r.path == path for r in known.values()):
                    stale.append((name, path))
                return None
            keys.append(key)
            changes[path] = (found.mode, git.write_blob(found.data)) if found.mode else None
        group = group_of(keys)
        also = [r for r in known.values() if r.group == group]
        there = [git.entries_at(t, [r.path for r in also]) for t in trees]
        for r in also:
            if key_of(r.path, [t.get(r.path) for t in there], group=group) != r.key:
                stale.append((name, r.path))
        if any(p == name for p, _ in stale):
            return None
        for r in also:
            changes[r.path] = (r.mode, git.write_blob(r.data)) if r.mode else None
        return git.edit_tree(merged.tree, changes)

    def _beside(
        self, name: str, trees: list[Oid], merged: MergeResult, stale: list[tuple[str, str]]
    ) -> dict[str, tuple[str, str] | None]:
        """The files a part recorded whole beside hunk records settles: every conflicted file
        of the part here in its exact versions (and the files recorded with it unchanged)."""
        records = [r for r in self.all().values() if isinstance(r, Recorded)]
        if not any(r.beside for r in records):
            return {}
        git = self.git
        paths = list(merged.conflicted)
        sides = [git.entries_at(t, paths) for t in trees]
        known = {r.key: r for r in records}
        parts: dict[str, list[Recorded]] = {}
        for path in paths:
            found = known.get(key_of(path, [s.get(path) for s in sides]))
            if found is not None and found.beside:
                parts.setdefault(found.beside, []).append(found)
        changes: dict[str, tuple[str, str] | None] = {}
        for group, have in parts.items():
            if group_of([r.key for r in have]) != group:
                continue  # a file of the part is not here in its versions
            also = [r for r in records if r.group == group]
            there = [git.entries_at(t, [r.path for r in also]) for t in trees]
            moved = [
                r.path
                for r in also
                if key_of(r.path, [t.get(r.path) for t in there], group=group) != r.key
            ]
            if moved:
                stale += [(name, p) for p in moved]
                continue
            for r in [*have, *also]:
                changes[r.path] = (r.mode, git.write_blob(r.data)) if r.mode else None
        return changes

    def at_stop(self, name: str, merged: MergeResult) -> tuple[Oid, tuple[str, ...]] | None:
        """What the stop at ``name`` shows: its merge with the hunks records settle (`partial`)
        and those the built-in rule proposes (`reuse.proposed_at_stop`, with a note) resolved,
        and "path:line" of each; or None: the merge as it is."""
        partial = self.partial.get(name)
        found = proposed_at_stop(self.git, merged, partial[0] if partial else merged.tree)
        if found is None:
            return partial
        self.notes += [(name, n) for n in found[2]]
        return found[0], (*(partial[1] if partial else ()), *found[1])

    def note(self, name: str) -> str:
        """What to say in a conflict report of ``name`` about records that did not match."""
        stale = sorted({path for patch, path in self.stale if patch == name})
        said = [
            "a recorded resolution of " + ", ".join(stale) + " is for other versions of the"
            " file (upstream or the patch changed since it was recorded); it was not applied"
        ]
        return "; ".join([*(said if stale else []), *(n for p, n in self.notes if p == name)])

    def renamed(self, old: str, new: str) -> None:
        """Say ``new`` in the records of patch ``old`` (the keys hold no name: they match
        either way; this keeps ``resolutions NAME`` and the notes right)."""
        for r in self.all().values():
            if r.patch == old:
                with open(r.file, "rb") as f:
                    data = f.read()
                head, _, body = data.partition(b"\n\n")
                was, now = (
                    f"patch: {quoted(n)}".encode("utf-8", "surrogateescape") for n in (old, new)
                )
                lines = [now if ln == was else ln for ln in head.split(b"\n")]
                write_atomic(r.file, b"\n".join(lines) + b"\n\n" + body)
        self._all = None

    def forget(self, patch: str | None = None) -> list[Record]:
        """Remove the records (of ``patch`` only, when given), one entry of the operation log
        (``undo`` puts them back: the state before holds them); those removed."""
        from ...journal.oplog import current_refresh
        from ...journal.snapshot import take_snapshot
        from ...transaction import FileWrite, Plan, publish

        gone = [r for r in self.all().values() if patch is None or r.patch == patch]
        if not gone:
            return []
        git = self.git
        head = git.head()
        assert head is not None
        names = [f"{FOLDER}/{os.path.basename(r.file)}" for r in gone]
        before = take_snapshot(self.ws, refresh=current_refresh(git), also=names)
        files = tuple(FileWrite(r.file, None) for r in gone)
        publish(self.ws, Plan("resolutions", head, head, files, before=before))
        with contextlib.suppress(OSError):
            os.rmdir(self.folder)  # (only when left empty)
        self._all = None
        return gone
