"""The one cache: what patchstack keeps to save work (the builds' results, parsed patch files,
proofs), in one file under the git directory (``patchstack/cache``), versioned and bounded.

It is a cache, never state: every value is checked before use (object ids to exist, a parse
by the digest of the bytes it was made from), a file that cannot be read is an empty cache,
and losing it costs only time. Entries are grouped in sections (``build``, ``parsed``,
``proven``); each entry records the generation of its section that last used it. A command
that adds entries to a section starts a new generation of it, and an entry that neither the
last `KEEP` generations nor this command used is dropped: what no longer serves the series
(the chains of a base it left, patch versions it replaced) goes away with the second command
that learns something new, whatever the series' history. A command that only uses entries
refreshes them and drops nothing.

The file is one ``marshal`` of plain values (no code), each section in it marshalled on its
own: a command unmarshals only the sections it uses (`pop` of one patch of 5,000 read all
three, 3.9 MB, for the 1.8 MB of proofs it uses), when first wanted; it is written at the
end of a command that changes state (`Checkout.save_caches`, under the repository lock) by an
atomic rename. Of the commands that only read, `status` alone writes it (under the shared
lock: a reader racing it may lose an entry, which costs time): the drift it walked and the
proofs it made (each applied commit its patch file's, the patch files parsed, which commit
holds which), so that the next `status` of a fresh clone is a blink too.

The file names the version of patchstack that wrote it (`WRITER`): a cache another version
wrote is ignored, as if there were none (its entries may mean another thing), and replaced by
the next command that saves.
"""

from __future__ import annotations

import contextlib
import marshal
import os
from typing import Any

from . import __version__
from .files import write_atomic

FORMAT = "patchstack-cache"
VERSION = 2  # 1: the sections marshalled together (another version's: ignored)
WRITER = __version__
KEEP = 2  # generations of a section whose entries are kept
LEGACY = ("parsed", "proven")
RAW_OFF = "PATCHSTACK_NO_RAW_SECTIONS"  # set: every section read is marshalled again


class Store:
    def __init__(self, path: str) -> None:
        self.path = path
        self._loaded = False
        self._entries: dict[str, dict[str, tuple[int, Any]]] = {}
        self._raw: dict[str, bytes] = {}  # sections not unmarshalled yet
        self._read: dict[str, bytes] = {}  # the bytes of those unmarshalled (`save`)
        self.marshalled: list[str] = []  # the sections this command wrote anew (for tests)
        self.unmarshalled: list[str] = []  # the sections this command read (for tests)
        self._gens: dict[str, int] = {}
        self._used: dict[str, set[str]] = {}
        self._added: dict[str, dict[str, Any]] = {}

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            with open(self.path, "rb") as f:
                data = marshal.load(f)
            if (
                isinstance(data, dict)
                and data.get("format") == FORMAT
                and data.get("version") == VERSION
                and data.get("writer") == WRITER
            ):
                self._raw = {str(k): bytes(v) for k, v in data["sections"].items()}
                self._gens = dict(data["generations"])
        except (OSError, EOFError, ValueError, TypeError, KeyError):
            self._entries, self._gens, self._raw = {}, {}, {}

    def _section(self, section: str) -> dict[str, tuple[int, Any]]:
        """The entries of ``section`` (unmarshalled when first asked for; empty when its
        bytes are not a section)."""
        self._load()
        raw = self._raw.pop(section, None)
        if raw is not None:
            self.unmarshalled.append(section)
            try:
                found = marshal.loads(raw)
            except (EOFError, ValueError, TypeError):
                found = None
            self._entries[section] = found if isinstance(found, dict) else {}
            if isinstance(found, dict):
                self._read[section] = raw
        return self._entries.get(section, {})

    def get(self, section: str, key: str) -> Any | None:
        """The value of ``key``, marked as used by this command; None when not known."""
        added = self._added.get(section)
        if added is not None and key in added:
            return added[key]
        found = self._section(section).get(key)
        if found is None:
            return None
        self._used.setdefault(section, set()).add(key)
        return found[1]

    def put(self, section: str, key: str, value: Any) -> None:
        old = self._section(section).get(key)
        if old is not None and old[1] == value:
            self._used.setdefault(section, set()).add(key)
            return
        self._added.setdefault(section, {})[key] = value

    def forget(self, section: str, key: str) -> None:
        """Drop ``key`` (a value found wrong)."""
        self._section(section).pop(key, None)
        self._added.get(section, {}).pop(key, None)
        self._used.get(section, set()).discard(key)
        self._added.setdefault(section, {})  # a change to save

    def sizes(self) -> dict[str, int]:
        """Entries per section (for tests and ``--verbose`` reports)."""
        self._load()
        return {s: len(self._section(s)) for s in [*self._entries, *self._raw]}

    @property
    def changed(self) -> bool:
        return bool(self._added) or any(
            self._entries.get(s, {}).get(k, (self._gens.get(s, 0), None))[0] != self._gens.get(s, 0)
            for s, keys in self._used.items()
            for k in keys
        )

    def save(self) -> None:
        """Write what this command used and learned (nothing when it changed nothing)."""
        if not self._loaded or not self.changed:
            return
        # A section this command changed nothing in is written as the bytes it was read from
        # (a skip reads the drift's 6 MB of candidate lines and leaves them as they were);
        # ``PATCHSTACK_NO_RAW_SECTIONS=1``: every section read is marshalled anew.
        same = set() if os.environ.get(RAW_OFF) else {s for s in self._read if self._unchanged(s)}
        for section in set(self._entries) | set(self._added):
            entries = self._section(section)
            self._entries[section] = entries
            gen = self._gens.get(section, 0)
            added = self._added.get(section, {})
            if added:
                gen += 1
                floor = gen - KEEP + 1
                for k in [k for k, (g, _v) in entries.items() if g < floor]:
                    if k not in self._used.get(section, set()):
                        del entries[k]
            for key in self._used.get(section, set()):
                if key in entries:
                    entries[key] = (gen, entries[key][1])
            for key, value in added.items():
                entries[key] = (gen, value)
            self._gens[section] = gen
        self.marshalled = [k for k in self._entries if k not in same]
        fresh = {k: marshal.dumps(self._entries[k]) for k in self.marshalled}
        ours = {k: self._read[k] if k in same else fresh[k] for k in self._entries}
        sections = {**self._raw, **ours}
        data = {
            "format": FORMAT,
            "version": VERSION,
            "writer": WRITER,
            "generations": self._gens,
            "sections": sections,
        }
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            write_atomic(self.path, marshal.dumps(data), sync=False)
            for legacy in LEGACY:  # the separate caches of earlier versions
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(os.path.dirname(self.path), legacy))
        self._used.clear()
        self._added.clear()
        self._read.clear()

    def _unchanged(self, section: str) -> bool:
        """Whether this command changed nothing in ``section``, read from bytes: nothing added
        or forgotten, and every entry it used of the section's generation already."""
        gen = self._gens.get(section, 0)
        entries = self._entries.get(section, {})
        return (
            section in self._read
            and section not in self._added
            and all(entries.get(k, (gen, None))[0] == gen for k in self._used.get(section, set()))
        )
