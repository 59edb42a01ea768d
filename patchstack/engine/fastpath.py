"""The fast path: a file's hunks applied in Python to its preimage, proven by blob ids, and
consecutive patches committed in one fast-import stream.

This is not a replacement for ``git apply``: a patch file written
by patchstack carries full ``index <old>..<new>`` lines, so when the preimage blob is exactly
``<old>`` and the text the hunks produce hashes to ``<new>``, the result is proven to be the one
the patch was made with. Anything else (no full index line, a different preimage, a hash that
does not match, binary data, renames) is left to ``git apply`` by returning None.

Each hunk must match at its stated line, or at the nearest place up or down (as git allows an
offset); never with fuzz. The hash check makes a match at a wrong place harmless: the result
would not hash to the expected id.
"""

from __future__ import annotations

import email.utils
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..git import FastImport, Git, RawDiff
from ..git.fastimport import Change
from ..model import paths
from ..model.ids import ObjectFormat, Oid
from ..model.patchfile import FileDiff, Hunk
from .loaded import LoadedPatch, commit_message

if TYPE_CHECKING:
    from .chain import Engine

FAST_PATH = os.environ.get("PATCHSTACK_NO_FAST_PATH") is None


def _split(data: bytes) -> list[bytes]:
    """Lines with their newline; the last line may lack one."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = [ln + b"\n" for ln in lines]
    if last:
        out.append(last)
    return out


def _hunk_sides(hunk: Hunk) -> tuple[list[bytes], list[bytes]]:
    pre: list[bytes] = []
    post: list[bytes] = []
    prev_kind = " "
    for raw in hunk.lines:
        if raw.startswith("\\"):
            # "\ No newline at end of file" applies to the line just before it.
            for side, kinds in ((pre, " -"), (post, " +")):
                if side and prev_kind in kinds and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        prev_kind = raw[:1] or " "
        line = raw[1:].encode("utf-8", "surrogateescape") + b"\n"
        if prev_kind in " -":
            pre.append(line)
        if prev_kind in " +":
            post.append(line)
    return pre, post


def apply_hunks(old: bytes, hunks: Sequence[Hunk]) -> bytes | None:
    """The postimage, or None when a hunk's preimage is not found exactly."""
    lines = _split(old)
    out: list[bytes] = []
    pos = 0  # next unread line of ``lines``
    offset = 0
    for hunk in hunks:
        pre, post = _hunk_sides(hunk)
        want = hunk.old_start - 1 + offset if hunk.old_len else hunk.old_start + offset
        if not pre:
            at = max(want, pos)
            if at > len(lines):
                return None
        else:
            found = _find(lines, pre, max(want, pos), pos)
            if found is None:
                return None
            at = found
        out.extend(lines[pos:at])
        out.extend(post)
        pos = at + len(pre)
        offset = at - (hunk.old_start - 1 if hunk.old_len else hunk.old_start)
    out.extend(lines[pos:])
    return b"".join(out)


def _find(lines: list[bytes], pre: list[bytes], want: int, floor: int) -> int | None:
    n = len(pre)
    limit = len(lines) - n
    if limit < floor:
        return None
    want = min(max(want, floor), limit)  # a line number past the end starts at the end
    for delta in range(0, limit - floor + 1):
        for at in (want + delta, want - delta) if delta else (want,):
            if floor <= at <= limit and lines[at : at + n] == pre:
                return at
        if want + delta > limit and want - delta < floor:
            break
    return None


def proven_postimage(fd: FileDiff, old: bytes | None, fmt: ObjectFormat) -> bytes | None:
    """The new content of ``fd`` applied to ``old`` (None: absent), when the ids prove it."""
    if fd.binary or fd.renamed or fd.copied or not fd.old_id or not fd.new_id:
        return None
    if not (fmt.is_full(fd.old_id) and fmt.is_full(fd.new_id)):
        return None
    if fmt.is_null(fd.old_id):
        if old is not None:
            return None
        old = b""
    elif old is None or fmt.blob_id(old) != fd.old_id:
        return None
    new = apply_hunks(old, fd.hunks) if fd.hunks else old
    if new is None:
        return None
    if fmt.is_null(fd.new_id):
        return b"" if not new else None
    return new if fmt.blob_id(new) == fd.new_id else None


@dataclass
class Known:
    """path -> (mode, id) of a tree, for the ``covered`` paths (absent: no such path)."""

    entries: dict[str, tuple[str, str]]
    covered: frozenset[str]

    def update(self, raw: Sequence[RawDiff]) -> None:
        """Apply raw diff records (old mode, new mode, old id, new id, path)."""
        for _om, mode, _old, new, path in raw:
            if set(new) == {"0"}:
                self.entries.pop(path, None)
            else:
                self.entries[path] = (mode, new)
            self.covered = self.covered | {path}


