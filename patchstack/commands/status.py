"""``status``: the base, the applied and unapplied patches, uncommitted edits, and whether each
applied commit still carries exactly its patch file's change."""

from __future__ import annotations

from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..git import RawDiff
from ..model.ids import ObjectFormat, Oid
from ..model.patchfile import Patch, parse_patch
from ..model.series import Series
from ..model.stack import Stack
from .state import read_stack


@dataclass(frozen=True)
class PatchState:
    name: str
    tag: str | None
    applied: bool
    commit: Oid | None
    matches: str | None  # "exact", "carried", "differs", or None when not applied
    labels: tuple[str, ...] = ()
    commit_tag: str | None = None  # the tag its applied commit's trailer says


@dataclass(frozen=True)
class StatusResult:
    branch: str | None
    head: Oid
    series_base: str | None
    base_ref: str | None
    stack_base: Oid
    patches: tuple[PatchState, ...]
    unknown_applied: tuple[str, ...]  # applied commits whose patch is not in the series
    edits: tuple[str, ...]  # uncommitted edits that belong to no patch
    edits_in_patches: dict[str, tuple[str, ...]]  # path -> applied patches touching it
    untracked: tuple[str, ...]
    stack_order: tuple[str, ...] = ()  # the applied patches, in the order of their commits

    @property
    def differs(self) -> list[str]:
        return [p.name for p in self.patches if p.matches == "differs"]

    @property
    def order_differs(self) -> bool:
        """The applied commits are not in the series order."""
        in_series = [p.name for p in self.patches if p.applied]
        return [n for n in self.stack_order if n in in_series] != in_series

    @property
    def tags_differ(self) -> list[PatchState]:
        """Applied patches whose commit says another tag than the series."""
        return [p for p in self.patches if p.applied and p.commit_tag != p.tag]


def status(ws: Checkout) -> StatusResult:
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    verdicts = verify_applied(ws, series, stack)
    states = []
    for e in series.entries:
        ap = stack.find(e.name)
        commit = ap.commit if ap else None
        tag = ap.tag if ap else None
        states.append(
            PatchState(e.name, e.tag, ap is not None, commit, verdicts.get(e.name), e.labels, tag)
        )
    dirty = git.dirty(exclude=ws.in_tree)
    touched: dict[str, list[str]] = {}
    for ap in stack.applied:
        if ap.name in series:
            for p in ws.read_patch(series.entry(ap.name))[1].paths:
                touched.setdefault(p, []).append(ap.name)
    in_patches = {p: tuple(touched[p]) for p in dirty.modified if p in touched}
    edits = tuple(p for p in dirty.modified + dirty.unmerged if p not in touched)
    return StatusResult(
        git.head_ref(),
        stack.head,
        series.base,
        series.base_ref,
        stack.base,
        tuple(states),
        tuple(n for n in stack.names if n not in series),
        edits,
        in_patches,
        dirty.untracked,
        stack.names,
    )


def verify_applied(ws: Checkout, series: Series, stack: Stack) -> dict[str, str]:
    """For each applied patch: does its commit still carry exactly its patch file's change?

    "exact": the commit's blobs are the ones the patch file's index lines name (proven by ids);
    "carried": the same lines added and removed, at another place (a merge carried it);
    "differs": the commit and the patch file disagree.
    """
    git = ws.git
    parent_tree = dict(
        zip(
            (ap.commit for ap in stack.applied),
            (stack.base_tree, *(ap.tree for ap in stack.applied)),
            strict=False,
        )
    )
    applied = [ap for ap in stack.applied if ap.name in series]
    raws = git.raw_diffs([(parent_tree[ap.commit], ap.tree) for ap in applied])
    result: dict[str, str] = {}
    pending = []
    for ap, raw in zip(applied, raws, strict=False):
        patch = ws.read_patch(series.entry(ap.name))[1]
        if _ids_match(patch, raw, git.fmt):
            result[ap.name] = "exact"
        else:
            pending.append((ap, patch))
    for ap, patch in pending:
        diff = git.diff_patch(parent_tree[ap.commit], ap.tree)
        try:
            actual = parse_patch(diff, ap.name) if diff.strip() else None
        except PatchstackError:
            actual = None
        result[ap.name] = "carried" if actual and _same_change(patch, actual) else "differs"
    return result


def _ids_match(patch: Patch, raw: list[RawDiff], fmt: ObjectFormat) -> bool:
    """True when the commit's blobs are exactly those the patch's full index lines name."""
    got = {path: (new_mode, new) for _om, new_mode, _old, new, path in raw}
    want = {}
    for f in patch.files:
        if f.renamed or f.copied or not fmt.is_full(f.new_id):
            return False
        want[f.path] = f.new_id
    return set(want) == set(got) and all(got[p][1] == want[p] for p in want)


def _same_change(a: Patch, b: Patch) -> bool:
    def key(patch: Patch) -> list[tuple[str, tuple[str, ...]]]:
        return sorted(
            (f.path, tuple(ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"))
            for f in patch.files
        )

    return key(a) == key(b)
