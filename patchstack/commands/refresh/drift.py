"""How far upstream moved since the series base (for ``status``): the commits between the base
and the upstream (`tracked`: the branch the series tracks, else ``@{upstream}``; or HEAD below
the stack), and those of them that touch files the patches touch. Where neither names one, the
remote's default branch stands in for it (and status says so): a fork cloned without tracking
must not read "nothing to do" while upstream moves."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

from ...checkout import Checkout
from ...git import Git
from ...git.base import under_any
from ...model.ids import Oid
from ..state import check_base, is_ancestor, read_stack
from ..tracked import upstream_target


@dataclass(frozen=True)
class DriftCommit:
    oid: str
    subject: str
    files: tuple[str, ...]
    patches: tuple[str, ...]


@dataclass(frozen=True)
class Drift:
    base: str
    target: str
    target_name: str
    commits: int
    touching: tuple[DriftCommit, ...]
    every: tuple[tuple[str, str], ...] = ()  # every upstream commit (id, subject), oldest first
    guessed: str = ""  # why target_name was guessed: neither the series nor HEAD names one
    why: str = ""  # `tracked`: SERIES (the branch the series tracks), TRACKING, or "" (none)
    passed_over: str | None = None  # HEAD's @{upstream}, where the series' branch was taken

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "target": self.target,
            "target_name": self.target_name,
            "guessed": self.guessed or None,
            "upstream": self.why or None,
            "passed_over": self.passed_over,
            "commits": self.commits,
            "touching": [asdict(c) for c in self.touching],
            "all": [{"oid": oid, "subject": subject} for oid, subject in self.every],
        }


def drift(ws: Checkout, stack_base: Oid | None = None) -> Drift | None:
    """``stack_base``: the applied stack's base, when the caller has read the stack."""
    git = ws.git
    if not ws.exists():
        return None  # a first 'import branch' stopped at a conflict: no series yet
    series = ws.load_series()
    base = series.base
    if not base or not check_base(ws, series):
        return None
    up = upstream_target(ws, series)
    upstream, why = up.name, up.why
    below = stack_base or read_stack(git).base
    guessed = ""
    if upstream is None and below == base:  # HEAD did not move: look at the remote
        upstream, guessed = _guess_upstream(ws)
    found = up.oid if up.oid is not None else git.rev_parse(upstream) if upstream else None
    name = upstream or "HEAD"
    target = found if found is not None else below
    passed = up.passed_over
    if target == base:
        return Drift(base, target, name, 0, (), guessed=guessed, why=why, passed_over=passed)
    head = git.head()
    if guessed and head is not None and is_ancestor(ws, target, head):
        # The remote holds this fork's own history (the fork published there, with
        # 'refresh --publish ff' or not): above the base it is patches, never upstream's.
        return Drift(base, base, name, 0, (), guessed=guessed, why=why, passed_over=passed)
    owners: dict[str, list[str]] = {}
    for e in series.entries:
        for p in ws.proven_bytes(e)[1].paths:
            owners.setdefault(p, []).append(e.name)
    key = _cache_key(base, target, owners)
    known = ws.store.get(CACHE, key)  # kept only where base is an ancestor of target
    if known is None and not is_ancestor(ws, base, target):
        return Drift(base, target, name, 0, (), guessed=guessed, why=why, passed_over=passed)
    if known is not None:
        count, touching_, every_ = known
        return Drift(
            base,
            target,
            name,
            count,
            tuple(DriftCommit(o, s, tuple(f), tuple(n)) for o, s, f, n in touching_),
            tuple((o, s) for o, s in every_),
            guessed,
            why,
            passed,
        )
    count, touching, every = walk(git, base, target, owners)
    ws.store.put(
        CACHE,
        key,
        (count, [(c.oid, c.subject, list(c.files), list(c.patches)) for c in touching], every),
    )
    return Drift(base, target, name, count, tuple(touching), tuple(every), guessed, why, passed)


CACHE = "drift"  # the store's section: a drift by (base, upstream tip, what each patch touches)


def _cache_key(base: str, target: str, owners: dict[str, list[str]]) -> str:
    digest = hashlib.sha256(repr(sorted(owners.items())).encode("utf-8", "surrogateescape"))
    return f"{base} {target} {digest.hexdigest()}"


