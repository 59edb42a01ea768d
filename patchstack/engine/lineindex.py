"""Where following the code looks (`engine.relocate`): for each candidate blob, the hashes of
its lines, kept across commands in the cache's section ``lines`` keyed by blob id, so that a
stop, a ``--skip`` and ``check`` on any tree read the contents of only the few files that
have a block's longest line, not every file the drift changed (the SGLang fork's first stop
read 4,130 blobs, 61 MB, at every command that met a deleted or split file).

A file's entry is its distinct lines (split on newlines only, as the lookup compares them)
hashed with CRC-32 and packed little-endian: a lookup is one search of the packed
hashes of a tree's candidates. A hash names a superset of the files that have the line (two
lines can share a hash; a match across two packed hashes is skipped by its alignment), and
the files named are then read and searched for the whole block, so a collision costs a read,
never an answer. An entry is checked when read (its scheme, its length, a CRC of the blob id
and the hashes); one that fails is ignored and made again, as a file not in the cache.
``plain`` (``PATCHSTACK_NO_LINE_INDEX=1``) reads every candidate and compares the lines
themselves, as before: the differential tests hold the proposals identical either way.

The candidates of one drift are also kept joined, in the section ``drift-lines`` keyed by the
drift (`Joined`): their ids, the hashes of each end to end, and which were not searched, in
one entry checked as a whole. A ``--skip`` reads that one value instead of an entry per file
(kernel-timers: 6,255, their checks, and a pass over every file's hashes for each stop's
lines) and looks each block's longest line up in it; only a file the entry lacks (one a
patch before the stop changed) is read from ``lines`` or learnt (``PATCHSTACK_NO_DRIFT_LINES=1``:
never kept, nor used). A line is looked up in that entry's hashes as they are (a search of
them all, its matches kept among the files asked): no file's hashes are copied out of it and
joined again for each tree asked (``PATCHSTACK_NO_WHOLE_JOINED=1``: copied, as before).
The hashes' format is `linehashes`'; a check's candidates are hashed lazily (`lazylines`).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..git import Git
from ..store import Store
from .linehashes import (
    SCHEME,
    Joined,
    blob_entry,
    drift_check,
    find,
    has,
    hashes_of,
    line_hashes,
    packed_of,
    read_entry,
    values,
)

if TYPE_CHECKING:
    from .lazylines import LazyLines
    from .lineprefetch import Prefetch

SECTION = "lines"
JOINED = "drift-lines"  # the candidates of a drift joined (`Joined`)
EACH_FROM = 16  # blocks expected: more, their lines are looked up in one pass over all hashes
NO_WHOLE = "PATCHSTACK_NO_WHOLE_JOINED"  # set: the kept entry's hashes taken file by file
# set: each file's hashes searched again for every pass of `_each` (each set of files asked,
# each new set of lines), and `engine.relocate` looks up one proposal's blocks at a time
NO_SHARED = "PATCHSTACK_NO_SHARED_LINES"
MAX_BYTES = 1 << 20  # a candidate file larger than this is not searched
_LAZY = b"\0"  # a lazy blob's `_packed` (never hashes: not a whole number of them)


class LineIndex:
    """The candidates' line hashes (or, ``plain``, their lines) of one command, by blob id;
    `content` of a blob, read once."""

    def __init__(
        self, git: Git, store: Store | None, plain: bool = False, drift: str | None = None
    ) -> None:
        self.git, self.store, self.plain = git, None if plain else store, plain
        self.drift = drift if self.store is not None else None  # the key of `Joined`
        self._packed: dict[str, bytes | None] = {}  # None: not searched (binary, too large)
        self._inside: set[str] = set()  # searched blobs whose hashes the kept `Joined` holds
        self.whole = os.environ.get(NO_WHOLE) is None  # (see `_one`)
        self._sets: dict[str, frozenset[bytes]] = {}  # plain: blob -> its lines
        self._raw: dict[str, bytes] = {}
        self._joined: dict[tuple[str, ...], tuple[bytes, list[int], list[str], set[str]]]
        self._joined = {}  # blobs -> those not in the kept entry joined, and those in it
        self._expected: set[bytes] = set()
        self._blocks = 0  # blocks expected
        self._found: dict[tuple[str, ...], dict[bytes, set[str]]] = {}
        self._missing: set[str] = set()  # blobs not in the repository
        self._looked: set[int] = set()  # the hashes of the lines expected as blobs were learnt
        self._hits: dict[str, set[int]] = {}  # blob -> which of those it has
        # shared: `_looked` grows with the lines asked, `_order` is it in the order added, and
        # a blob's `_hits` are of the first `_upto[blob]` of them (searched for the rest when
        # it is asked again): each file's hashes are searched once for each line, whichever
        # set of files (tree) asks it
        self.shared = os.environ.get(NO_SHARED) != "1"
        self._order: list[int] = []
        self._upto: dict[str, int] = {}
        self._since: dict[int, set[int]] = {}  # at -> `_order[at:]`, of this `_order`
        # shared: the blobs `_each` met that have each hash looked for (each one's `_hits`
        # entered once: a tree asked after another differs by a few files)
        self._holders: dict[int, set[str]] = {}
        self._entered: dict[str, set[int]] = {}  # blob -> its `_hits` entered in `_holders`
        self._kept: Joined | None | bool = False  # False: not read yet
        self.read: set[str] = set()  # the blobs whose contents this command read (for tests)
        self.prefetch: Prefetch | None = None  # blobs learnt as the replay merged
        self._lazy: LazyLines | None = None  # searched blobs a lazy prefetch read, unhashed

    def searched(self, blobs: Sequence[str]) -> set[str]:
        """Those of ``blobs`` that are searched (text, not too large), their entries made
        (reading them) for those neither this command nor the cache knows."""
        unknown = [b for b in dict.fromkeys(blobs) if not self._known(b)]
        kept = self._drift_entry()
        if kept is not None and self.whole:  # (their hashes read where the entry has them)
            self._inside.update(kept.at.keys() & unknown)
            self._packed.update(dict.fromkeys(kept.unsearched.intersection(unknown)))
            known = self._inside.union(self._packed)
            unknown = [b for b in unknown if b not in known]
        elif kept is not None:
            for b in unknown:
                if kept.covers(b):
                    self._packed[b] = kept.packed(b)
            unknown = [b for b in unknown if b not in self._packed]
        if self.store is not None:
            for b in unknown:
                valid, packed = read_entry(b, self.store.get(SECTION, b))
                if valid:
                    self._packed[b] = packed
            unknown = [b for b in unknown if b not in self._packed]
        if unknown:
            # in the caller's order: by path, neighbours are often deltas of one another, and
            # git's cat-file reads them 10-20 % faster than by id
            self._learn(unknown)
        if self.store is not None and self.drift is not None and not self._lazy:
            asked = set(blobs)
            lacking = len(asked - kept.at.keys() - kept.unsearched) if kept else len(asked)
            if lacking * 4 > len(asked):  # none kept, or for another set of files
                kept = self._keep_joined(blobs)
        if self.store is not None:  # (those kept joined are not kept again one by one)
            for b in unknown:
                if self._lazy and b in self._lazy:  # (no hashes to keep)
                    continue
                if b not in self._missing and (kept is None or not kept.covers(b)):
                    self.store.put(SECTION, b, blob_entry(b, self._packed[b]))
        return {b for b in blobs if b in self._inside or self._packed[b] is not None}

    def _known(self, blob: str) -> bool:
        return blob in self._packed or blob in self._inside

    def _hashes_of(self, blob: str) -> bytes | None:
        """A known blob's packed hashes (None: not searched); a lazy blob's made now."""
        if self._lazy and blob in self._lazy:
            self._packed[blob] = hashes_of(self._lazy.take(blob))
        if blob in self._packed:
            return self._packed[blob]
        assert isinstance(self._kept, Joined)
        return self._kept.packed(blob)

    def _drift_entry(self) -> Joined | None:
        if self._kept is False:
            found = None
            if self.store is not None and self.drift is not None:
                found = Joined.read(self.store.get(JOINED, self.drift))
            self._kept = found
        return self._kept if isinstance(self._kept, Joined) else None

    def _keep_joined(self, blobs: Sequence[str]) -> Joined:
        assert self.store is not None and self.drift is not None
        # the blobs taken from the entry this one replaces: their hashes copied out of it
        self._packed.update((b, self._hashes_of(b)) for b in self._inside)
        self._inside.clear()
        self._joined.clear()
        packed = {b: self._packed[b] for b in dict.fromkeys(blobs)}
        ids = [b for b, p in packed.items() if p is not None]
        offsets, at = [], 0
        for b in ids:
            offsets.append(at)
            at += len(packed[b] or b"")
        offsets.append(at)
        hashes = b"".join(packed[b] or b"" for b in ids)
        unsearched = {b for b, p in packed.items() if p is None} - self._missing
        self._kept = Joined(ids, offsets, hashes, unsearched)
        self.store.put(JOINED, self.drift, self._kept.entry())
        return self._kept

    def kept_candidates(self, old_tree: str, onto_tree: str) -> dict[str, str] | None:
        """The candidates (path -> blob) of the drift ``old_tree`` -> ``onto_tree`` as a
        command before found them (a skip's, its stop's), or None. One tree's a drift: the
        last asked (`check` asks of a tree a patch, a ``--skip`` mostly of its stop's)."""
        if self.store is None or self.drift is None:
            return None
        found = self.store.get(JOINED, f"candidates {self.drift}")
        if not (isinstance(found, list) and len(found) == 5 and found[0] == SCHEME):
            return None
        trees, paths, ids, check = found[1:]
        if trees != f"{old_tree} {onto_tree}":  # (another tree's)
            return None
        if not (
            isinstance(paths, str)
            and isinstance(ids, str)
            and check == drift_check(trees, paths, ids)
        ):
            return None
        names, blobs = paths.split("\0") if paths else [], ids.split()
        return dict(zip(names, blobs, strict=True)) if len(names) == len(blobs) else None

    def keep_candidates(self, old_tree: str, onto_tree: str, blobs: dict[str, str]) -> None:
        if self.store is not None and self.drift is not None:
            paths, ids = "\0".join(blobs), " ".join(blobs.values())
            trees = f"{old_tree} {onto_tree}"
            value = [SCHEME, trees, paths, ids, drift_check(trees, paths, ids)]
            self.store.put(JOINED, f"candidates {self.drift}", value)

    def _learn(self, blobs: list[str]) -> None:
        if self._blocks > EACH_FROM and self.shared:  # (`_each` will ask: its answers found
            # as the hashes are made, for the lines expected so far)
            self._look({zlib.crc32(ln) for ln in self._expected})
        elif self._blocks > EACH_FROM and not self._looked:  # (the same, for the lines
            # expected at the first learning only)
            self._looked = {zlib.crc32(ln) for ln in self._expected}
        blobs = self._adopt(blobs)
        sizes = self.git.object_sizes(blobs) if blobs else {}
        small = [b for b in blobs if (sizes.get(b) or 0) <= MAX_BYTES]
        for b in set(blobs) - set(small):
            self._packed[b] = None
        missing = set()
        for b, got in zip(small, self.git.each_object(small), strict=True):
            self.read.add(b)
            if got is None or b"\0" in got[1]:
                self._packed[b] = None
                missing |= {b} if got is None else set()
                continue
            self._raw[b] = got[1]
            if self.plain:
                self._sets[b] = frozenset(got[1].split(b"\n"))
            if self.plain:
                self._packed[b] = b""
                continue
            hashes = line_hashes(got[1])
            self._packed[b] = packed_of(hashes)
            if self._looked:
                self._hits[b], self._upto[b] = hashes & self._looked, len(self._order)
        self._missing |= missing

    def _adopt(self, blobs: list[str]) -> list[str]:
        """Those of ``blobs`` the prefetch did not learn; those it did taken as `_learn`
        would have learnt them (`lineprefetch`)."""
        if self.prefetch is None or self.plain:
            return blobs
        found, rest = self.prefetch.results(), []
        for b in blobs:
            got = found.get(b)
            if got is None:
                rest.append(b)
                continue
            self.prefetch.adopted += 1
            self._packed[b] = got.packed
            if got.packed is None and got.raw is not None:  # (lazy: searched, not hashed)
                if self._lazy is None:
                    from .lazylines import LazyLines

                    self._lazy = LazyLines()
                self._packed[b], self._raw[b] = _LAZY, got.raw
                self._lazy.add(b, got.raw)
            self.read |= {b} if got.read else set()
            self._missing |= {b} if got.missing else set()
            if got.raw is not None and got.packed is not None:
                self._raw[b] = got.raw
                if self._looked:
                    self._hits[b] = self._looked.intersection(values(got.packed))
                    self._upto[b] = len(self._order)
        return rest

    def keep_prefetched(self) -> None:
        """A prefetch no stop took from: what it learnt kept joined for the drift (where
        none is), for the ``--skip`` that meets the deleted file; and the deletion walk
        begun with it finished and kept (`Deleters.finish`)."""
        if self.prefetch is not None and self.prefetch.walks is not None:
            self.prefetch.walks.finish()
        if self.prefetch is None or self.prefetch.adopted or self.store is None:
            return
        if self.drift is None or self._drift_entry() is not None:
            return
        found = self.prefetch.results()
        blobs = [b for b in self.prefetch.blobs if b in found]
        for b in blobs:
            self._packed.setdefault(b, found[b].packed)
            if found[b].missing:
                self._missing.add(b)
        if blobs:
            self._keep_joined(blobs)

    def expect(self, blocks: Iterable[Sequence[str]]) -> None:
        """Blocks `block` will be asked about: their lines looked up together, in one pass
        over the candidates' hashes, at the first question (84 blocks on kernel-timers' first
        stop: a search of 6 MB of hashes for each line otherwise)."""
        blocks = list(blocks)
        self._blocks += len(blocks)
        lines = {ln for block in blocks for ln in block if "\0" not in ln and "\n" not in ln}
        self._expected.update(ln.encode("utf-8", "surrogateescape") for ln in lines)

    def block(self, blobs: Sequence[str], block: Sequence[str]) -> set[str]:
        """Those of ``blobs`` (searched ones, sorted) that have the block's longest line as a
        whole line (or, for the last one, before an end with no newline), and but ``plain``
        every other line of it too: a superset of those that hold the block (a file that
        holds it has each of its lines), so that only those are read and indexed (a block's
        longest line can be in hundreds of files: ``import triton.language as tl``)."""
        line = max(block, key=len)
        if "\0" in line or "\n" in line:
            return set(blobs)
        found = self.holding(blobs, line.encode("utf-8", "surrogateescape"))
        if self.plain:
            return found
        known = self._found.get(tuple(blobs), {})
        for other in sorted(set(block) - {line}, key=len, reverse=True):
            if not found:
                break
            if "\0" not in other and "\n" not in other:
                raw = other.encode("utf-8", "surrogateescape")
                if raw in known:
                    found &= known[raw]
                else:  # (those found so far only: the same files as a search of them all)
                    found = {b for b in found if has(self._hashes_of(b) or b"", raw)}
        return found

    def holding(self, blobs: Sequence[str], line: bytes) -> set[str]:
        """Those of ``blobs`` (searched ones, sorted) that may have ``line`` as a whole line:
        every one that has it (``plain``: exactly those)."""
        if self.plain:
            return {b for b in blobs if line in self._sets[b]}
        key = tuple(blobs)
        known = self._found.setdefault(key, {})
        if line not in known:
            # many blocks (a first stop's): all their lines in one pass over every hash; a
            # few (a skip's): a search of the hashes joined for this line
            wanted = {line, *(ln for ln in self._expected if ln not in known)}
            if self._lazy or (self._blocks > EACH_FROM and len(wanted) > 1):
                known.update(self._each(blobs, wanted))
            else:
                known[line] = self._one(key, line)
        return set(known[line])

    def _one(self, blobs: tuple[str, ...], line: bytes) -> set[str]:
        """`holding` of one line: a search of the candidates' hashes joined."""
        if blobs not in self._joined:
            inside = self._inside.intersection(blobs)  # (the kept entry's)
            rest = [b for b in blobs if b not in inside] if len(inside) < len(blobs) else []
            starts, at = [], 0
            for b in rest:
                starts.append(at)
                at += len(self._hashes_of(b) or b"")
            joined = b"".join(self._packed[b] or b"" for b in rest)
            self._joined[blobs] = (joined, starts, rest, inside)
        joined, starts, rest, inside = self._joined[blobs]
        needle = struct.pack("<I", zlib.crc32(line))
        found = find(joined, starts, rest, needle)
        kept = self._drift_entry()
        if inside and kept is not None:  # (the entry's other files: not among these)
            found |= find(kept.hashes, kept.offsets, kept.ids, needle) & inside
        return found

    def _each(self, blobs: Sequence[str], lines: set[bytes]) -> dict[bytes, set[str]]:
        """`holding` of each of ``lines``: one pass over the candidates' hashes (shared: over
        those not searched for these lines yet, for the lines they were not searched for)."""
        by_hash: dict[int, list[bytes]] = {}
        for ln in lines:
            by_hash.setdefault(zlib.crc32(ln), []).append(ln)
        wanted = set(by_hash)
        found: dict[bytes, set[str]] = {ln: set() for ln in lines}
        if self.shared:
            self._look(wanted)
            holders, entered, asked = self._holders, self._entered, set(blobs)
            lazy = self._lazy
            if lazy:
                lazy.ask(lines)
            for b in blobs:
                if lazy and b in lazy:
                    for h in lazy.hits(b):
                        holders.setdefault(h, set()).add(b)
                    continue
                has, was = self._hits_of(b), entered.get(b)
                if was is not has:  # (a blob's hits only grow, as a new set)
                    for h in has if was is None else has - was:
                        holders.setdefault(h, set()).add(b)
                    entered[b] = has
            for h, lns in by_hash.items():
                for ln in lns if h in holders else ():
                    found[ln] = holders[h] & asked
            return found
        hits = self._hits if wanted <= self._looked else {}
        for b in blobs:
            hit = hits.get(b)
            for h in (
                wanted & hit
                if hit is not None
                else wanted.intersection(values(self._hashes_of(b) or b""))
            ):
                for ln in by_hash[h]:
                    found[ln].add(b)
        return found

    def _look(self, hashes: set[int]) -> None:
        """Shared: ``hashes`` among those each blob's hits are of (`_hits_of`)."""
        new = hashes - self._looked
        if new:
            self._looked |= new
            self._order += sorted(new)
            self._since.clear()

    def _hits_of(self, blob: str) -> set[int]:
        """Which of the hashes looked for (`_look`) ``blob`` has: its hashes searched for
        those added since it was last asked only."""
        n, at = len(self._order), self._upto.get(blob, 0)
        hit = self._hits.get(blob)
        if hit is not None and at == n:
            return hit
        if hit is None:
            at = 0
        since = self._since.get(at)
        if since is None:
            since = self._since[at] = set(self._order[at:])
        more = since.intersection(values(self._hashes_of(blob) or b""))
        found = more if hit is None else hit | more
        self._hits[blob], self._upto[blob] = found, n
        return found

    def content(self, blob: str) -> bytes:
        """A searched blob's bytes (read once)."""
        if blob not in self._raw:
            self.read.add(blob)
            self._raw[blob] = self.git.read_blob(blob)
        return self._raw[blob]
