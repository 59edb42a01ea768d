"""``import branch REV --upstream REF``: a team's branch, upstream merges and all, as a series
whose ``push --all`` gives exactly REV's tree.

REV's first-parent history since it left REF's history is walked oldest first, keeping a
chain of trees on a base (`model.branch.Walk`): the chain always ends with the tree of the
commit just walked.

- A commit of a linear segment becomes a patch, as ``import commits`` makes one (message,
  author, date; name and tag from its ``Patchstack-Patch:``/``Patchstack-Tag:`` trailers).
- A merge whose second parent is in REF's history brought upstream commits: the patches so
  far are carried onto that upstream commit, as ``refresh`` carries a series, with the merge's
  own resolution settling the conflicts (`carrying`). What the merge's tree then still holds
  beyond the carried patches (an "evil merge": a change made in the merge itself) becomes a
  fixup patch right there, so that the chain ends with the merge's tree again.
- A merge of a side branch becomes one patch: what it changed. When the side branch had merged
  newer upstream commits (its merge base with REF is newer than the series base), the patches
  are first carried onto that upstream commit the same way, and the patch is what is left.

The series base ends at the last upstream commit REV merged: its merge base with REF. Every
tree and commit is made in the object database (the replay's fast-import stream, one
``format-patch`` for the files); before anything is written the patch files are proven to
give the branch's tree, applied as ``push --all`` applies them (`ending.verify`), and the
series directory is written in one transaction. A conflict the merge's tree cannot settle
stops the import as a conflict stops a refresh (`ending.stop`): ``--continue``, ``--abort``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..checkout import Checkout
from ..commands.state import read_stack
from ..commands.tracked import TRACKING, upstream_target
from ..engine.replay import Done, labels
from ..errors import PatchstackError
from ..git import CommitMeta, Git
from ..journal.snapshot import Snapshot
from ..model import trailers
from ..model.branch import COMMIT, FIXUP, SIDE, Piece, Taken, Walk, fixup_message, subject_of
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.imported import slug, unique_name
from ..model.series import TAGS, name_key, parse_tags
from ..progress import QUIET, Progress
from ..transaction import Overlay
from .carrying import Carrier
from .importing import ImportResult, Landing, existing_series
from .sources import commit_source

SHOWN = 5  # commits named in a refusal


@dataclass(frozen=True)
class BranchResult:
    walk: Walk
    imported: ImportResult | None  # None: stopped, or aborted
    total: int  # first-parent commits of the branch
    stopped: Conflict | None = None
    stopped_merge: str | None = None
    aborted: bool = False
    at_base: bool = False  # HEAD is the series base with no patches (push --all applies them)
    upstream: str = ""  # the note on what status and check compare with (`tracked`), or ""


@dataclass(frozen=True)
class Place:
    """Where the work tree stands while the import goes on: HEAD, the tree the work tree
    holds (HEAD's with ``overlaid`` as they are in the work tree, resolved by hand), and the
    state to go back to, once the import stopped."""

    head: Oid
    src: Oid
    overlaid: tuple[str, ...] = ()
    before: Snapshot | None = None  # the state before the import, once it stopped

    def landing(self) -> Landing | None:
        """Back to the HEAD the import started on, when a stop moved it."""
        if self.before is None:
            return None
        return Landing(self.head, Oid(self.before.head), Overlay(self.src, self.overlaid))


def first_parent_commits(git: Git, ref: str, rev: str) -> list[CommitMeta]:
    return git.commit_range(f"{ref}..{rev}", first_parent=True)


def import_branch(
    ws: Checkout,
    rev: str,
    upstream: str | None,
    tag: str | None,
    append: bool,
    progress: Progress = QUIET,
    take_merge: bool = False,
) -> BranchResult:
    git = ws.git
    ref_name = upstream or git.upstream_of_head()
    if ref_name is None:
        raise PatchstackError(
            "the current branch has no upstream to import against",
            "give the upstream branch: 'patchstack import branch REV --upstream origin/main'",
        )
    rev_oid, ref_oid = _resolve(git, rev), _resolve(git, ref_name)
    commits = first_parent_commits(git, ref_oid, rev_oid)
    if not commits:
        raise PatchstackError(
            f"{rev} has no commits that {ref_name}'s history lacks", "nothing was changed"
        )
    if not commits[0].parents:
        raise PatchstackError(
            f"{rev} shares no history with {ref_name}",
            "give the upstream the branch was made from (--upstream REF)",
        )
    _check_tags(commits, tag)
    taken = _check_series(ws, append)
    fork = commits[0].parents[0]
    walk = Walk(
        rev_oid,
        rev,
        ref_oid,
        ref_name,
        tag,
        append,
        fork,
        (git.tree_of(fork),),
        names=taken,
        take_merge=take_merge,
    )
    head = git.head()
    assert head is not None
    return walk_on(ws, walk, commits, Place(head, git.tree_of(head)), progress)


def _resolve(git: Git, rev: str) -> Oid:
    oid = git.rev_parse(rev)
    if oid is None:
        raise PatchstackError(f"unknown revision '{rev}'", "give a commit, branch or tag")
    return oid


def _check_tags(commits: list[CommitMeta], tag: str | None) -> None:
    """Refuse, before any work, a --tag that is not one, a trailer tag that is not one, and
    commits without a tag when there is no --tag."""
    if tag:
        parse_tags(tag, "--tag", 0)
    bad, untagged = [], []
    for c in commits:
        found = trailers.read(c.message).tag
        if found is not None and found not in TAGS:
            bad.append(f"{c.oid[:12]} ('{found}')")
        elif found is None:
            untagged.append(c.oid[:12])
    if bad:
        raise PatchstackError(
            f"unknown tag on {len(bad)} commit(s): " + _few(bad),
            "a tag is one of " + ", ".join(TAGS),
        )
    if untagged and not tag:
        raise PatchstackError(
            f"{len(untagged)} of {len(commits)} commit(s) carry no 'Patchstack-Tag:' trailer: "
            + _few(untagged),
            "give --tag TAG for them (essential, diagnostic or optimization); nothing was changed",
        )


def _few(items: list[str]) -> str:
    more = f" and {len(items) - SHOWN} more" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _check_series(ws: Checkout, append: bool) -> tuple[str, ...]:
    """The name keys taken: the series' when appending. Refuses what the import would refuse
    at its end, before the work."""
    if not ws.exists():
        if append:
            raise PatchstackError("--append: there is no series to append to", "drop --append")
        return ()
    series = existing_series(ws, append)
    return tuple(name_key(n) for n in series.names) if append else ()


def walk_on(
    ws: Checkout, walk: Walk, commits: list[CommitMeta], place: Place, progress: Progress
) -> BranchResult:
    """Walk the commits from ``walk.at`` on; stop at a conflict, or write the series."""
    from .ending import finish

    git = ws.git
    names = set(walk.names)
    progress.step("walking the branch's history", len(commits))
    for i in range(walk.at, len(commits)):
        progress(i, len(commits))
        c = commits[i]
        if len(c.parents) < 2:
            walk = _linear(walk, c, names)
        else:
            out = _merge(ws, replace(walk, names=tuple(names)), c, place)
            if isinstance(out, BranchResult):
                return replace(out, total=len(commits))
            walk = after_merge(git, out, c, names)
        walk = replace(walk, at=i + 1)
    progress(len(commits), len(commits))
    walk = replace(walk, names=tuple(names))
    imported = finish(ws, walk, commits[-1], place.landing())
    at_base = read_stack(git).head == Oid(imported.base)
    return BranchResult(
        walk, imported, len(commits), at_base=at_base, upstream=_upstream_note(ws, walk)
    )


def _upstream_note(ws: Checkout, walk: Walk) -> str:
    """What status and check will compare the new series with, where it is not REF itself,
    or where HEAD's ``@{upstream}`` is another branch (`tracked`)."""
    up = upstream_target(ws, ws.load_series())
    if up.passed_over:
        return f"note: 'patchstack status' and 'check' compare with {up.note()}"
    if up.why == TRACKING and up.oid != Oid(walk.ref):  # the series names no branch
        return (
            f"note: this branch's upstream is {up.name}, and the series tracks no branch here, so"
            f" 'patchstack status' and 'check' compare with {up.name}; 'patchstack refresh"
            " --onto BRANCH' makes the series track BRANCH"
        )
    return ""


def _linear(walk: Walk, c: CommitMeta, names: set[str]) -> Walk:
    """A commit of a linear segment: its change from the chain's end (its parent's tree)."""
    before = walk.trees[-1]
    if before == c.tree:
        return replace(walk, skipped=(*walk.skipped, (f"commit {c.oid[:12]}", "changes nothing")))
    src = commit_source(c, Oid(before), c.tree, names)
    piece = Piece(src.name, src.tag, src.message, c.author, c.date, src.origin, COMMIT)
    return walk.with_piece(piece, c.tree)


def upstream_of(git: Git, walk: Walk, c: CommitMeta) -> tuple[bool, Oid | None]:
    """(is ``c`` a merge of upstream, the upstream commit to carry the series onto or None):
    its second parent, or the merge base of a side branch with REF, when newer than the
    series base."""
    if len(c.parents) != 2:
        return False, None  # an octopus: one patch
    other = c.parents[1]
    of_upstream = git.is_ancestor(other, walk.ref)
    onto = other if of_upstream else git.merge_base(other, walk.ref)
    if onto is None or onto == walk.base or not git.is_ancestor(walk.base, onto):
        return of_upstream, None
    return of_upstream, onto


def _merge(ws: Checkout, walk: Walk, c: CommitMeta, place: Place) -> Walk | BranchResult:
    """Carry the patches onto the upstream commit ``c`` brings, if any; or stop."""
    git = ws.git
    of_upstream, onto = upstream_of(git, walk, c)
    if onto is None:
        return replace(walk, taken=(*walk.taken, Taken(c.oid, "", not of_upstream, 0)))
    if not walk.pieces:
        moved = replace(walk, base=onto, trees=(git.tree_of(onto),))
        return replace(moved, taken=(*walk.taken, Taken(c.oid, onto, not of_upstream, 0)))
    carrier = Carrier(git, walk, onto)
    try:
        marks = labels(walk.base, onto, f"merged by {c.oid[:12]}")
        done, conflict = carrier.run(0, git.tree_of(onto), onto, marks, c.tree)
        if conflict is not None:
            from .ending import stop

            return stop(ws, walk, c, onto, carrier, done, conflict, place)
    finally:
        carrier.close()
    return carried(git, walk, c, onto, done, not of_upstream, carrier.whole)


def carried(
    git: Git,
    walk: Walk,
    c: CommitMeta,
    onto: Oid,
    done: list[Done],
    side: bool,
    whole: Sequence[str],
) -> Walk:
    """The chain on ``onto`` after the replay: a patch that changes nothing there left out,
    said why: upstream already holds it (git's pick of it onto ``onto`` alone is empty), the
    patches before it there already make its change (an earlier patch took the merge's
    version, later changes with it: ``absorbed``), or its conflict was resolved to nothing
    (the merge's tree, or the user, kept none of its change: ``emptied``);
    ``whole``: the patches that took the merge's version (--take-merge) since the last stop."""
    by_name = {d.name: d for d in done}
    upstream = git.tree_of(onto)
    pieces, trees = [], [upstream]
    dropped: list[str] = []
    emptied: list[str] = []
    absorbed: list[str] = []
    for k, piece in enumerate(walk.pieces):
        d = by_name[piece.name]
        if d.upstream and d.resolved:
            emptied.append(piece.name)
        elif d.upstream:
            alone = git.merge_trees(walk.trees[k], upstream, walk.trees[k + 1], ("up", "patch"))
            held = not alone.conflicted and alone.tree == upstream
            (dropped if held else absorbed).append(piece.name)
        else:
            pieces.append(piece)
            trees.append(d.tree)
    by_hand = set(walk.by_hand)
    settled = sum(1 for d in done if d.resolved and d.name not in by_hand)
    taken = Taken(
        c.oid,
        onto,
        side,
        len(walk.pieces),
        settled,
        len(by_hand),
        tuple(dropped),
        whole=(*walk.whole, *whole),
        emptied=tuple(emptied),
        absorbed=tuple(absorbed),
    )
    return replace(
        walk,
        base=onto,
        pieces=tuple(pieces),
        trees=tuple(trees),
        taken=(*walk.taken, taken),
        by_hand=(),
        whole=(),
    )


def after_merge(git: Git, walk: Walk, c: CommitMeta, names: set[str]) -> Walk:
    """What the merge's tree holds beyond the chain's end becomes a patch: the side branch's,
    or a fixup of an upstream merge (changes made in the merge itself)."""
    if walk.trees[-1] == c.tree:
        return walk
    taken = walk.taken[-1]
    if taken.side:
        src = commit_source(c, Oid(walk.trees[-1]), c.tree, names, f"merge {c.oid[:12]}")
        piece = Piece(src.name, src.tag, src.message, c.author, c.date, src.origin, SIDE)
    else:
        found = trailers.read(c.message)
        name = unique_name("fixup-" + slug(subject_of(trailers.strip(c.message))), names)
        message = fixup_message(c.oid, taken.upstream or c.parents[1], trailers.strip(c.message))
        piece = Piece(name, found.tag, message, c.author, c.date, f"merge {c.oid[:12]}", FIXUP)
    walk = walk.with_piece(piece, c.tree)
    return replace(walk, taken=(*walk.taken[:-1], replace(taken, made=piece.name)))
