"""Does a patch still make its own change when patches before it are left out?

A replay that leaves a patch m out (it conflicted, was skipped or deferred) places the later
patches without it, as ``git rebase --skip`` does. Where a later patch k removes or changes
lines that m makes, that three-way merge is clean but takes the hunk away silently (both sides
"removed" m's line), and a patch file rewritten from it would lack the hunk for good: bringing
m back would leave m's lines in. Such a patch is not placed: it is left out with m, as a
knock-on waiting for it (``# deferred: k C after m``), and comes back with it.

**The rule, on the old base** (so that a change upstream took is never mistaken for a lost
one): let ``O`` be the old chain without the left-out patches. Patch k is its own change
without them when merging it onto ``O[k-1]`` is clean, giving ``R``, and putting the left-out
patches' changes back on ``R`` (``O[k-1] -> C[k-1]`` merged into ``R``) gives exactly ``C[k]``:
k and the missing patches commute. Otherwise k needs them, and its root is the nearest
left-out patch that touches a path where the two differ. A merge of k onto ``O[k-1]`` that
conflicts proves nothing here (the placement on the new base finds that conflict and triage
files it); ``O`` then keeps that merge's result for k. Nor does one that changes nothing:
k is then a no-op for want of the left-out patches, which `verdicts.held` names.

``O`` differs from the old chain only on the paths of the left-out patches (a merge changes
a path only where its patch does), so it is kept as those paths' entries; a patch touching
none of them is its own change by that alone, at no cost. Only the replay's chain links
count (``links``): a deferred, brought-back or upstream-marked step is not a change of the old
chain, and a later patch's file never held its lines.

**Kept across commands** (``memory``: a refresh stop by stop resumes its replay at each
stop, and the steps before it were judged by the command before): the state before each
step reached (``O``'s watched entries, the left-out patches) is kept under a digest of every
step before it (its name, trees, paths, whether it is a chain link and whether it was left
out), so that a resumed replay starts from the furthest state it finds instead of judging
every step again. A state read is checked (its blobs exist) and is none otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..git import Git, MergeResult
from .replay import Step

Entry = tuple[str, str] | None
# Where states are kept (`commands.refresh.kept.KeptNeeds`): digest -> state, as plain data.
Memory = tuple[Callable[[], Mapping[str, Any]], Callable[[dict[str, Any]], None]]
KEPT = 64  # states kept, at most (the furthest)


@dataclass(frozen=True)
class Held:
    """A patch left out because its change needs ``root`` (see the module docstring)."""

    name: str
    root: str
    paths: tuple[str, ...]  # where placing it without ``root`` loses or alters its change

    @property
    def note(self) -> str:
        return (
            f"placed without {self.root}, its change to {', '.join(self.paths)} would not be"
            f" its own (it changes lines {self.root} makes): deferred with it, it comes back"
            " with it"
        )


class Needs:
    """The replay's ``hold``: ``held_at(i)`` before placing step i (steps in order; a step
    not shown is judged when a later one is), ``left_out(i)`` when step i conflicted and is
    left out, ``held``: the patches it left out, in order. ``waits``: each knock-on a ``push``
    brings back -> (its root, the root's deferred change), judged against that change while
    the root stays out."""

    def __init__(
        self,
        git: Git,
        steps: Sequence[Step],
        paths_of: Callable[[str], Sequence[str]],
        links: Collection[str],
        missing: Iterable[str] = (),
        waits: Mapping[str, tuple[str, str, str]] | None = None,
        memory: Memory | None = None,
        merges: dict[tuple[str, ...], MergeResult] | None = None,
    ) -> None:
        self.git = git
        self.merges = merges  # `_merge`'s memo (a replay's proofs, `triage.Proofs`)
        self.steps = steps
        self.paths_of = paths_of
        self.links = links
        self.initial = set(missing)
        self.waits = waits or {}
        self.absent = set(self.initial) | {s.name for s in steps if s.deferred}
        self.next = 0  # the first step not seen yet
        self.entries: dict[str, Entry] = {}  # O on the watched paths
        self.missing: list[tuple[str, frozenset[str]]] = []  # left out, in order
        self.held: list[Held] = []
        self.undo: tuple[int, dict[str, Entry]] | None = None
        # A brought-back knock-on is judged apart (`_waiting`): nothing kept then.
        self.memory = memory if not self.waits else None
        self.recalled = False
        self.snaps: dict[int, tuple[dict[str, Entry], list[tuple[str, frozenset[str]]]]] = {}
        self.out: set[int] = set()  # the steps left out, by index

    @property
    def names(self) -> list[str]:
        return [h.name for h in self.held]

    def touches(self, i: int) -> bool:
        """Does step i change a path a left-out patch changes (may it need holding)?"""
        name = self._step(i)[0]
        return bool(self.entries) and name in self.links and self._touching(name)

    def _step(self, i: int) -> tuple[str, str, str]:
        s = self.steps[i]
        return s.name, s.before, s.after

    def _touching(self, name: str) -> bool:
        return any(p in self.entries for p in self.paths_of(name))

    def _snap(self, j: int) -> None:
        """The state before step j (``self.next == j``), to keep (`keep`)."""
        if self.memory is not None and j not in self.snaps:
            self.snaps[j] = (dict(self.entries), list(self.missing))

    def _digests(self, upto: int, out: Collection[int]) -> list[str]:
        """The digest of the steps before each j <= ``upto`` (``out``: those left out)."""
        h = hashlib.sha256(b"needs 1")
        found = [h.hexdigest()]
        for j in range(upto):
            name, before, after = self._step(j)
            link = name in self.links and before != after
            paths = sorted(self.paths_of(name)) if link else []
            h.update(repr((name, before, after, link, j in out, paths)).encode())
            found.append(h.hexdigest())
        return found

    def keep(self) -> None:
        """Keep the states this command reached for the next one (with ``memory``)."""
        if self.memory is None or not self.snaps:
            return
        digests = self._digests(max(self.snaps), self.out)
        made = {}
        for j in sorted(self.snaps)[-KEPT:]:
            entries, missing = self.snaps[j]
            plain = [(p, e[0], e[1]) if e else (p, "", "") for p, e in sorted(entries.items())]
            made[digests[j]] = (j, plain, [(n, sorted(ps)) for n, ps in missing])
        self.memory[1](made)

    def _recall(self, i: int) -> None:
        """Start from the furthest state before step i an earlier command kept, if any."""
        if self.memory is None or self.recalled or self.next != 0 or i == 0:
            return
        self.recalled = True
        found = self.memory[0]()
        if not found:
            return
        initial = [j for j in range(i) if self._step(j)[0] in self.initial]
        digests = self._digests(i, initial)
        for j in range(i, 0, -1):
            state = _state(found.get(digests[j]), j, {s.name for s in self.steps[:j]})
            if state is None:
                continue
            entries, missing = state
            oids = sorted({e[1] for e in entries.values() if e is not None})
            there = self.git.has_objects(oids) if oids else {}
            if not all(there.get(o) for o in oids):
                continue
            self.entries, self.missing, self.next = entries, missing, j
            self.out.update(initial)
            self.undo = None
            return

    def _catch_up(self, i: int) -> None:
        """See the steps before i the replay did not show (a replay resumed at i)."""
        self._recall(i)
        while self.next < i:
            j = self.next
            self._snap(j)
            if self._step(j)[0] in self.initial:
                self.out.add(j)
                self.next = j + 1
                self._leave_out(j)
            else:
                self._judge(j, hold=False)

    def held_at(self, i: int) -> bool:
        """Is step i to be left out, its change needing a left-out patch? (Call once per
        step, in order.)"""
        self._catch_up(i)
        self._snap(i)
        if self._judge(i, hold=True):
            self.out.add(i)
            return True
        return False

    def _judge(self, i: int, hold: bool) -> bool:
        self.next = i + 1
        self.undo = None
        name, before, after = self._step(i)
        if hold and name in self.waits and self.waits[name][0] in self.absent:
            return self._waiting(i)
        if not self.entries or name not in self.links or before == after:
            return False
        if not self._touching(name):
            return False
        git = self.git
        watched = sorted(self.entries)
        ours = git.edit_tree(before, dict(self.entries))
        placed = self._merge(before, ours, after, ("without", name))
        # A patch that changes nothing without them is a no-op naming them (the one verdict,
        # `verdicts.held`, says so and defers it after its root): not held here.
        if placed.clean and placed.tree != ours:
            back = self._merge(ours, placed.tree, before, ("placed", "left out"))
            if hold and (not back.clean or back.tree != after):
                lost = sorted(set(back.conflicted) | set(git.changed_paths(back.tree, after)))
                root = self._root(lost)
                self.held.append(Held(name, root, tuple(lost)))
                self._leave_out(i)
                return True
        self.undo = (i, dict(self.entries))
        found = git.entries_at(placed.tree, watched)
        self.entries = {p: found.get(p) for p in watched}
        return False

    def _waiting(self, i: int) -> bool:
        """A deferred knock-on brought back (its change from where it was deferred) while
        its root stays out: the same rule, its root's change being the one left out."""
        name, before, after = self._step(i)
        root, root_before, _root_after = self.waits[name]
        git = self.git
        paths = list(self.paths_of(root))
        found = git.entries_at(root_before, paths)
        ours = git.edit_tree(before, {p: found.get(p) for p in paths})
        placed = self._merge(before, ours, after, ("without", name))
        if not placed.clean or placed.tree == ours:
            return False  # the placement meets the conflict (triage files it), or a no-op
        back = self._merge(ours, placed.tree, before, ("placed", "left out"))
        if back.clean and back.tree == after:
            return False
        lost = sorted(set(back.conflicted) | set(git.changed_paths(back.tree, after)))
        self.held.append(Held(name, root, tuple(lost)))
        self.absent.add(name)
        return True

    def _merge(self, base: str, ours: str, theirs: str, labels: tuple[str, str]) -> MergeResult:
        """`Git.merge_trees`, looked up in ``merges`` first and kept there: with a replay's
        proofs (`triage.Proofs`), kept for the next command under what decides a merge, so a
        refresh made again (after an ``undo``) asks git none of the merges it judged by."""
        memo = self.merges
        key = ("needs", base, ours, theirs, *labels)
        found = memo.get(key) if memo is not None else None
        if found is None:
            found = self.git.merge_trees(base, ours, theirs, labels)
            if memo is not None:
                memo[key] = found
                made = getattr(memo, "made", None)  # (`triage.Proofs`: a later command's)
                if made is not None:
                    made[key] = None
        return found

    def _root(self, lost: Sequence[str]) -> str:
        for name, paths in reversed(self.missing):
            if paths.intersection(lost):
                return name
        return self.missing[-1][0]

    def left_out(self, i: int) -> None:
        """Step i conflicted and is left out: O keeps what it was before it."""
        self._catch_up(i)
        if self.undo is not None and self.undo[0] == i:
            self.entries = self.undo[1]
        self.undo = None
        self._snap(i)
        self.next = max(self.next, i + 1)
        self.out.add(i)
        self._leave_out(i)

    def _leave_out(self, i: int) -> None:
        name, before, after = self._step(i)
        self.absent.add(name)
        if name not in self.links or before == after:
            return
        paths = frozenset(self.paths_of(name))
        new = sorted(paths - set(self.entries))
        if new:
            found = self.git.entries_at(before, new)
            self.entries.update({p: found.get(p) for p in new})
        self.missing.append((name, paths))


def _state(
    found: Any, j: int, names: Collection[str]
) -> tuple[dict[str, Entry], list[tuple[str, frozenset[str]]]] | None:
    """A kept state before step j, as `Needs.keep` kept it; None when not one."""
    try:
        at, plain, missing = found
        entries: dict[str, Entry] = {}
        for path, mode, oid in plain:
            if not all(isinstance(x, str) for x in (path, mode, oid)):
                return None
            entries[path] = (mode, oid) if mode else None
        out = []
        for name, paths in missing:
            if name not in names or not all(isinstance(p, str) for p in paths):
                return None
            out.append((name, frozenset(paths)))
    except (TypeError, ValueError):
        return None
    return (entries, out) if at == j else None
