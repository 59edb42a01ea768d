"""Where each patch lands at the old base with the patches left out on the new one left out
too (`on_old_base`): `verdicts.held` places a patch that changes nothing on the new base there
to search upstream for the commit that took it. The landings are kept from one command of a
refresh stop by stop for the next (`Lands`, under `keys`), so a skip replays only the steps
after those kept."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Sequence
from typing import Protocol

from ..git import Git
from ..model.ids import Oid
from .contract import enabled
from .replay import Step, replay


class Lands(Protocol):
    """Where an earlier command's replay at the old base landed each step (`verdicts.Kept`
    keeps them with the verdicts)."""

    def land(self, key: str) -> tuple[str, str] | None:
        """(the old base's chain tree after a step, the tree it landed on or "" when the
        chain left it out) kept under ``key`` (`on_old_base`), if any."""

    def keep_land(self, key: str, after: str, parent: str) -> None: ...


KEY = "held-2"  # bumped when what decides a verdict changes (its inputs, its code)


def keys(
    steps: Sequence[Step],
    names: Collection[str],
    missing: Collection[str],
    old_base: str | None,
    new_base: str,
    inputs: str,
) -> dict[str, str]:
    """The key of each of ``names``' verdict: a digest of the bases, ``inputs`` (what else
    decides a merge: `git.attributes.merge_inputs`) and every step up to it, left out or not.
    A verdict reads nothing of the steps after its patch (`verdicts.held`, `on_old_base`)."""
    left_out = set(missing)
    h = hashlib.sha256(repr((KEY, old_base, new_base, enabled(), inputs)).encode())
    out = {}
    for s in steps:
        h.update(repr((s.name, s.before, s.after, s.real, s.commit, s.deferred)).encode())
        h.update(b"\1" if s.name in left_out else b"\0")
        if s.name in names:
            out[s.name] = h.copy().hexdigest()
    return out


def on_old_base(
    git: Git,
    steps: Sequence[Step],
    missing: Collection[str],
    old_base: str | None,
    last: str,
    kept: tuple[Lands, str] | None = None,
    new_base: str = "",
) -> dict[str, Oid]:
    """The tree each patch lands on at the old base with ``missing`` left out (as on the
    new base), from the first step off the old chain (left out, or with a change of its own);
    a patch before it lands on its old chain's tree (``Step.before``). ``kept``: where each
    step landed as an earlier command replayed them, under the digest of the steps up to it
    and what decides a merge (`keys`): the replay goes on after the last one kept."""
    off = _off(git, steps, missing, old_base, last)
    if off is None or not old_base:
        return {}
    steps = steps[: next(q for q, s in enumerate(steps) if s.name == last) + 1]
    tree = steps[off - 1].after if off else git.tree_of(old_base)
    labels = ("old base", "old base")
    skip = frozenset(missing)
    found: dict[str, Oid] = {}
    digests: dict[str, str] = {}
    if kept is not None:
        names = {s.name for s in steps[off:]}
        digests = keys(steps, names, missing, old_base, new_base, kept[1])
        tree, off, found = _landed(git, steps, off, tree, kept[0], digests)
    done, _conflicts = replay(git, steps, off, tree, labels, keep_going=True, skip=skip)
    if kept is not None:
        placed = {d.name: d for d in done}
        for s in steps[off:]:
            d = placed.get(s.name)
            tree = d.tree if d else tree
            kept[0].keep_land("land " + digests[s.name], tree, d.parent if d else "")
    return found | {d.name: d.parent for d in done}


def _off(
    git: Git, steps: Sequence[Step], missing: Collection[str], old_base: str | None, last: str
) -> int | None:
    """The first step up to ``last`` off the old chain (left out, or with a change of its
    own), where `on_old_base` replays from; None when there is none."""
    if not old_base:
        return None
    start = git.tree_of(old_base)
    for q, s in enumerate(steps):
        joined = s.before == (steps[q - 1].after if q else start)
        if s.name in missing or s.deferred or not joined:
            return q
        if s.name == last:
            return None
    return None


def keep_lands(
    git: Git,
    steps: Sequence[Step],
    missing: Collection[str],
    old_base: str | None,
    last: str,
    kept: tuple[Lands, str],
    new_base: str,
) -> None:
    """Every verdict up to ``last`` was kept: the landings kept with them are read all the
    same, so that the cache keeps them while stops that judge nothing new go by (an entry no
    recent command read is dropped, `store`); the first patch to be judged anew after them
    then replays only the steps after those kept instead of all of them again."""
    off = _off(git, steps, missing, old_base, last)
    if off is None:
        return
    steps = steps[: next(q for q, s in enumerate(steps) if s.name == last) + 1]
    digests = keys(steps, {s.name for s in steps[off:]}, missing, old_base, new_base, kept[1])
    for s in steps[off:]:
        if kept[0].land("land " + digests[s.name]) is None:
            break


def _landed(
    git: Git, steps: Sequence[Step], off: int, tree: Oid, kept: Lands, digests: dict[str, str]
) -> tuple[Oid, int, dict[str, Oid]]:
    """(the chain's tree after the steps from ``off`` an earlier command kept, the first step
    not kept, where the kept ones landed); kept trees this repository lacks are none."""
    found: list[tuple[str, str, str]] = []
    for s in steps[off:]:
        got = kept.land("land " + digests[s.name])
        if got is None:
            break
        found.append((s.name, *got))
    have = git.has_objects(sorted({t for _n, a, p in found for t in (a, p) if t}))
    for q, (_n, after, parent) in enumerate(found):
        if not have.get(after) or (parent and not have.get(parent)):
            found = found[:q]
            break
    if not found:
        return tree, off, {}
    lands = {n: Oid(p) for n, _a, p in found if p}
    return Oid(found[-1][1]), off + len(found), lands
