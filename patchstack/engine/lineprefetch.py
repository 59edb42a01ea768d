"""The first stop's line index learnt while the replay merges (issue 35): when upstream
deleted a file one of the patches changes, the patch that changes it meets a modify/delete
conflict and its stop follows the code (`relocate`), which hashes the lines of every file the
drift changed (`lineindex`: kernel-timers 6,206 files, 61 MB, 1-2 s). Those are the new
base's blobs, known before the replay: a thread reads them (`git.blobstream`, a process of its
own) and hashes them while the command's thread waits on ``merge-tree``, so the stop takes
the hashes made (`LineIndex._learn`) instead of reading the files then.

What is learnt is what `LineIndex._learn` would learn of the same blobs (their hashes by
`hashes_of`, unsearched when larger than `MAX_BYTES` or holding a NUL, missing when the
repository lacks them): the proposals are the same bytes (``PATCHSTACK_NO_LINE_PREFETCH=1``
learns at the stop; `tests/test_line_prefetch.py` holds the two identical). A stop that
follows no code keeps what was learnt joined in the cache (`Joined`), where the ``--skip``
that meets the deleted file reads it, so the work is not lost; a refresh that ends without a
stop ends the thread's git where it is.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable

from ..git import Git
from ..git.blobstream import start_blob_stream
from ..model.ids import Oid
from ..store import Store
from .deleters import Deleters
from .linehashes import Joined, hashes_of, read_entry
from .lineindex import JOINED, MAX_BYTES, SECTION

NO_PREFETCH = "PATCHSTACK_NO_LINE_PREFETCH"  # set: the stop learns its candidates itself
NO_EARLY_DELETIONS = "PATCHSTACK_NO_EARLY_DELETIONS"  # set: the deletion walk begins at the stop
# set: a check's prefetch hashes every line as a refresh's does (`LineIndex`'s lazy blobs)
NO_LAZY = "PATCHSTACK_NO_LAZY_LINES"
SWITCH = 0.0005  # seconds: the interpreter's switch interval while the thread hashes
_FILE_MODES = ("100644", "100755")


class Learnt:
    """One blob as the thread found it: its packed hashes (None: not searched), its bytes
    (searched ones), whether `LineIndex._learn` would have read it, and whether it is
    missing. A lazy prefetch's searched blob has its bytes and no hashes (``packed`` None,
    ``raw`` not): `LineIndex` looks the lines asked up in the bytes themselves."""

    __slots__ = ("packed", "raw", "read", "missing")

    def __init__(self, packed: bytes | None, raw: bytes | None, read: bool, missing: bool):
        self.packed, self.raw, self.read, self.missing = packed, raw, read, missing


class Prefetch:
    """``blobs`` read and hashed in a thread, started now; `results` waits for them."""

    def __init__(
        self, git: Git, blobs: list[str], walks: Deleters | None = None, lazy: bool = False
    ) -> None:
        self.blobs, self.lazy = blobs, lazy
        self.walks = walks  # the drift's deletion walks, begun (`Deleters.start`)
        self._stream = start_blob_stream(git, blobs)
        self._found: dict[str, Learnt] = {}
        self._failed = False
        self.adopted = 0  # blobs a stop took from it (the tests read it)
        # The command's thread wakes from each answer of git's and waits for the interpreter
        # until the hashing thread (pure Python, never blocking) yields it: at most a tenth of
        # the usual 5 ms meanwhile. Measured (real_drift --stops, kernel-timers, medians of 3,
        # one run): first stop 6.2 CPU s with it, 10.7 s at the default interval; every stop
        # skipped 33.2 against 41.8.
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH))
        self._thread = threading.Thread(target=self._run, name="patchstack-lines", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for blob, got in zip(self.blobs, self._stream, strict=True):
                if got is None:
                    self._found[blob] = Learnt(None, None, True, True)
                elif got[0] > MAX_BYTES:
                    self._found[blob] = Learnt(None, None, False, False)
                elif b"\0" in got[1]:
                    self._found[blob] = Learnt(None, None, True, False)
                else:
                    packed = None if self.lazy else hashes_of(got[1])
                    self._found[blob] = Learnt(packed, got[1], True, False)
        except Exception:  # (git ended, or was ended: the stop reads for itself)
            self._failed = True
        finally:
            self._stream.close()

    def results(self) -> dict[str, Learnt]:
        """What was learnt, once the thread is done (nothing when it failed)."""
        self._thread.join()
        sys.setswitchinterval(self._interval)
        return {} if self._failed else self._found

    def walks_of(self, old_base: str | None, new_base: str) -> Deleters | None:
        """The deletion walks begun with the prefetch, when of the drift ``old_base`` ->
        ``new_base``."""
        w = self.walks
        return w if w is not None and (w.old_base, w.new_base) == (old_base, new_base) else None

    def close(self) -> None:
        """End the thread's git wherever it is, and the thread (which closes the stream),
        and the deletion walks nobody asked."""
        if self.walks is not None:
            self.walks.close()
        self._stream.kill()
        self._thread.join()
        sys.setswitchinterval(self._interval)


def start(
    git: Git,
    store: Store | None,
    old_base: str | None,
    new_base: str,
    paths: Iterable[str],
    lazy: bool = False,
) -> Prefetch | None:
    """A `Prefetch` of the new base's candidates (the text files the drift ``old_base`` ->
    ``new_base`` changed, as `Relocator._read_candidates` lists them) when the drift deleted
    one of ``paths`` (the files the patches change), but those the cache knows; else None.
    ``lazy`` (a check's; ``PATCHSTACK_NO_LAZY_LINES=1``: not): the blobs read, not hashed."""
    from .relocate import NO_JOINED, PLAIN

    if os.environ.get(NO_PREFETCH) == "1" or os.environ.get(PLAIN) == "1" or not old_base:
        return None
    old_tree, new_tree = git.trees_of([Oid(old_base), Oid(new_base)])
    wanted = sorted(set(paths))
    was, now = git.entries_at(old_tree, wanted), git.entries_at(new_tree, wanted)
    gone = [p for p in wanted if p not in now and was.get(p, ("", ""))[0] in _FILE_MODES]
    if not gone:
        return None
    diffs = git.raw_diffs([(old_tree, new_tree)])[0]
    blobs = list(dict.fromkeys(new for _om, mode, _o, new, _p in diffs if mode in _FILE_MODES))
    if store is not None:
        joined = None
        if os.environ.get(NO_JOINED) != "1":
            joined = Joined.read(store.get(JOINED, f"{old_base} {new_base}"))
        blobs = [
            b
            for b in blobs
            if not (joined is not None and joined.covers(b))
            and not read_entry(b, store.get(SECTION, b))[0]
        ]
    if not blobs:
        return None
    walks = None
    if os.environ.get(NO_EARLY_DELETIONS) != "1":
        walks = Deleters(git, old_base, new_base, store)
        # (which commit deleted each: `relocate` names it; with the files the series made,
        # which a patch meets deleted when the one that made it is left out)
        walks.start([p for p in wanted if p not in now])
    return Prefetch(git, blobs, walks, lazy and os.environ.get(NO_LAZY) != "1")
