"""Reading the state a command plans from: the applied stack, the checks every command that
builds on HEAD makes, and the engine over the series."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..checkout import NO_STATE_CACHE, Checkout, checkout_of
from ..errors import InputError, PatchstackError, RefusedError
from ..git import Git
from ..journal import stacks
from ..model.ids import Oid
from ..model.series import Entry, Series
from ..model.stack import AppliedPatch, Stack, stack_from_history

if TYPE_CHECKING:  # the engine is imported only by commands that build commits
    from ..engine.chain import Engine
    from ..engine.loaded import LoadedPatch


# The stacks read by this command, by HEAD: a commit's history never changes, and a command
# asks for the stack several times (a pop of one patch of 5,000 read it three times: 1.3 s).
_STACKS: weakref.WeakKeyDictionary[Git, dict[Oid, Stack]] = weakref.WeakKeyDictionary()


def read_stack(git: Git) -> Stack:
    head = git.head()
    if head is None:
        raise PatchstackError("the repository has no commits yet", "commit the upstream tree first")
    known = _STACKS.setdefault(git, {})
    if head in known:
        return known[head]
    try:
        stack = walked_stack(git, head)
    except ValueError as exc:
        raise PatchstackError("every commit down to the root carries a patch trailer") from exc
    stacks.remember(git, stack)
    pulled = pulled_merge(git, stack)
    stack = replace(stack, pulled=pulled[1]) if pulled else stack
    if not pulled:
        from .refresh.publish import published

        merge = published(git, stack)
        stack = replace(stack, on_top=(), published=merge) if merge else stack
    known[head] = stack
    return stack


def pulled_merge(git: Git, stack: Stack) -> tuple[Stack, Oid] | None:
    """When ``git pull`` merged upstream into the applied stack, HEAD is a merge whose one
    parent carries the stack and whose other parent is the new base: (the stack of that
    parent, the new base). Anything else on top of the patches is the user's own work."""
    if len(stack.on_top) != 1:
        return None
    info = next(git.iter_first_parent(stack.head))
    if len(info.parents) != 2:
        return None
    sides = [stack_from_history(p, git.iter_first_parent(p)) for p in info.parents]
    patched = [i for i, s in enumerate(sides) if s.applied and not s.on_top]
    if len(patched) == 1 and not sides[1 - patched[0]].applied:
        return sides[patched[0]], info.parents[1 - patched[0]]
    return None


def follow_renames(ws: Checkout, series: Series, stack: Stack) -> Stack:
    """The stack with each applied commit whose patch the series no longer names (a
    teammate's ``rename``, merged with the series) known by the series' name of the patch
    file that is exactly its change (`refresh.proof`: exact or carried), among the patches
    not applied. Nothing is guessed: a commit no unapplied patch file proves stays unknown."""
    lost = [ap for ap in stack.applied if ap.name not in series]
    if not lost:
        return stack
    from .refresh.proof import CARRIED, EXACT, prove

    free = [n for n in series.names if stack.find(n) is None]
    pairs: dict[str, str] = {}
    parents = ws.git.trees_of([ap.parent for ap in lost])
    changed = ws.git.raw_diffs([(p, ap.tree) for p, ap in zip(parents, lost, strict=True)])
    for ap, parent, raw in zip(lost, parents, changed, strict=True):
        touched = sorted({d[-1] for d in raw})
        for name in free:
            if name in pairs.values():
                continue
            try:  # a cheap sieve first: the same paths
                paths = ws.proven_bytes(series.entry(name))[1].paths
            except PatchstackError:
                continue
            if sorted(set(paths)) != touched:
                continue
            one = Stack(ap.commit, ap.parent, parent, (replace(ap, name=name),))
            try:
                verdict = prove(ws, series, one).verdicts.get(name)
            except PatchstackError:
                continue
            if verdict in (EXACT, CARRIED):
                pairs[ap.name] = name
                break
    return stack.with_renamed(pairs) if pairs else stack


def on_top_problem(stack: Stack) -> tuple[str, str] | None:
    """(what, what to do) when plain commits sit on top of the applied patches; every command
    and ``status`` say the same."""
    if not stack.on_top:
        return None
    if stack.pulled:
        return (
            f"HEAD merges upstream {stack.pulled[:12]} into the applied patches (git pull)",
            f"'patchstack refresh' carries the patches onto {stack.pulled[:12]} with the"
            " merge's own resolutions: the branch becomes that commit plus the patches",
        )
    n = len(stack.on_top)
    shown = ", ".join(c[:12] for c in stack.on_top[:3]) + (" ..." if n > 3 else "")
    return (
        f"HEAD has {n} commit(s) on top of the applied patches that are not patches ({shown})",
        "make each a patch ('patchstack new NAME --tag T --from-commit REV', or 'patchstack"
        " import commits'), or move them off ('git reset --keep', 'git rebase'); they are"
        " never taken for upstream",
    )