class ProvenStream:
    """The fast path: consecutive patches as commits in one fast-import stream.

    The tree state is the start commit plus an overlay of the files patches changed; every file
    change is proven by its blob ids (`apply.proven_postimage`), so the commits are the very
    ones ``git apply`` plus ``commit-tree`` would make.
    """

    def __init__(self, git: Git, start: Oid, touched: set[str], known: Known | None = None) -> None:
        """``known``: what the caller already knows of ``start`` (see `Known`); the paths
        (and their folders) it does not cover are listed."""
        self.git = git
        wanted = touched | {d for p in touched for d in paths.leading_dirs(p)}
        if known is not None and wanted <= known.covered:
            self.base, self.covered = dict(known.entries), set(known.covered)
        else:
            self.base = git.ls_tree_paths(start, sorted(wanted)) if wanted else {}
            self.covered = wanted
        self.overlay: dict[str, tuple[str, str, bytes] | None] = {}
        self.stream = FastImport(git)

    def close(self) -> None:
        self.stream.close()

    def known(self) -> Known:
        """What this stream knows of the tree after its commits."""
        entries = dict(self.base)
        for path, entry in self.overlay.items():
            if entry is None:
                entries.pop(path, None)
            else:
                entries[path] = (entry[0], entry[1])
        return Known(entries, frozenset(self.covered))

    def _through_non_tree(
        self, path: str, staged: dict[str, tuple[str, str, bytes] | None]
    ) -> bool:
        modes: dict[str, str | None] = {}
        for d in paths.leading_dirs(path):
            cur = staged[d] if d in staged else self._current(d)
            modes[d] = cur[0] if cur else None
        return paths.through_problem(path, modes) is not None

    def _current(self, path: str) -> tuple[str, str, bytes | None] | None:
        if path in self.overlay:
            return self.overlay[path]
        found = self.base.get(path)
        return (found[0], found[1], None) if found else None

    def commit(self, parent: Oid, lp: LoadedPatch, engine: Engine) -> Oid | None:
        author, date = lp.patch.author, lp.patch.date
        if not author or not date:
            default_author, default_date = engine.default_author()
            author, date = author or default_author, date or default_date
        when = raw_date(date)
        if when is None or not re.fullmatch(r"[^<>\n]*[^<>\s] <[^<>\n]*>", author):
            return None
        changes: list[Change] = []
        staged: dict[str, tuple[str, str, bytes] | None] = {}
        for fd in lp.patch.files:
            if fd.renamed or fd.copied or fd.binary or (fd.old_path and fd.old_path != fd.path):
                return None
            path = fd.path
            if self._through_non_tree(path, staged):
                return None  # git apply's path, which refuses it with the file and line
            cur = staged[path] if path in staged else self._current(path)
            if fd.old_path is None:
                if cur is not None:
                    return None
                old = None
            else:
                if cur is None or cur[0] not in ("100644", "100755"):
                    return None
                if fd.old_mode and fd.old_mode != cur[0]:
                    return None
                old = cur[2] if cur[2] is not None else self.git.read_blob(cur[1])
            new = proven_postimage(fd, old, self.git.fmt)
            if new is None:
                return None
            if fd.new_path is None:
                changes.append(("D", path))
                staged[path] = None
                continue
            mode = fd.new_mode or (cur[0] if cur else None)
            if mode not in ("100644", "100755"):
                return None
            ref = self.stream.blob(new) if new != old else (cur[1] if cur else "")
            changes.append((mode, ref, path))
            staged[path] = (mode, fd.new_id or "", new)
        message = commit_message(lp).encode("utf-8", "surrogateescape")
        commit = self.stream.commit(parent, author, when, message, changes)
        self.overlay.update(staged)
        return commit


def raw_date(text: str) -> str | None:
    """A patch's Date header as git's raw "<epoch> <tz>", or None when unsure."""
    text = text.strip()
    if re.fullmatch(r"\d+ [+-]\d{4}", text):
        return text
    parsed = email.utils.parsedate_tz(text)
    if parsed is None or parsed[9] is None:
        return None
    offset = parsed[9]
    sign = "-" if offset < 0 else "+"
    hours, minutes = divmod(abs(offset) // 60, 60)
    return f"{email.utils.mktime_tz(parsed)} {sign}{hours:02d}{minutes:02d}"
