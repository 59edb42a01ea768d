"""The verdict of each replayed patch, and the new bytes of the patch files that change.

``unchanged``: the change ``T[k-1] -> T[k]`` has the very blobs and modes of ``C[k-1] -> C[k]``,
so its diff is the same text and the file keeps its bytes (it is not even rewritten).
A patch that changes nothing on the new base (``T[k] == T[k-1]``) is judged by `held`, the one
place that says ``upstream``, ``no-op`` or ``unknown`` (definitions in
``docs/architecture.md``, "Verdicts"). Otherwise the file
is regenerated with ``format-patch`` from a commit with the patch's own author, date and message,
so only the diff part changes: ``offset`` when every hunk has the same lines as before (only
line numbers and blob ids moved), ``merged`` when the hunks' lines changed. ``conflict``: the
merge did not resolve. ``deferred``: left out, its file kept as it was (``refresh --skip``,
``--defer-conflicts``), until ``push NAME`` brings it back.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..git import Git
from ..model.conflict import UpstreamCommit
from ..model.ids import Oid
from ..model.patchfile import Patch, parse_patch
from .chain import Engine
from .evidence import SELF, History, brought, first_holding, history
from .landings import Lands, keep_lands, keys, on_old_base
from .madeby import Raws, prefetched, removes_made_by
from .replay import Done, Step

UPSTREAM, NO_OP, UNKNOWN = "upstream", "no-op", "unknown"


def same_hunks(a: Patch, b: Patch) -> bool:
    def key(p: Patch) -> list[tuple[str, bool, tuple[tuple[str, ...], ...]]]:
        return [(f.path, f.binary, tuple(h.lines for h in f.hunks)) for f in p.files]

    return key(a) == key(b)


@dataclass(frozen=True)
class Classified:
    verdicts: dict[str, str]
    data: dict[str, bytes]  # new bytes of the patch files that change


def classify(
    git: Git,
    engine: Engine,
    steps: Sequence[Step],
    done: Sequence[Done],
    commits: dict[str, Oid],
) -> Classified:
    by_name = {s.name: s for s in steps}
    carried = [d for d in done if not d.upstream]
    raws = git.raw_diffs(
        [(by_name[d.name].before, by_name[d.name].after) for d in carried]
        + [(d.parent, d.tree) for d in carried]
    )
    old_raw, new_raw = raws[: len(carried)], raws[len(carried) :]
    verdicts: dict[str, str] = {}
    data: dict[str, bytes] = {}
    for d in done:
        if d.upstream:
            verdicts[d.name] = "upstream"
    moved = [
        d
        for d, old, new in zip(carried, old_raw, new_raw, strict=True)
        if sorted(old) != sorted(new)
    ]
    from ..model import message, trailers  # (a skip at a stop rewrites no message)

    texts = format_chain(git, commits, [d.name for d in moved])
    for d, old, new in zip(carried, old_raw, new_raw, strict=True):
        lp = engine.patch(d.name)
        if sorted(old) == sorted(new):
            verdicts[d.name] = "unchanged"
            continue
        text = trailers.strip_from_mail(texts[d.name])
        text = message.keep_head(lp.data, message.line_offset(lp.data, lp.patch.diff_lineno), text)
        if text == lp.data:
            verdicts[d.name] = "unchanged"
            continue
        fresh = parse_patch(text, d.name, lp.entry.strip_level)
        data[d.name] = text
        verdicts[d.name] = "offset" if same_hunks(lp.patch, fresh) else "merged"
    return Classified(verdicts, data)


def format_chain(git: Git, commits: dict[str, Oid], wanted: Sequence[str]) -> dict[str, bytes]:
    """format-patch output of the commits of ``wanted`` (of ``commits``): one process for
    them all when several are wanted."""
    if len(wanted) < 2:
        return {n: git.format_patch(commits[n]) for n in wanted}
    texts = git.format_commits([commits[n] for n in wanted])
    return dict(zip(wanted, texts, strict=True))


@dataclass(frozen=True)
class Held:
    """The verdict of a patch that changes nothing on the new base: ``upstream`` with the
    commit that brought it, ``no-op`` with the left-out patches whose absence makes it one,
    or ``unknown``."""

    verdict: str
    evidence: UpstreamCommit | None = None
    missing: tuple[str, ...] = ()

    @property
    def note(self) -> str:
        if self.verdict == NO_OP:
            return (
                f"changes nothing without {', '.join(self.missing)} (left out): it repeats or"
                " reverts what that changes"
            )
        if self.verdict == UNKNOWN:
            return "changes nothing on the new base; no upstream commit is known to bring it"
        return ""


class Kept(Lands, Protocol):
    """The verdicts kept from one command for the next (a refresh stop by stop judges the
    same patches at every stop), each under the digest of everything that decides it, with
    the landings at the old base (`landings.Lands`)."""

    def get(self, key: str, name: str) -> Held | None: ...

    def put(self, key: str, name: str, held: Held) -> None: ...

    def walk(self, old_base: str, new_base: str) -> History | None:
        """The upstream walk (`evidence.history`) an earlier command kept, if any."""

    def keep_walk(self, walked: History, new_base: str) -> None: ...


def held(
    git: Git,
    steps: Sequence[Step],
    names: Collection[str],
    missing: Collection[str],
    old_base: str | None,
    new_base: str,
    recorded: Mapping[str, UpstreamCommit] = {},
    kept: tuple[Kept, str] | None = None,
) -> dict[str, Held]:
    """The verdict of each of ``names`` (patches that change nothing on ``new_base``, the
    patches of ``missing`` left out there: deferred, unselected, conflicting). ``recorded``:
    the upstream commit an earlier refresh proved brought a patch (its mark's); ``kept``:
    the verdicts kept by earlier commands, and what else decides a merge (`keys`): a
    verdict found there is not made again, one made is kept.

    ``upstream``: placed where it lands on the old base with the same patches left out, it
    changes something, and the named upstream commit is the first after which it changes
    nothing (`evidence.first_holding`), checked by the definition (`evidence.brought`: what
    the mark it writes claims, checked again when read). ``no-op``: it changes nothing there
    either, and a patch left out before it is why (the one touching its files, else every
    one); or it removes a line a patch left out before it made that no upstream version had
    (the old base to the named commit's parent; `madeby.removes_made_by`), naming those: no
    upstream commit removed it. Otherwise ``unknown``. A patch with a change of its own where
    no base moved (a deferred patch brought back) is searched for from its change's parent."""
    wanted = [s for s in steps if s.name in names]
    if not wanted:
        return {}
    fresh = [s for s in wanted if s.name not in recorded]
    digests: dict[str, str] = {}
    out: dict[str, Held] = {}
    if kept is not None and fresh:
        digests = keys(steps, {s.name for s in fresh}, missing, old_base, new_base, kept[1])
        for s in fresh:
            found = kept[0].get(digests[s.name], s.name)
            if found is not None:
                out[s.name] = found
    lands: dict[str, Oid] | None = None  # made only for a verdict not kept
    raws: Raws | None = None
    moved = bool(old_base) and old_base != new_base
    index = {s.name: q for q, s in enumerate(steps)}
    walked: dict[str, History] = {}
    for s in wanted:
        if s.name in recorded:
            out[s.name] = Held(UPSTREAM, recorded[s.name])
            continue
        if s.name in out:
            continue
        if lands is None:
            lands = on_old_base(git, steps, missing, old_base, wanted[-1].name, kept, new_base)
            todo = [t for t in wanted if t.name not in recorded and t.name not in out]
            raws = prefetched(git, steps, todo, missing)
        made = removes_made_by(git, steps, s, missing, raws)
        q = index[s.name]
        base, there = old_base, lands.get(s.name, s.before)
        if not moved and s.commit and q and steps[q - 1].after != s.before:
            base, there = s.commit + "^", s.before  # brought back: its change's own parent
        if not base:
            out[s.name] = _no_op_if_never(git, made, [new_base], Held(UNKNOWN))
        else:
            if base not in walked:
                was = kept[0].walk(base, new_base) if kept is not None else None
                walked[base] = was or history(git, base, new_base)
                if kept is not None and was is None:
                    kept[0].keep_walk(walked[base], new_base)
            versions = (old_base or new_base, new_base)
            out[s.name] = _judged(git, steps, s, missing, made, walked[base], there, versions)
        if kept is not None:
            kept[0].put(digests[s.name], s.name, out[s.name])
    if lands is None and kept is not None:  # all kept: what made them is read, to keep it
        keep_lands(git, steps, missing, old_base, wanted[-1].name, kept, new_base)
        if old_base:
            kept[0].walk(old_base, new_base)
    return {s.name: out[s.name] for s in wanted}


def _judged(
    git: Git,
    steps: Sequence[Step],
    s: Step,
    missing: Collection[str],
    made: dict[str, set[tuple[str, bytes]]],
    walked: History,
    there: Oid,
    versions: tuple[str, str],
) -> Held:
    """The verdict of ``s`` placed on ``there`` at the old base (see `held`); ``versions``:
    (the old base, else the new; the new base), where a line it removes may have been."""
    hit = first_holding(git, s.before, s.after, walked, there)
    start, new_base = versions
    if hit == SELF:
        gone = tuple(made) or _why_no_op(git, steps, s, missing)
        return Held(NO_OP, missing=gone) if gone else Held(UNKNOWN)
    if isinstance(hit, UpstreamCommit) and hit.oid and brought(git, s.before, s.after, hit.oid):
        # C's parent may "change something" only by a conflict for want of a left-out
        # patch's context: C did not remove a line no upstream version had
        return _no_op_if_never(git, made, [start, hit.oid + "^"], Held(UPSTREAM, hit))
    return _no_op_if_never(git, made, [start, new_base], Held(UNKNOWN))


def _why_no_op(
    git: Git, steps: Sequence[Step], step: Step, missing: Collection[str]
) -> tuple[str, ...]:
    """The patches left out before ``step`` whose absence makes it a no-op: those that touch
    one of its files, else every one."""
    k = next(i for i, s in enumerate(steps) if s.name == step.name)
    before = [s for s in steps[:k] if s.name in missing or s.deferred]
    if not before:
        return ()
    mine = set(git.changed_paths(step.before, step.after))
    touching = [s.name for s in before if mine & set(_paths(git, s))]
    return tuple(touching or [s.name for s in before])


def _no_op_if_never(
    git: Git, made: Mapping[str, set[tuple[str, bytes]]], versions: Sequence[str], held: Held
) -> Held:
    """``no-op`` naming the left-out patches of ``made`` one of whose lines (that the patch
    removes) no upstream version of its file has had from the first of ``versions`` to the
    last (each commit between that touched the file, first parent or not): the base lacks it
    because that patch is missing, and no upstream commit removed it; else ``held``. (Not
    the ends alone: upstream may have taken the left-out patch's line and removed it again,
    taking this patch: label seed 9200010.)"""
    files: dict[tuple[str, str], set[bytes]] = {}
    between: dict[str, list[str]] = {}

    def touched(path: str) -> list[str]:
        if path not in between:
            between[path] = []
            if len(versions) > 1 and versions[0] != versions[-1]:
                rng = f"{versions[0]}..{versions[-1]}"
                between[path] = [c for c, _p, _s in git.log_commits(rng, [path])]
        return between[path]

    def has(rev: str, path: str, line: bytes) -> bool:
        if (rev, path) not in files:
            files[rev, path] = set((git.show_file(rev, path) or b"").split(b"\n"))
        return line in files[rev, path]

    def had(path: str, line: bytes) -> bool:
        return any(has(rev, path, line) for rev in versions) or any(
            has(rev, path, line) for rev in touched(path)
        )

    never = tuple(n for n, lines in made.items() if not all(had(p, ln) for p, ln in lines))
    return Held(NO_OP, missing=never) if never else held


def _paths(git: Git, step: Step) -> list[str]:
    if step.before != step.after:
        return git.changed_paths(step.before, step.after)
    if step.commit and git.has_objects([step.commit])[step.commit]:
        return git.changed_paths(step.commit + "^", step.commit)
    return []
