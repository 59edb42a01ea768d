"""The files where code upstream moved out of a patch's file can have gone (`relocate`):
every file of a tree the drift changed (old base -> that tree), and which of them hold a
line as a whole line.

Only the files holding a hunk's longest line are read, split into lines and indexed (the
others cannot hold the hunk), each kept by blob id. For the first patch relocated (a stop has
one) ``git grep`` looks (`git.grep`: one search of its tree for every hunk, nothing read into
Python; 0.5 s of git where reading the 61 MB of a weight-sync stop's candidates was 1-1.5 s);
for the later ones (``check``: the trees of many conflicts, mostly the same files, where one
grep a patch would read every tree again), every candidate is read once and each tree's are
put in one buffer (``\n`` + file + ``\n`` each), searched for each line.
"""

from __future__ import annotations

import bisect

from ..git import Git
from ..git.grep import holding_lines
from ..model.ids import Oid
from ..model.relocation import line_index

MAX_BYTES = 1 << 20  # a candidate file larger than this is not searched
FILE_MODES = ("100644", "100755")


class Candidates:
    """The candidate files of one command's trees (see the module docstring)."""

    def __init__(self, git: Git, old_base: str | None) -> None:
        self.git, self.old_base = git, old_base
        self._raw: dict[str, bytes | None] = {}  # None: not searched (binary, too large)
        self._lines: dict[str, list[str]] = {}
        self._index: dict[str, dict[str, list[int]]] = {}
        self._found: dict[str, dict[str, set[str]]] = {}  # tree -> line -> paths holding it
        self._grepped = False  # git grep is asked once a command
        self._buffers: dict[str, tuple[bytes, list[int], list[str]]] = {}
        # Conflicts of one replay are mostly placed on the same tree (the new base, with the
        # patches before them): its candidates are the same for all of them.
        self._of: dict[str, dict[str, str]] = {}

    def of(self, onto: Oid) -> dict[str, str]:
        """path -> blob of every text file of ``onto`` the drift changed (old base ->
        ``onto``): where moved code can have gone."""
        if onto not in self._of:
            self._of[onto] = self._read_candidates(onto)
        return self._of[onto]

    def _read_candidates(self, onto: Oid) -> dict[str, str]:
        """path -> blob of each file of ``onto`` the drift changed that is not too large to
        search (whether it is text is known once it is read: `holding`)."""
        assert self.old_base
        git = self.git
        changed = git.changed_paths(self.old_base, onto)
        listing = git.entries_at(onto, changed)
        blobs = {p: e[1] for p, e in listing.items() if e[0] in FILE_MODES}
        wanted = sorted({b for b in blobs.values() if b not in self._raw})
        sizes = git.object_sizes(wanted) if wanted else {}
        for b in wanted:
            if (sizes.get(b) or 0) > MAX_BYTES:
                self._raw[b] = None
        return {p: b for p, b in sorted(blobs.items()) if self._raw.get(b, b"") is not None}

    def holding(self, onto: Oid, block: list[str]) -> set[str]:
        """The blobs of ``onto``'s candidates that have the block's longest line as a whole
        line (or, for the last one, before an end with no newline), each a text file (read
        here): a superset of those that hold the block."""
        if not block:
            return set()
        files = self._of[onto]
        line = max(block, key=len)
        if not line or "\0" in line or "\n" in line:
            there = set(files.values())
        elif line in self._found.get(onto, {}):
            there = {files[p] for p in self._found[onto][line] if p in files}
        else:
            return self._in_buffer(onto, line)
        self._read([b for b in there if b not in self._raw])
        return {b for b in there if self._raw.get(b) is not None}

    def _in_buffer(self, onto: Oid, line: str) -> set[str]:
        """`holding` of a line git grep was not asked about: in one buffer of the tree's
        candidates."""
        if onto not in self._buffers:
            files = self._of[onto]
            self._read(sorted({b for b in files.values() if b not in self._raw}))
            order = sorted({b for b in files.values() if self._raw.get(b) is not None})
            starts, at = [], 0
            for b in order:
                starts.append(at)
                at += len(self._raw[b] or b"") + 2
            buffer = b"".join(b"\n" + (self._raw[b] or b"") + b"\n" for b in order)
            self._buffers[onto] = (buffer, starts, order)
        buffer, starts, order = self._buffers[onto]
        found, wanted = set(), b"\n" + line.encode("utf-8", "surrogateescape") + b"\n"
        at = buffer.find(wanted)
        while at >= 0:
            found.add(order[bisect.bisect_right(starts, at + 1) - 1])
            at = buffer.find(wanted, at + 1)
        return found

    def search(self, onto: Oid, lines: list[str]) -> None:
        """Find which files of ``onto`` hold each of ``lines`` (those git can search for), in
        one ``git grep``, the first time a search is asked for (a stop's one patch); later
        lines are looked for in the buffer (`_in_buffer`)."""
        if self._grepped:
            return
        self._grepped = True
        known = self._found.setdefault(onto, {})
        wanted = [ln for ln in dict.fromkeys(lines) if ln not in known]
        wanted = [ln for ln in wanted if ln and "\0" not in ln and "\n" not in ln]
        if wanted:
            known.update(holding_lines(self.git, onto, wanted))

    def _read(self, blobs: list[str]) -> None:
        """Keep the bytes of these blobs (None: binary, not searched)."""
        if blobs:
            for b, got in zip(blobs, self.git.read_objects(blobs), strict=True):
                self._raw[b] = got[1] if got and b"\0" not in got[1] else None

    def lines_of(self, blob: str) -> list[str]:
        if blob not in self._lines:
            self._lines[blob] = text_lines(self._raw[blob] or b"")
        return self._lines[blob]

    def index_of(self, blob: str) -> dict[str, list[int]]:
        if blob not in self._index:
            self._index[blob] = line_index(self.lines_of(blob))
        return self._index[blob]


def text_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    else:
        lines[-1] += "\0"  # no newline at its end: the last line matches no hunk's line
    return lines
