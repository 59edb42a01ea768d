"""Which upstream a series is compared with when no ``--onto`` names one: the one definition
(docs/architecture.md, "Upstream: what a series is compared with") that ``status``'s drift,
``check``, ``refresh``'s note and ``import branch``'s note all take, and the hints that name
a target name.

1. The branch the series tracks, its ``# base: ID REF`` line's REF (``refresh --onto REF``
   and ``import branch --upstream REF`` write it), where REF is a branch that exists (local or
   remote-tracking) and is not the branch HEAD is on: the series' base was taken from it.
2. Else HEAD's ``@{upstream}``.
3. Else none: ``status`` guesses the remote's default branch (and says so), ``check`` checks
   HEAD below the applied patches (and says so).

Why the series' ref first: a team's branch tracks its own published branch (``git checkout -B
work origin/me/feature``), whose commits are the fork's own; taken for upstream, they would be
counted as upstream's drift and every patch they carry called ``upstream``."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..checkout import Checkout
from ..model.ids import Oid
from ..model.series import Series

SERIES = "series"  # the branch the series tracks (its base line's ref)
TRACKING = "tracking"  # HEAD's @{upstream}: the series names no branch that exists
NONE = ""
_NOT_A_NAME = re.compile(r"[~^:?*\[\\\s]|@\{|\.\.")  # a revision, not a branch's name


@dataclass(frozen=True)
class Upstream:
    name: str | None  # the ref as the user wrote it; None: neither the series nor HEAD names one
    oid: Oid | None
    why: str  # SERIES, TRACKING or NONE
    tracking: str | None  # HEAD's @{upstream}, whichever was taken

    @property
    def passed_over(self) -> str | None:
        """HEAD's ``@{upstream}`` where the series' branch was taken instead of it."""
        if self.why != SERIES or not self.tracking or self.name is None:
            return None
        return None if _short(self.tracking) == _short(self.name) else self.tracking

    def note(self) -> str:
        """The one line that says which ref was taken and why, where HEAD's ``@{upstream}``
        is another ("" elsewhere)."""
        other = self.passed_over
        return upstream_note(self.name, other) if self.name and other else ""


def upstream_note(name: str, passed_over: str) -> str:
    """Which upstream was taken and why, where HEAD's ``@{upstream}`` is another: one line
    ("compared with" this)."""
    return (
        f"{name}, the branch the series tracks (# base:), not with HEAD's @{{upstream}}"
        f" {passed_over}"
    )


def upstream_target(ws: Checkout, series: Series) -> Upstream:
    """The upstream of ``series`` in this checkout (see the module's docstring)."""
    git = ws.git
    tracking = git.upstream_of_head()
    ref = series.base_ref
    found = _branch(ws, ref) if ref else None
    if ref and found is not None:
        return Upstream(ref, found, SERIES, tracking)
    if tracking:
        oid = git.rev_parse(tracking)
        if oid is not None:
            return Upstream(tracking, oid, TRACKING, tracking)
    return Upstream(None, None, NONE, tracking)


_ID = re.compile(r"[0-9a-f]{7,64}\Z")  # a commit id, as `refresh --onto` tells one


def base_line_ref(ws: Checkout, series: Series, onto: str, new_base: str) -> str:
    """The REF the ``# base:`` line names after ``refresh --onto ONTO`` (docs/architecture.md,
    "Upstream"): ONTO where it names a branch (`_branch`); otherwise (a commit id, a revision
    such as ``origin/main~40``, a tag, ``refs/...``: no branch to follow) the branch the series
    tracks where that branch's history holds the new base (the series follows it still, from
    an older point of it). Where it is a branch here that does not hold it, the series no
    longer follows it: an id leaves the line naming none (""), anything else is written as
    given, as before (a label, which names no branch). Where the old REF names no branch here
    (nothing tells), an id keeps it."""
    if _branch(ws, onto) is not None:
        return onto
    commit = bool(_ID.match(onto))
    old = series.base_ref
    tip = _branch(ws, old) if old else None
    if old and tip is None:
        return old if commit else onto
    if tip is not None:
        from .state import is_ancestor

        if is_ancestor(ws, new_base, tip):
            return old or onto
    return "" if commit else onto


def _branch(ws: Checkout, ref: str) -> Oid | None:
    """The commit of the branch ``ref`` names (``refs/heads/REF``, ``refs/remotes/REF``, or a
    full ``refs/heads/...``, ``refs/remotes/...`` name), or None: no such branch, or it is
    the branch HEAD is on (which carries the patches: never upstream)."""
    git = ws.git
    if _NOT_A_NAME.search(ref):
        return None
    if ref.startswith(("refs/heads/", "refs/remotes/")):
        names = [ref]
    elif ref.startswith("refs/") or ref == "HEAD" or not ref:
        return None
    else:
        names = [f"refs/heads/{ref}", f"refs/remotes/{ref}"]
    for full in names:
        oid = git.rev_parse(full)
        if oid is None:
            continue
        if full.startswith("refs/heads/") and full == git.head_ref():
            return None
        return oid
    return None


def _short(ref: str) -> str:
    for prefix in ("refs/heads/", "refs/remotes/"):
        if ref.startswith(prefix):
            return ref.removeprefix(prefix)
    return ref