def plain_series(
    git: Git,
    base: str | None,
    names: Sequence[str],
    stack: Stack,
    full_tree: Callable[[], Oid],
    ancestor: Callable[[str, str], bool] | None = None,
) -> int:
    """How many plain commits carry the rest of the series (``names``), when HEAD's tree is
    the whole series applied (``full_tree``) and HEAD is the series base plus commits that
    are not patches, or the first patches applied plus such commits on top: what ``import
    commits`` of the branch's own history leaves. ``push`` puts the patch commits in their
    place, with the same tree. 0 in any other state."""
    if not base or stack.pulled or stack.head == base:
        return 0
    if stack.applied:  # the plain commits on top carry the patches after the applied ones
        ahead = len(names) > len(stack.applied) and stack.on_top and stack.base == base
        if not ahead or stack.names != tuple(names[: len(stack.applied)]):
            return 0
        return len(stack.on_top) if git.tree_of(stack.head) == full_tree() else 0
    if not (ancestor or git.is_ancestor)(base, stack.head):
        return 0
    if git.tree_of(stack.head) != full_tree():
        return 0
    return git.count_commits(f"{base}..{stack.head}")


def plain_commits(ws: Checkout, series: Series, stack: Stack) -> int:
    """`plain_series` against the series' own canonical chain (built only when the cheap
    tests pass)."""
    if not series.entries:
        return 0
    engines: list[Engine] = []

    def full_tree() -> Oid:
        engines.append(make_engine(ws, series, stack))
        return engines[0].canonical(len(series.entries))

    try:
        ancestor = lambda a, b: is_ancestor(ws, a, b)  # noqa: E731
        return plain_series(ws.git, series.base, series.names, stack, full_tree, ancestor)
    except PatchstackError:  # a patch file that does not apply: not the series, then
        return 0
    finally:
        for engine in engines:
            engine.close()


ANCESTRY = "ancestry"  # the store's section: "A B" -> whether commit A is an ancestor of B


def is_ancestor(ws: Checkout, a: str, b: str) -> bool:
    """``git merge-base --is-ancestor A B``, kept in the cache for two commit ids: the history
    below a commit never changes, so ``status`` asks git once per pair (0.08 CPU s on a real
    fork whose upstream moved 2,000 commits). Not kept in a shallow clone (a fetch deepens
    its history) nor where replace refs can rewrite a commit's parents."""
    fmt = ws.git.fmt
    if not (fmt.is_full(a) and fmt.is_full(b)) or not history_fixed(ws):
        return ws.git.is_ancestor(a, b)
    key = f"{a} {b}"
    known = ws.store.get(ANCESTRY, key)
    if isinstance(known, bool):
        return known
    found = ws.git.is_ancestor(a, b)
    ws.store.put(ANCESTRY, key, found)
    return found


def require_movable(stack: Stack) -> None:
    """Refuse to build on HEAD when plain commits cover applied patch commits."""
    problem = on_top_problem(stack)
    if problem and stack.pulled:
        raise RefusedError(
            problem[0],
            "run 'patchstack refresh' first: it carries the patches onto the merged upstream,"
            " with the merge's own resolutions; nothing was changed",
        )
    if problem:
        raise RefusedError(problem[0], problem[1] + "; nothing was changed")


def require_base(series: Series, stack: Stack) -> None:
    """Refuse to capture against a base the series was not made on."""
    if series.base and series.entries and stack.base != series.base:
        raise RefusedError(
            f"the stack's base {stack.base[:12]} is not the series base {series.base[:12]}",
            "run 'patchstack refresh' first, so that the new patch fits the series",
        )


def resolve_rev(git: Git, rev: str) -> Oid:
    found = git.rev_parse(rev)
    if found is None:
        raise PatchstackError(f"unknown revision '{rev}'", "give a commit, branch or tag")
    return found


def check_base(ws: Checkout, series: Series) -> bool:
    """Is the series base a commit of this repository? False when it is missing (fetch it);
    an error naming the series file and line when it names a tree, a blob or a tag of one."""
    base = series.base
    if not base:
        return True
    kind = ws.git.object_type(base)
    if kind is None:
        return False
    if kind != "commit" and ws.git.rev_parse(base) is None:
        lineno = series.base_lineno or 0
        raise InputError(
            ws.display(ws.series_path),
            lineno,
            f"the base {base[:12]} names a {kind}, not a commit",
            "write '# base: <commit id>' (or run 'patchstack refresh --onto REV')",
        )
    return True


