"""How far upstream moved since the series base (for ``status``): the commits between the base
and the upstream ref (or HEAD below the stack), and those of them that touch files the patches
touch. Without an ``@{upstream}``, the remote's default branch stands in for it (and status
says so): a fork cloned without tracking must not read "nothing to do" while upstream moves."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...checkout import Checkout
from ...model import trailers
from ...model.ids import Oid
from ..state import check_base, read_stack


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
    guessed: str = ""  # why target_name was chosen, when HEAD has no @{upstream}

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "target": self.target,
            "target_name": self.target_name,
            "guessed": self.guessed or None,
            "commits": self.commits,
            "touching": [asdict(c) for c in self.touching],
            "all": [{"oid": oid, "subject": subject} for oid, subject in self.every],
        }


def drift(ws: Checkout, stack_base: Oid | None = None) -> Drift | None:
    """``stack_base``: the applied stack's base, when the caller has read the stack."""
    git = ws.git
    series = ws.load_series()
    base = series.base
    if not base or not check_base(ws, series):
        return None
    upstream = git.upstream_of_head()
    below = stack_base or read_stack(git).base
    guessed = ""
    if upstream is None and below == base:  # HEAD did not move: look at the remote
        upstream, guessed = _guess_upstream(ws, series.base_ref)
    found = git.rev_parse(upstream) if upstream else None
    name = upstream or "HEAD"
    target = found if found is not None else below
    if target == base or not git.is_ancestor(base, target):
        return Drift(base, target, name, 0, (), guessed=guessed)
    owners: dict[str, list[str]] = {}
    for e in series.entries:
        for p in ws.proven_bytes(e)[1].paths:
            owners.setdefault(p, []).append(e.name)
    rng = f"{base}..{target}"
    grep = trailers.PATCH_COMMIT_GREP  # a merged stack's own commits are not upstream's
    listed = git.log_commits(rng, exclude_grep=grep)
    count = len(listed)
    touching = []
    if owners:
        commits = git.log_commits(rng, sorted(owners), exclude_grep=grep)
        files = git.commit_files([(oid, parents) for oid, parents, _s in commits])
        for (oid, _parents, subject), changed in zip(commits, files, strict=True):
            hit = [f for f in changed if f in owners]
            patches = tuple(dict.fromkeys(n for f in hit for n in owners[f]))
            touching.append(DriftCommit(oid, subject, tuple(hit), patches))
    every = tuple((oid, subject) for oid, _parents, subject in listed)
    return Drift(base, target, name, count, tuple(touching), every, guessed)


def _guess_upstream(ws: Checkout, base_ref: str | None) -> tuple[str | None, str]:
    """Without an ``@{upstream}``: the remote-tracking branch the series base was taken from,
    else the remote's default branch (origin/HEAD, origin/main), and why it was chosen."""
    git = ws.git
    if base_ref and git.ref_exists(f"refs/remotes/{base_ref}"):
        return base_ref, "the branch the series base was taken from"
    found = git.remote_default()
    return (found, "the remote's default branch") if found else (None, "")
