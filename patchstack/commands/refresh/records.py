"""The format of a recorded resolution of a whole file (``patchstack-resolution 1``), its key,
and the checked reading of any record (`parse_record`, `read_bounded`): what `resolutions`
writes and looks up, and what ``review`` reads. A record of one conflict hunk is `hunks`'."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from ...model.ids import SHA1, SHA256
from . import hunks
from .hunks import BadRecord, HunkRecord

FOLDER = "resolutions"
MAGIC = "patchstack-resolution 1"
Entry = tuple[str, str] | None  # (mode, id), or absent
FILE_MODES = ("100644", "100755")  # what a resolved file may be
TREE_MODES = ("100644", "100755", "120000", "160000", "040000")  # what a side may be


def entry_text(entry: Entry) -> str:
    return f"{entry[0]} {entry[1]}" if entry else "-"


def quoted(text: str) -> str:
    """A header value on one line: as it is, or a JSON string when it holds a line break, a
    control character or starts with a quote (a path may hold any byte but NUL)."""
    plain = text.isprintable() and not text.startswith('"') and text.strip() == text
    return text if plain else json.dumps(text)


def _unquoted(text: str) -> str:
    if not text.startswith('"'):
        return text
    value = json.loads(text)
    if not isinstance(value, str):
        raise ValueError(text)
    return value


def key_of(path: str, sides: Sequence[Entry], group: str = "") -> str:
    """A conflicted file's key from its three versions (base, ours, theirs); with ``group``
    (the conflict's, `group_of`), the key of another file changed with its resolution."""
    text = "\0".join((path, *map(entry_text, sides), group))
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def group_of(keys: Sequence[str]) -> str:
    """The conflict a set of conflicted files' keys makes."""
    return hashlib.sha1("\0".join(sorted(keys)).encode()).hexdigest()


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
    group: str = ""  # set on a file changed with a conflict's resolution (not conflicted)
    by: str = ""  # the command that proposed it (`refresh --resolver`); "": a person
    # Recorded beside hunk records of the same conflict: the key of its part recorded whole
    # (`group_of` its conflicted files' keys); it settles with that part alone.
    beside: str = ""


Record = Recorded | HunkRecord


def _entry(field: str, text: str, modes: Sequence[str], line: int | None = None) -> Entry:
    if text == "-":
        return None
    mode, _, oid = text.partition(" ")
    if mode not in modes:
        raise BadRecord(f"{field}: mode {mode[:20]!r} is not one of " + ", ".join(modes), line)
    if not (SHA1.is_full(oid) or SHA256.is_full(oid)):
        raise BadRecord(f"{field}: {oid[:80]!r} is not an object id", line)
    return mode, oid


def legacy_key_of(patch: str, path: str, sides: Sequence[Entry]) -> str:
    """The key records were named by before they followed a rename (the patch's name in it)."""
    text = "\0".join((patch, path, *map(entry_text, sides)))
    return hashlib.sha1(text.encode("utf-8", "surrogateescape")).hexdigest()


def parse_record(data: bytes, file: str, name: str | None = None) -> Record:
    """The record a resolution file's bytes hold, checked: its header's fields once each,
    modes a file may have, object ids, the body the blob its header names; with ``name``
    (the file's name in the folder), that it is named by its key (one file a key; a name of
    the earlier form, with the patch in the key, is read as the record it is). A record of
    one conflict hunk (`hunks`) is checked the same way: its parts' sizes those of its body,
    its name its hunk's key. The one parser of the format: refresh's replays and ``review``
    read with it. `BadRecord` says why bytes are not one."""
    head, sep, body = data.partition(b"\n\n")
    lines = head.decode("utf-8", "surrogateescape").split("\n")
    if not sep or lines[0] not in (MAGIC, hunks.MAGIC):
        raise BadRecord(f"not a recorded resolution (its first line is not '{MAGIC}')", 1)
    fields: dict[str, str] = {}
    at: dict[str, int] = {}  # the header line of each field
    for n, line in enumerate(lines[1:], start=2):
        field, colon, value = line.partition(": ")
        if not colon or field in fields:
            raise BadRecord(f"a header line is not 'field: value' once: {line[:60]!r}", n)
        fields[field], at[field] = value, n
    try:
        patch, where = _unquoted(fields.get("patch", "")), _unquoted(fields.get("path", ""))
    except ValueError:
        raise BadRecord("its patch or path is not a quoted string") from None
    if lines[0] == hunks.MAGIC:
        return hunks.record(fields, at, body, (patch, where, file), name)
    missing = [
        k for k in ("patch", "path", "base", "ours", "theirs", "resolved") if k not in fields
    ]
    if missing:
        raise BadRecord("no " + ", ".join(missing) + " in its header")
    sides = [_entry(k, fields[k], TREE_MODES, at[k]) for k in ("base", "ours", "theirs")]
    resolved = _entry("resolved", fields["resolved"], FILE_MODES, at["resolved"])
    if resolved is None and body:
        raise BadRecord("resolved by deleting the file, yet it holds bytes")
    if resolved is not None:
        fmt = SHA1 if len(resolved[1]) == 40 else SHA256
        if fmt.hash("blob", body) != resolved[1]:
            raise BadRecord(f"its bytes are not blob {resolved[1]}, which its header names")
    try:
        by = _unquoted(fields["by"]) if "by" in fields else ""
    except ValueError:
        raise BadRecord("its 'by' is not a quoted string", at["by"]) from None
    group = fields.get("with", "")
    if group and not SHA1.is_full(group):
        raise BadRecord(f"'with: {group[:60]}' is not a conflict's key", at["with"])
    beside = fields.get("beside", "")
    if beside and not SHA1.is_full(beside):
        raise BadRecord(f"'beside: {beside[:60]}' is not a conflict's key", at["beside"])
    key = key_of(where, sides, group=group)
    if name is not None and name != key and (group or name != legacy_key_of(patch, where, sides)):
        raise BadRecord(f"its name is not its key {key} (one file a key)")
    return Recorded(
        key,
        patch,
        where,
        sides[0],
        sides[1],
        sides[2],
        resolved[0] if resolved else None,
        body,
        fields.get("recorded", ""),
        file,
        group,
        by,
        beside,
    )


def read_bounded(path: str, limit: int) -> bytes:
    """The bytes of a regular file, at most ``limit`` of them; never through a link, never
    waiting on a FIFO (`BadRecord` says why not): how a record is read, by refresh and by
    ``review`` of a folder."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise BadRecord(f"cannot be read as a file ({exc.strerror})") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadRecord("is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        if len(data) > limit:
            raise BadRecord(f"is larger than {limit >> 20} MiB (patchstack.snapshotMaxSize)")
        return data
    finally:
        os.close(fd)
