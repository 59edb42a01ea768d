"""Proving that merge-ort pairs a file with no other: the region merge where ours lost a file.

When a patch changes a file that its base has and ours does not (upstream deleted or moved
it, or it was made by an earlier patch that was left out: a knock-on), merge-ort looks for a
rename of it on ours' side: among the files ours added, the one most like it, if any is at
least ``MIN_SCORE`` percent alike (or identical). To find none it reads and compares every
file upstream added, thousands on a fork months behind: 0.3-0.6 s a merge, most of a real
drift's time. When none is alike the whole merge is decided on the patch's paths, like any
other (`contract.place_region`): modify/delete there, and ours everywhere else.

**The proof.** Let a replay start from the old base ``B`` (``C[start]``) and the new one ``N``
(``T[start]``). For patch k merged with base ``C[k-1]`` onto ``T[k]``, every path where
``C[k-1]`` is not ``B`` or ``T[k]`` is not ``N`` is one the replay changed (`changed_entries`
of each, in process: a few trees). Elsewhere a file ours added is one ``N`` added to ``B``
(``A``, with ``N``'s content). So the files ours added are within ``A`` plus those changed
paths; when the changed paths add none that ``A`` does not hold as it is, ``A`` is a
superset of merge-ort's candidates. Copy detection (`Git.start_alike`) then
compares each file that may be asked about with every file of ``A`` in one process, once
a replay, with git's own similarity estimate and merge-ort's minimum score: a file no file
of ``A`` is as alike as that (and none identical) has no rename in any of the replay's
merges. The estimate is symmetric and only regular files are compared inexactly, so storing
every file of ``A`` as a regular one only adds candidates. What git reads of each file's
text (CRLF handling) depends on its ``diff`` attribute: each file is compared under a path
with the same attribute as its own, or not judged. An answer git warned about (a limit it
hit), an empty file and a gitlink are not judged either: such a patch gets the whole merge.

A file's verdict depends on ``A`` alone (and the ``diff`` attributes): a refresh stop by stop
gives each resumed replay (a skip, a continue) a proof of the first command's two trees, and
the verdicts one command reached are the next one's (`known`, ``loader``: kept in the cache
under the two trees and what decides a merge, `commands.refresh.knockons`), so that a skip
merges a patch whose file ours lost on its paths, as the first stop does, without comparing
the files again (`tests/test_resumed_renames.py`; ``PATCHSTACK_NO_RESUMED_RENAMES=1``: no
proof at a skip, each such merge the whole one).

`tests/test_renames.py` holds the cases (a knock-on with and without a file upstream added
alike, a moved file, a folder renamed around a deleted one), each against ``git rebase``;
the differential generator (`tests/differential.py`) compares on random cases.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from ..git import Git, RawDiff
from ..git.similarity import Pending
from ..model.ids import Oid
from .contract import GITLINK, NULL_MODE, TREE_MODE, enabled

MIN_SCORE = 50  # merge-ort's minimum similarity for a rename (git's default, percent)
PREFIX = ".patchstack-renames"  # where the files judged are put, under a number each


class RenameProof:
    """The files of a replay ours may have lost, judged once (see the module docstring).

    ``candidates``: every (path, blob) the replay may ask about (the old version of a file a
    patch changes that the new base has not); `start` has git compare them in the
    background while the replay goes on, and the first question waits for the answer.
    ``start(background=False)`` (a replay that stops at its first conflict, most often
    before any patch asks) leaves them to the first question: none asked, none compared."""

    def __init__(
        self,
        git: Git,
        old_base: Oid,
        new_base: Oid,
        candidates: Iterable[tuple[str, str]] | Callable[[], Iterable[tuple[str, str]]],
        loader: Callable[[], Sequence[Sequence[str]]] | None = None,
    ) -> None:
        self.git = git
        self.old_base = old_base
        self.new_base = new_base
        self._candidates = candidates  # (a function of none: read when first wanted)
        self._listed: list[tuple[str, str]] | None = None
        self.added: dict[str, str] | None = None  # A: path -> blob
        self.verdicts: dict[tuple[str, str], bool] = {}  # (path, blob) -> no file alike
        self.pending: tuple[Pending, dict[tuple[str, str], str]] | None = None
        self.places: dict[tuple[str, str], str] = {}  # each file judged: where it was put
        self.serial = 0  # the next number of a place
        self.beyond: dict[frozenset[tuple[str, str]], dict[tuple[str, str], bool]] = {}
        self.waiting = False  # the candidates are compared at the first question
        # the verdicts an earlier command of the same refresh reached (`known`), read at the
        # first question: A is the same (the same two trees), so is each file's verdict
        self.loader = loader

    @property
    def candidates(self) -> list[tuple[str, str]]:
        if self._listed is None:
            found = self._candidates() if callable(self._candidates) else self._candidates
            self._listed = list(dict.fromkeys(found))
        return self._listed

    def start(self, background: bool = True) -> None:
        """Have git compare the candidates (in the background), or at the first question."""
        if not background and callable(self._candidates) and self._listed is None:
            self.waiting = enabled()  # (none listed yet: at the first question)
        elif enabled() and self.candidates and self.pending is None:
            if background:
                self._load()
                self.pending = self._judge([c for c in self.candidates if c not in self.verdicts])
            else:
                self.waiting = True

    def none_alike(self, before: str, ours: str, lost: Mapping[str, str]) -> bool:
        """Can merge-ort, merging a change whose base is ``before`` onto ``ours``, pair none
        of ``lost`` (path -> its blob in ``before``; files ``ours`` does not have) with a file
        ours added?"""
        if not enabled() or not lost:
            return False
        self._load()
        wanted = list(lost.items())
        if self.waiting:
            self.waiting = False
            self.pending = self._judge([c for c in self.candidates if c not in self.verdicts])
        self._settle()
        if any(w not in self.verdicts for w in wanted):
            self.pending = self._judge([w for w in wanted if w not in self.verdicts])
            self._settle()
        if not all(self.verdicts[w] for w in wanted):
            return False
        others = self._beyond_added(before, ours)
        if not others:
            return True
        # Files ours added that A does not hold (a patch left out kept a file a later patch
        # deleted, or one was placed elsewhere than it was made): a few, the same ones over
        # many merges. Compared once with every file judged so far (at its place there).
        key = frozenset(others.items())
        if key not in self.beyond:
            judged = {f: at for f, at in self.places.items() if self.verdicts.get(f)}
            alike = self.git.alike(others, {at: f[1] for f, at in judged.items()}, MIN_SCORE)
            self.beyond[key] = {
                f: alike is not None and at not in alike for f, at in judged.items()
            }
        return all(self.beyond[key].get(w, False) for w in wanted)

    def known(self) -> list[list[str]]:
        """The verdicts reached, for a later command's proof with the same two trees
        (``loader``): [path, blob, where it was judged] of each file no file of A is alike,
        [path, blob, ""] of the others (alike, or not judged); none still being compared."""
        waiting = set(self.pending[1]) if self.pending is not None else set()
        return [
            [p, b, self.places.get((p, b), "") if ok else ""]
            for (p, b), ok in self.verdicts.items()
            if (p, b) not in waiting
        ]

    def _load(self) -> None:
        """Take the verdicts an earlier command reached (``loader``, asked once; see `known`);
        one that is not of that form is none (a file not judged is judged when asked)."""
        if self.loader is None:
            return
        known, self.loader = self.loader(), None
        for entry in known:
            if len(entry) != 3 or not all(isinstance(x, str) for x in entry):
                continue
            path, blob, place = entry
            if (path, blob) in self.verdicts or not self.git.is_id(blob):
                continue
            number = place.split("/")[1] if place.count("/") >= 2 else ""
            if place and (
                not place.startswith(PREFIX + "/")
                or place != f"{PREFIX}/{number}/{path}"
                or not number.isdigit()
            ):
                continue
            self.verdicts[(path, blob)] = bool(place)
            if place:
                self.places[(path, blob)] = place
                self.serial = max(self.serial, int(number) + 1)

    def _beyond_added(self, before: str, ours: str) -> dict[str, str]:
        """The files ours added to ``before`` that ``A`` does not hold as ours has them."""
        git = self.git
        moved = {d[4] for d in git.changed_entries(self.old_base, before)}
        moved |= {d[4] for d in git.changed_entries(self.new_base, ours)}
        paths = sorted(moved)
        was, now = git.entries_at(before, paths), git.entries_at(ours, paths)
        added = self._added_at(paths)
        others = {}
        for path in paths:
            entry = now.get(path)
            if entry is None or entry[0] in (TREE_MODE, GITLINK):
                continue
            old = was.get(path)
            if old is not None and old[0] != TREE_MODE:
                continue  # a file in both: not added
            if added.get(path) != entry[1]:
                others[path] = entry[1]
        return others

    def _added_at(self, paths: Sequence[str]) -> dict[str, str]:
        """`_added` at ``paths``, read off the two trees there (a few paths of a drift's
        thousands: no diff of the whole drift): a file of the new base (not a gitlink) where
        the old base has none, or a folder, as ``diff-tree -r`` lists an addition."""
        if self.added is not None or not enabled():
            added = self._added()
            return {p: added[p] for p in paths if p in added}
        was, now = self.git.entries_in([self.old_base, self.new_base], paths)
        return {
            p: e[1]
            for p, e in now.items()
            if e[0] not in (TREE_MODE, GITLINK) and was.get(p, (TREE_MODE,))[0] == TREE_MODE
        }

    def _added(self) -> dict[str, str]:
        if self.added is None:
            diff = self.git.raw_diffs([(self.old_base, self.new_base)])[0]
            self.added = {
                d[4]: d[3] for d in diff if d[0] == NULL_MODE and d[1] not in (NULL_MODE, GITLINK)
            }
        return self.added

    def _settle(self) -> None:
        """Take the answer of the comparison under way, if any."""
        if self.pending is None:
            return
        pending, places = self.pending
        self.pending = None
        alike = pending.answer()
        for f, place in places.items():
            self.verdicts[f] = alike is not None and place not in alike

    def _judge(self, files: list[tuple[str, str]]) -> tuple[Pending, dict[tuple[str, str], str]]:
        """Start comparing ``files`` with A; those it cannot judge are judged alike now. A
        has the whole drift's diff read only when some file is to be compared: a skip whose
        verdicts were all kept asks with none (0.1-0.2 s a kernel-timers skip)."""
        git = self.git
        for f in files:
            self.verdicts[f] = False
        empty = git.fmt.hash("blob", b"")
        judged = [(p, b) for p, b in files if b != empty]
        if not judged:
            return Pending(), {}
        added = self._added()
        if any(p == PREFIX or p.startswith(PREFIX + "/") for p in added):
            return Pending(), {}
        places = {f: f"{PREFIX}/{self.serial + n}/{f[0]}" for n, f in enumerate(judged)}
        self.serial += len(judged)
        attrs = git.attribute("diff", [p for f in judged for p in (f[0], places[f])])
        places = {f: at for f, at in places.items() if attrs.get(f[0]) == attrs.get(at)}
        if not places:
            return Pending(), {}
        asked = {at: f[1] for f, at in places.items()}
        self.places.update(places)
        return git.start_alike(added, asked, MIN_SCORE), places


def lost_of(git: Git, diffs: Iterable[Sequence[RawDiff]], tree: str) -> list[tuple[str, str]]:
    """What patches whose raw diffs are ``diffs`` may find that ours lost, merged onto
    ``tree`` (`RenameProof`'s candidates): the old version of each file a patch changes that
    ``tree`` has not as a file."""
    olds = [(d[4], d[2]) for diff in diffs for d in diff if d[0] not in (NULL_MODE, GITLINK)]
    there = git.entries_at(tree, sorted({p for p, _b in olds}))
    return [(p, b) for p, b in olds if there.get(p, (TREE_MODE,))[0] in (TREE_MODE, GITLINK)]
