"""What a refresh stop by stop keeps in the git directory's cache (`store`, section ``held``)
from one command for the next, each under what decides it: the verdicts of the patches the
new base holds (`engine.verdicts.held`: every stop judges the patches placed so far again),
the upstream walk they search (`engine.evidence.history`), where each patch lands on the old
base with the same patches left out (`engine.landings.on_old_base`: a skip replays there only
the steps after those kept), and the culprit walks of the
printed hunks' files (`engine.culprits.attribute`: a file printed at one stop is often
printed at a later one), and the states of the replay's `engine.needs.Needs` before each
step (`KeptNeeds`: the next command's replay resumes after them). A cache, never trusted:
an entry that is not what its key asks for (another patch's verdict, a commit this
repository lacks, a walk of another range) is none.
``PATCHSTACK_NO_PROOF_CACHE=1`` keeps nothing (`knockons.kept_on`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...checkout import Checkout
from ...engine.evidence import History
from ...engine.verdicts import NO_OP, UNKNOWN, UPSTREAM, Held
from ...git.attributes import merge_inputs
from ...git.history import FileLines, LineChanges
from ...model import trailers
from ...model.conflict import Conflict, UpstreamCommit

SECTION = "held"  # of the one cache (`store`)
EARLY = "PATCHSTACK_NO_EARLY_WALK"  # set: a stop walks the culprits' files when it traces
VERDICTS = (UPSTREAM, NO_OP, UNKNOWN)


class Kept:
    """The verdicts and the upstream walk (`engine.verdicts.Kept`)."""

    def __init__(self, ws: Checkout) -> None:
        self.ws = ws

    def get(self, key: str, name: str) -> Held | None:
        found = self.ws.store.get(SECTION, key)
        try:
            who, verdict, oid, subject, known, missing = found  # type: ignore[misc]
        except (TypeError, ValueError):
            return None
        texts = (who, verdict, oid, subject, *missing)
        if who != name or verdict not in VERDICTS or not all(isinstance(t, str) for t in texts):
            return None
        if known and not self.ws.git.has_objects([oid]).get(oid):
            return None
        return Held(verdict, UpstreamCommit(oid, subject) if known else None, tuple(missing))

    def put(self, key: str, name: str, held: Held) -> None:
        e = held.evidence
        plain = (name, held.verdict, e.oid if e else "", e.subject if e else "", e is not None)
        self.ws.store.put(SECTION, key, (*plain, tuple(held.missing)))

    def walk(self, old_base: str, new_base: str) -> History | None:
        """The first-parent walk of ``old_base..new_base`` kept (both commit ids, so what
        it lists never changes); None when not kept or not a walk of that range."""
        found = self.ws.store.get(SECTION, f"walk {old_base}..{new_base}")
        try:
            base, commits, trees, subjects = found  # type: ignore[misc]
            walked = History(base, tuple(commits), tuple(trees), tuple(subjects))
        except (TypeError, ValueError):
            return None
        lists = (walked.commits, walked.trees, walked.subjects)
        if base != old_base or len({len(x) for x in lists}) != 1:
            return None
        if not all(isinstance(x, str) for x in (*walked.commits, *walked.trees, *subjects)):
            return None
        if walked.commits and walked.commits[-1] != new_base:
            return None
        return walked

    def keep_walk(self, walked: History, new_base: str) -> None:
        if _is_id(walked.old_base) and _is_id(new_base):
            plain = (walked.old_base, walked.commits, walked.trees, walked.subjects)
            self.ws.store.put(SECTION, f"walk {walked.old_base}..{new_base}", plain)

    def land(self, key: str) -> tuple[str, str] | None:
        found = self.ws.store.get(SECTION, key)
        try:
            after, parent = found  # type: ignore[misc]
        except (TypeError, ValueError):
            return None
        if not (_is_id(after) and (parent == "" or _is_id(parent))):
            return None
        return after, parent

    def keep_land(self, key: str, after: str, parent: str) -> None:
        self.ws.store.put(SECTION, key, (after, parent))


class KeptNeeds:
    """`engine.needs.Needs`' states (its ``memory``), under what decides a merge
    (``inputs``: `git.attributes.merge_inputs`, asked only when a state is)."""

    def __init__(self, ws: Checkout, inputs: Callable[[], str]) -> None:
        self.ws, self.inputs = ws, inputs

    def get(self) -> Mapping[str, Any]:
        found = self.ws.store.get(SECTION, f"needs {self.inputs()}")
        return found if isinstance(found, dict) else {}

    def put(self, made: dict[str, Any]) -> None:
        self.ws.store.put(SECTION, f"needs {self.inputs()}", made)


class KeptLines:
    """`Git.line_changes` of a range of commit ids, each file's kept: a file walked by an
    earlier command is not walked again. A file's trace reads only the commits that changed
    it (`culprits.trace`), so each file's own commits stand for the walk of them all. One
    entry for the range, every file walked in it (a command that uses it keeps it); a file's
    commits kept are taken when this repository has every one. `start`: the walk of files
    not kept begun early, in the background; a file it walked is taken from it (and kept).
    ``inputs``: `git.attributes.merge_inputs` (None: asked when needed), in the key:
    ``log -p`` reads the work tree's ``diff`` attributes and configuration (a file ``-diff``
    there has no lines to trace), so a walk read under others is not taken."""

    def __init__(self, ws: Checkout, inputs: str | None) -> None:
        self.ws, self.digest = ws, inputs
        self.early: tuple[str, set[str], Callable[[], list[LineChanges]]] | None = None

    def guess(
        self, parsed: Conflict, triage: Conflict, note: str, old_base: str | None, new_base: str
    ) -> None:
        """Begin the walk `merging.blame_first` will ask of the files of the hunks a stop's
        report prints: ``parsed`` (its merge's hunks) as ``triage`` (the replay's) and
        ``note`` say, before what the stop adds later (a relocation's lines, a longer note
        only shorten what is printed). A file guessed wrong is walked for nothing, one
        missed is walked when traced: what is traced is the same either way.
        ``PATCHSTACK_NO_EARLY_WALK=1``: walked when traced only."""
        if os.environ.get(EARLY) is not None or not old_base or old_base == new_base:
            return
        report = replace(parsed, kind=triage.kind, root=triage.root, note=note)
        count = self.ws.printed(report) if self.ws.printed is not None else None
        hunks = report.hunks if count is None else report.hunks[:count]
        paths = list(dict.fromkeys(h.path for h in hunks))
        if paths:
            self.start(f"{old_base}..{new_base}", paths, trailers.PATCH)

    def inputs(self) -> str:
        """`merge_inputs`, asked once (None given: asked when a walk is)."""
        if self.digest is None:
            self.digest = merge_inputs(self.ws.git)
        return self.digest

    def start(self, rng: str, paths: Sequence[str], trailer: str | None) -> None:
        """Begin walking those of ``paths`` not kept (a stop's guess at what it will trace,
        the first files `check` traces); ``PATCHSTACK_NO_EARLY_WALK=1``: walked when traced."""
        old, _sep, new = rng.partition("..")
        if not (_is_id(old) and _is_id(new)) or os.environ.get(EARLY) is not None:
            return
        key = f"lines {rng} {trailer} {self.inputs()}"
        wanted = self._wanted(self._files(key), paths)[1]
        if wanted:
            walk = self.ws.git.start_line_changes(rng, wanted, trailer)
            self.early = (key, set(wanted), walk)

    def _files(self, key: str) -> dict[str, list[Any]]:
        found = self.ws.store.get(SECTION, key)
        return dict(found) if isinstance(found, dict) else {}

    def _wanted(
        self, files: dict[str, list[Any]], paths: Sequence[str]
    ) -> tuple[dict[str, list[LineChanges]], list[str]]:
        """(each of ``paths`` kept, with its commits; those not kept)."""
        have = {p: each for p in paths if (each := _lines(p, files.get(p))) is not None}
        named = sorted({c.oid for each in have.values() for c in each})
        there = self.ws.git.has_objects(named) if named else {}
        have = {p: each for p, each in have.items() if all(there.get(c.oid) for c in each)}
        return have, [p for p in paths if p not in have]

    def __call__(self, rng: str, paths: Sequence[str], trailer: str | None) -> list[LineChanges]:
        git = self.ws.git
        old, _sep, new = rng.partition("..")
        if not (_is_id(old) and _is_id(new)):
            return git.line_changes(rng, paths, trailer)
        key = f"lines {rng} {trailer} {self.inputs()}"
        files = self._files(key)
        have, wanted = self._wanted(files, paths)
        if wanted:
            early, self.early = self.early, None
            if early is not None and early[0] == key and early[1] & set(wanted):
                self._take(files, have, early[2](), early[1])
                wanted = [p for p in wanted if p not in early[1]]
            if wanted:
                self._take(files, have, git.line_changes(rng, wanted, trailer), wanted)
            self.ws.store.put(SECTION, key, files)
        return [c for p in paths for c in have[p]]

    @staticmethod
    def _take(
        files: dict[str, list[Any]],
        have: dict[str, list[LineChanges]],
        walked: list[LineChanges],
        paths: Collection[str],
    ) -> None:
        for p in paths:  # each commit with this file's change alone, as kept
            have[p] = [replace(c, files={p: c.files[p]}) for c in walked if p in c.files]
            files[p] = [_plain(c, p) for c in have[p]]


def _plain(change: LineChanges, path: str) -> tuple[Any, ...]:
    f = change.files[path]
    return (change.oid, change.subject, change.flagged, f.created, f.hunks, f.before, f.after)


def _lines(path: str, found: Any) -> list[LineChanges] | None:
    """The commits that changed ``path``, as kept; None when not kept or not such a list."""
    if not isinstance(found, list):
        return None
    out = []
    try:
        for oid, subject, flagged, created, hunks, before, after in found:
            if not all(isinstance(x, str) for x in (oid, subject, before, after)):
                return None
            if hunks is not None:
                hunks = tuple((int(a), int(b), int(c), int(d)) for a, b, c, d in hunks)
            lines = FileLines(bool(created), hunks, before, after)
            out.append(LineChanges(oid, subject, {path: lines}, bool(flagged)))
    except (TypeError, ValueError):
        return None
    return out


def _is_id(rev: str) -> bool:
    return len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)