def make_engine(ws: Checkout, series: Series, stack: Stack) -> Engine:
    from ..engine.chain import Engine, no_base_error

    git = ws.git
    base = series.base
    if base and not check_base(ws, series) and stack.base != base:
        raise no_base_error(base)
    canonical = Oid(base) if base else stack.base

    def load(entry: Entry) -> LoadedPatch:
        from ..engine.loaded import LoadedPatch  # (a skip loads no patch into the engine)

        data, summary = ws.proven_bytes(entry)
        shown = ws.display(ws.patch_path(entry.name))
        return LoadedPatch(entry, data, None, shown, lambda: ws.read_patch(entry)[1], summary)

    default: list[tuple[str, str]] = []

    def default_author() -> tuple[str, str]:
        if not default:
            default.append((git.ident()[0], git.commit_date(canonical)))
        return default[0]

    from .refresh.resolutions import Resolutions

    settle = Resolutions(ws).settle
    return Engine(git, series, load, canonical, default_author, ws.store, settle)


# -- the stack kept by HEAD ---------------------------------------------------------------
# A commit id fixes its whole first-parent history, so the stack read from it
# (`stack_from_history`) is the same at every read: kept in the cache (section ``stacks``).
# A command on a stack of 5,000 patches walked them all (0.25 s) to pop one; a command that
# moves HEAD keeps the stack it leaves (`keep_after`), and the next one reads it.
# ``PATCHSTACK_NO_STATE_CACHE=1``: the plain path, every stack walked.

STACKS = "stacks"  # the store's section: the stack read at a HEAD (`walked_stack`)


def walked_stack(git: Git, head: Oid) -> Stack:
    """`stack_from_history` at ``head``: from the cache when a command kept it, else walked
    (and kept for the next command). Raises ValueError as the walk does."""
    ws = _keeping(git)
    if ws is not None:
        found = _decode(ws.store.get(STACKS, head), head)
        if found is not None:
            return found
    stack = stack_from_history(head, git.iter_first_parent(head))
    if ws is not None:
        ws.store.put(STACKS, head, _encode(stack))
    return stack


def known_before(ws: Checkout, head: Oid) -> None:
    """Before a command publishes ``head``: the stack there, when a command kept it, is
    known to the operation log's snapshot of the state after (`journal.stacks`), which then
    does not walk it (a pop of every patch: the base's history, 51 commits)."""
    if _keeping(ws.git) is ws and stacks.known_at(ws.git, head) is None:
        found = _decode(ws.store.get(STACKS, head), head)
        if found is not None:
            stacks.remember(ws.git, found)


def keep_after(ws: Checkout, head: Oid) -> None:
    """Keep the stack at ``head``, the HEAD a command just published, when this command
    read it already (the operation log's snapshot, or the stack it left is a part of the
    one it read): the next command does not walk it again."""
    if _keeping(ws.git) is not ws:
        return
    found = stacks.known_at(ws.git, head)
    if found is not None:
        ws.store.put(STACKS, head, _encode(found))


def _keeping(git: Git) -> Checkout | None:
    """The checkout whose cache keeps this repository's stacks; None on the plain path, or
    where a commit id does not fix its history (a shallow clone, replace refs)."""
    if os.environ.get(NO_STATE_CACHE):
        return None
    ws = checkout_of(git)
    return ws if ws is not None and history_fixed(ws) else None


def history_fixed(ws: Checkout) -> bool:
    """No shallow boundary, grafts or replace refs: a commit id fixes its whole history."""
    common = ws.git.common_dir
    if os.path.exists(os.path.join(common, "shallow")) or os.path.exists(
        os.path.join(common, "info", "grafts")
    ):
        return False
    if os.path.isdir(os.path.join(common, "refs", "replace")):
        return False
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as f:
            return b" refs/replace/" not in f.read()
    except OSError:
        return True


def _encode(stack: Stack) -> tuple[Any, ...]:
    """The stack's values (each applied commit's parent is the one below it, or the base)."""
    applied = stack.applied
    return (
        stack.base,
        stack.base_tree,
        tuple(stack.on_top),
        tuple(p.name for p in applied),
        tuple(p.tag for p in applied),
        tuple(p.commit for p in applied),
        tuple(p.tree for p in applied),
    )


def _decode(value: Any, head: Oid) -> Stack | None:
    if value is None:
        return None
    try:
        base, base_tree, on_top, names, tags, commits, trees = value
        parents = (base, *commits)[: len(commits)]
        applied = tuple(
            AppliedPatch(str(n), None if t is None else str(t), Oid(c), Oid(tr), Oid(p))
            for n, t, c, tr, p in zip(names, tags, commits, trees, parents, strict=True)
        )
        return Stack(head, Oid(base), Oid(base_tree), applied, tuple(Oid(c) for c in on_top))
    except (TypeError, ValueError):
        return None