def walk(
    git: Git, base: str, target: str, owners: dict[str, list[str]]
) -> tuple[int, list[DriftCommit], list[tuple[str, str]]]:
    """The commits of base..target (upstream's, not a merged stack's), and those of them that
    touch a file of the series (``owners``: a path and the patches that change it): what
    `drift` caches and the review's picture of the move shows.

    One walk of the range with the paths each commit changed, filtered here: never the
    series' paths as a pathspec, which git matches slowly when there are hundreds. The
    commits kept are those ``git log -- <paths>`` shows, in its order (`_simplified`)."""
    from ...model import trailers  # (a drift known to the cache is not walked)

    rng = f"{base}..{target}"
    logged = git.log_paths(rng)  # newest first
    ours = set(git.rev_list("--extended-regexp", f"--grep={trailers.PATCH_COMMIT_GREP}", rng))
    every = [(str(oid), subject) for oid, _p, subject, _f in reversed(logged) if oid not in ours]
    touching = []
    if owners:
        shown = _simplified(git, base, logged, owners)
        for oid, _parents, subject, changed in reversed(logged):
            if oid in shown and oid not in ours:
                hit = [f for f in changed if f in owners]
                patches = tuple(dict.fromkeys(n for f in hit for n in owners[f]))
                touching.append(DriftCommit(oid, subject, tuple(hit), patches))
    return len(every), touching, every


def _simplified(
    git: Git,
    base: str,
    logged: list[tuple[Oid, tuple[Oid, ...], str, tuple[str, ...]]],
    owners: dict[str, list[str]],
) -> set[Oid]:
    """The commits of ``logged`` (a range, newest first) that git's default history
    simplification for the pathspec of ``owners`` shows: a commit is TREESAME to a parent
    when no path of ``owners`` (or under it) differs; a merge TREESAME to a parent inside the
    range (or the base) is hidden and only that parent is followed, so a side it did not take
    is not shown; another commit is shown unless TREESAME to every parent."""
    commits = {oid: (parents, changed) for oid, parents, _s, changed in logged}
    touches = {
        oid: any(under_any(f, owners) for f in changed) for oid, (_p, changed) in commits.items()
    }

    def relevant(p: str) -> bool:
        return p in commits or p == base

    # A merge's other parents are compared only where its first parent does not settle it.
    unsettled = [
        oid
        for oid, (parents, _c) in commits.items()
        if len(parents) > 1 and (touches[oid] or not relevant(parents[0]))
    ]
    wanted = list(dict.fromkeys(c for oid in unsettled for c in (oid, *commits[oid][0][1:])))
    paths = sorted(owners)
    entries = dict(zip(wanted, git.entries_in(git.trees_of(wanted), paths), strict=True))

    follow: dict[Oid, tuple[Oid, ...]] = {}
    shown: set[Oid] = set()
    for oid, (parents, _changed) in commits.items():
        same = [not touches[oid]]
        if len(parents) > 1:
            same += [entries[oid] == entries[p] if oid in entries else False for p in parents[1:]]
        taken = next((p for p, t in zip(parents, same, strict=False) if t and relevant(p)), None)
        if len(parents) > 1 and taken is not None:
            follow[oid] = (taken,)
            continue
        follow[oid] = parents
        if len(parents) <= 1:
            if touches[oid]:
                shown.add(oid)
        elif any(relevant(p) for p in parents) or not all(same):
            shown.add(oid)  # it differs from every parent in the range
    reached: set[Oid] = set()
    todo = [logged[0][0]] if logged else []
    while todo:
        oid = todo.pop()
        if oid in reached or oid not in commits:
            continue
        reached.add(oid)
        todo.extend(follow[oid])
    return shown & reached


def _guess_upstream(ws: Checkout) -> tuple[str | None, str]:
    """Where neither the series nor HEAD names an upstream (`tracked`): the remote's default
    branch (origin/HEAD, origin/main), and why it was chosen."""
    found = ws.git.remote_default()
    return (found, "the remote's default branch") if found else (None, "")


def no_upstream_note(ws: Checkout) -> str:
    """What a check against HEAD, for want of an upstream, did not check, and how to name one."""
    guess, _why = _guess_upstream(ws)
    onto = guess or "origin/main"
    return (
        "no upstream: the series tracks no branch here, this branch has no @{upstream}, and no"
        " --onto was given: checked against HEAD, not against upstream; 'patchstack check"
        f" --onto {onto}' checks against it"
    )
