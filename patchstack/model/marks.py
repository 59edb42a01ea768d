"""Header marks of the series file: patches whose file is from before a refresh, each carried
by the commit of its change where that file was made (kept by the operation log).

- ``# deferred: NAME COMMIT [after ROOT [primary|no-op]]``: it conflicted and was left out
  (``refresh --skip``, ``--defer-conflicts``) until ``push NAME`` brings it back; ``after
  ROOT``: it waits for the patch ROOT and comes back with it, a knock-on of it, or with
  ``primary`` a patch held for it that conflicts on its own too (`engine.triage`), or with
  ``no-op`` one that changes nothing without ROOT (`engine.verdicts`' ``no-op``: it did not
  conflict).
- ``# upstream: NAME COMMIT [in UPSTREAM]``: the base holds its change (a refresh found the
  patch changing nothing there), kept in the series until ``--drop-merged`` or ``delete``;
  ``in UPSTREAM``: the upstream commit proven to bring it (`engine.verdicts.held`); without
  it the verdict is ``unknown``, and nothing drops or advises dropping the patch.

Each is a claim, checked where it is used (`engine.claims`).

Both kinds add nothing to the canonical chain. quilt ignores comments, and applies the patch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

DEFERRED, UPSTREAM = "deferred", "upstream"
_MARK_RE = re.compile(
    r"#\s*(deferred|upstream):\s*(\S+)\s+(\S+)(?:\s+(after|in)\s+(\S+)(?:\s+(primary|no-op))?)?\s*\Z"
)
_START_RE = re.compile(r"#\s*(deferred|upstream)\s*:")
_SHA_RE = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")


@dataclass(frozen=True)
class Deferral:
    """A deferred patch (see the module docstring)."""

    name: str
    commit: str
    root: str | None = None
    primary: bool = False  # waiting for ``root``, and conflicting on its own too
    no_op: bool = False  # waiting for ``root``: it changes nothing without it (not primary)
    KIND: ClassVar[str] = DEFERRED

    def to_json(self) -> dict[str, str | bool | None]:
        primary = self.primary and self.root is not None
        no_op = self.no_op and not primary and self.root is not None
        return {
            "kind": DEFERRED,
            "commit": self.commit,
            "root": self.root,
            "primary": primary,
            "no_op": no_op,
        }

    def render(self) -> str:
        tail = f" after {self.root}" if self.root else ""
        tail += " primary" if self.root and self.primary else ""
        tail += " no-op" if self.root and self.no_op and not self.primary else ""
        return f"# deferred: {self.name} {self.commit}{tail}\n"


@dataclass(frozen=True)
class Upstream:
    """A patch the base holds (see the module docstring)."""

    name: str
    commit: str
    evidence: str | None = None  # the upstream commit that brought its change
    KIND: ClassVar[str] = UPSTREAM

    def to_json(self) -> dict[str, str | None]:
        return {"kind": UPSTREAM, "commit": self.commit, "evidence": self.evidence}

    def render(self) -> str:
        tail = f" in {self.evidence}" if self.evidence else ""
        return f"# upstream: {self.name} {self.commit}{tail}\n"


Mark = Deferral | Upstream


def is_mark(raw: str) -> bool:
    return _MARK_RE.match(raw.strip()) is not None


def parse_mark(raw: str) -> Mark | None:
    m = _MARK_RE.match(raw.strip())
    if m is None:
        return None
    kind, name, commit, word, last, also = m.groups()
    if kind == DEFERRED:
        after = word == "after"
        root = last if after else None
        return Deferral(name, commit, root, after and also == "primary", after and also == "no-op")
    return Upstream(name, commit, last if word == "in" else None)


def mark_problem(text: str) -> tuple[str, str] | None:
    """(message, hint) when ``text`` starts like a mark but is not a valid one."""
    start = _START_RE.match(text)
    if start is None:
        return None
    kind = start.group(1)
    tail = "after ROOT [primary|no-op]" if kind == DEFERRED else "in COMMIT"
    form = f"'# {kind}: NAME <full commit id> [{tail}]'"
    m = _MARK_RE.match(text)
    if (
        m is None
        or m.group(1) != kind
        or (m.group(4) and m.group(4) != ("after" if kind == DEFERRED else "in"))
        or (m.group(6) and kind != DEFERRED)
    ):
        return f"malformed {kind} line '{text[:60]}'", f"write {form}"
    if not _SHA_RE.match(m.group(3)):
        return f"{kind} '{m.group(2)}': '{m.group(3)}' is not a full commit id", f"write {form}"
    return None


def marks_of(raws: Iterable[str]) -> dict[str, dict[str, Mark]]:
    """The marks of these comment lines: kind -> name -> mark."""
    found: dict[str, dict[str, Mark]] = {DEFERRED: {}, UPSTREAM: {}}
    for raw in raws:
        mark = parse_mark(raw)
        if mark is not None:
            found[mark.KIND][mark.name] = mark
    return found


def describe(mark: Mark) -> str:
    """The mark in words, one short note a patch for ``status`` and ``series``; how to bring a
    deferred patch back is said once under the list, ``push_back_hint``."""
    if isinstance(mark, Deferral):
        if mark.root and mark.primary:
            return f"deferred: primary, waiting for {mark.root}"
        if mark.root and mark.no_op:
            return f"deferred: a no-op without {mark.root}, waiting for it"
        if mark.root:
            return f"deferred: a knock-on, waiting for {mark.root}"
        return "deferred: conflicts on the base"
    if mark.evidence:
        return f"the base holds it: upstream took it in {mark.evidence[:10]}"
    return "the base holds it (which upstream commit brought it is unknown)"


def push_back_hint(marks: Iterable[Mark], stopped: str | None = None) -> str | None:
    """The one line under a listing that says how a patch deferred on the base comes back, or
    None when no patch is; ``stopped``: the command stopped at a conflict, if one is (``push``
    is refused until it is done: not advised as a command)."""
    roots = [m.name for m in marks if isinstance(m, Deferral) and not m.root]
    if not roots:
        return None
    if stopped:
        what = "import" if "import" in stopped else "refresh"
        return f"push NAME brings a deferred patch back once the {what} is done (first: {roots[0]})"
    return f"'patchstack push NAME' brings a deferred patch back (first: {roots[0]})"
