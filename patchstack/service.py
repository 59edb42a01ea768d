"""The commands, as functions from values to values. The CLI parses, calls these, and prints.

Every command that changes state follows one shape: read the series and the applied stack,
plan every tree and commit in the object database, then publish once (`publish`): check that
no uncommitted edit would be overwritten, move the index and work tree from the old tree to
the new one, write series files atomically, and move the branch in one ``update-ref``
transaction that expects the old value. A failure before publishing leaves nothing to undo.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import journal, lock, selection
from .errors import PatchstackError, RefusedError
from .git import Git, Oid
from .patch import Patch, parse_patch
from .selection import Selector
from .series import Entry, Series, new_series, parse_tags, validate_name
from .stack import Stack, stack_from_history
from .workspace import Workspace, write_atomic

if TYPE_CHECKING:  # the engine is imported only by commands that build commits
    from .engine import Engine

Progress = Callable[[int, int], None] | None  # (done, total)


# -- reading state ------------------------------------------------------------------------------


def read_stack(git: Git) -> Stack:
    head = git.head()
    if head is None:
        raise PatchstackError("the repository has no commits yet", "commit the upstream tree first")
    try:
        return stack_from_history(head, git.iter_stack(head))
    except ValueError as exc:
        raise PatchstackError("every commit down to the root carries a patch trailer") from exc


def require_movable(stack: Stack) -> None:
    """Refuse to build on HEAD when plain commits cover applied patch commits."""
    if stack.buried:
        n = len(stack.covered_by)
        raise RefusedError(
            f"HEAD has {n} commit(s) on top of the applied patch '{stack.buried}'"
            f" ({', '.join(c[:12] for c in stack.covered_by[:3])})",
            "make them patches ('patchstack import commits'), or move them off with"
            " 'git rebase'/'git reset'; nothing was changed",
        )


def require_base(series: Series, stack: Stack) -> None:
    """Refuse to capture against a base the series was not made on."""
    if series.base and series.entries and stack.base != series.base:
        raise RefusedError(
            f"the stack's base {stack.base[:12]} is not the series base {series.base[:12]}",
            "run 'patchstack refresh' first, so that the new patch fits the series",
        )


def make_engine(ws: Workspace, series: Series, stack: Stack) -> Engine:
    from .engine import Engine, LoadedPatch, no_base_error

    git = ws.git
    base = series.base
    if base and git.rev_parse(base) is None and stack.base != base:
        raise no_base_error(base)
    canonical = Oid(base) if base else stack.base

    def load(entry: Entry) -> LoadedPatch:
        data, patch = ws.read_patch(entry)
        return LoadedPatch(entry, data, patch, ws.display(ws.patch_path(entry.name)))

    default: list[tuple[str, str]] = []

    def default_author() -> tuple[str, str]:
        if not default:
            name = git.ident()[0]
            date = git.out("log", "-1", "--format=%aD", canonical).strip()
            default.append((name, date))
        return default[0]

    return Engine(git, series, load, canonical, default_author)


# -- publishing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileWrite:
    path: str
    data: bytes | None  # None: delete


def publish(
    ws: Workspace,
    old_head: Oid,
    new_head: Oid,
    message: str,
    files: Sequence[FileWrite] = (),
    captured: Sequence[str] | None = None,
    worktree_from: tuple[Oid, Sequence[str]] | None = None,
    worktree_to: Oid | None = None,
) -> None:
    """Move the branch from ``old_head`` to ``new_head`` and the work tree with it, once.

    ``captured``: the work tree already holds ``new_head`` for these paths (``new``), so only
    the index is updated for them.

    ``worktree_from`` = (tree, paths): the work tree holds ``tree``, which is ``old_head``'s
    tree with ``paths`` as they are in the work tree (edits being folded, a resolved conflict).
    ``worktree_to``: the tree to put in the work tree when it is not ``new_head``'s (a stopped
    refresh: conflict markers); the index keeps ``new_head``'s version of those files.

    The step is recorded in the operation log (`journal`): a kill at any point leaves an entry
    from which ``patchstack undo`` restores the state before.
    """
    with journal.recording(ws, message.split(" ", 1)[0], planned_head=new_head):
        if worktree_from is not None or worktree_to is not None:
            _publish_moving(ws, old_head, new_head, message, files, worktree_from, worktree_to)
        else:
            _publish(ws, old_head, new_head, message, files, captured)


def _publish(
    ws: Workspace,
    old_head: Oid,
    new_head: Oid,
    message: str,
    files: Sequence[FileWrite],
    captured: Sequence[str] | None,
) -> None:
    index_only = captured is not None
    git = ws.git
    if old_head != new_head and not index_only:
        # read-tree refuses, before writing anything, to overwrite a file with uncommitted
        # edits or an untracked file; stale stat information can make it refuse wrongly, so
        # the index is refreshed and the move tried once more before reporting.
        proc = git.checkout_tree(old_head, new_head)
        if proc.returncode != 0:
            git.refresh_index()
            proc = git.checkout_tree(old_head, new_head)
        if proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace")
            touched = sorted(set(re.findall(r"^error: [^']*'(.+)'", err, re.M)))
            if not touched:
                raise RefusedError(
                    "git refused to update the work tree: " + err.strip(), "nothing was changed"
                )
            raise _edits_in_the_way(touched)
        lock.point("publish-worktree")
    if captured:
        git.set_index_entries(new_head, captured)

    def undo_worktree() -> None:
        if captured:
            git.set_index_entries(old_head, captured)
        else:
            git.checkout_tree(new_head, old_head)

    _write_and_move(ws, old_head, new_head, message, files, undo_worktree)


def _edits_in_the_way(paths: Sequence[str]) -> RefusedError:
    return RefusedError(
        "uncommitted edits in files this command would change: " + ", ".join(paths),
        "commit them, capture them with 'patchstack new', or fold them with"
        " 'patchstack refresh'; nothing was changed",
    )


def _write_and_move(
    ws: Workspace,
    old_head: Oid,
    new_head: Oid,
    message: str,
    files: Sequence[FileWrite],
    undo_worktree: Callable[[], None],
) -> None:
    """The last steps of every publish: series files, then the branch in one transaction that
    expects ``old_head`` (when it fails, ``undo_worktree`` puts the work tree back)."""
    for fw in files:
        if fw.data is None:
            if os.path.exists(fw.path):
                os.unlink(fw.path)
        else:
            os.makedirs(os.path.dirname(fw.path), exist_ok=True)
            write_atomic(fw.path, fw.data)
        lock.point("publish-file")
    if old_head != new_head:
        try:
            ws.git.update_refs(
                [(ws.git.head_ref() or "HEAD", new_head, old_head)], "patchstack: " + message
            )
        except PatchstackError:
            undo_worktree()
            raise
        lock.point("publish-ref")


def _publish_moving(
    ws: Workspace,
    old_head: Oid,
    new_head: Oid,
    message: str,
    files: Sequence[FileWrite],
    worktree_from: tuple[Oid, Sequence[str]] | None,
    worktree_to: Oid | None,
) -> None:
    git = ws.git
    src, overlaid = worktree_from or (git.tree_of(old_head), ())
    new_tree = git.tree_of(new_head)
    dst = worktree_to or new_tree
    changed = set(git.changed_paths(src, dst))
    dirty = git.dirty(exclude=ws.in_tree, paths=sorted(changed))  # only what the move changes
    touched = sorted(
        (changed & set(dirty.modified + dirty.unmerged + dirty.untracked)) - set(overlaid)
    )
    if touched:
        raise _edits_in_the_way(touched)
    index_path = os.path.join(git.git_dir, "index")
    saved_index = None
    if os.path.exists(index_path):
        with open(index_path, "rb") as f:
            saved_index = f.read()
    try:
        if overlaid:
            git.set_index_entries(src, list(overlaid))
            git.refresh_index()
        proc = git.checkout_tree(src, dst)
        if proc.returncode != 0:
            raise RefusedError(
                "git refused to update the work tree: "
                + proc.stderr.decode("utf-8", "replace").strip(),
                "nothing was changed",
            )
    except BaseException:
        if saved_index is not None:
            write_atomic(index_path, saved_index)
        raise
    lock.point("publish-worktree")
    if dst != new_tree:
        git.set_index_entries(new_tree, git.changed_paths(new_tree, dst))
    _write_and_move(ws, old_head, new_head, message, files, lambda: git.checkout_tree(dst, src))


# -- init ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InitResult:
    series_path: str
    base: Oid


def init(ws: Workspace, base_rev: str | None) -> InitResult:
    if ws.exists():
        raise PatchstackError(
            f"a series already exists at {ws.display(ws.series_path)}",
            "use it as it is, or choose another folder with --dir",
        )
    git = ws.git
    if base_rev:
        base = git.rev_parse(base_rev)
        if base is None:
            raise PatchstackError(f"unknown revision '{base_rev}'", "give a commit, branch or tag")
    else:
        base = read_stack(git).base
    ref = None
    if base_rev and base_rev != base:
        ref = base_rev
    head = read_stack(git).head
    data = new_series(base, ref).format().encode("utf-8", "surrogateescape")
    publish(ws, head, head, "init", [FileWrite(ws.series_path, data)])
    return InitResult(ws.series_path, base)


# -- series listing -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SeriesRow:
    name: str
    tag: str
    labels: tuple[str, ...]
    applied: bool
    commit: Oid | None


def list_series(ws: Workspace) -> tuple[Series, Stack, list[SeriesRow]]:
    series = ws.load_series()
    stack = read_stack(ws.git)
    rows = []
    for e in series.entries:
        ap = stack.find(e.name)
        rows.append(SeriesRow(e.name, e.tag, e.labels, ap is not None, ap.commit if ap else None))
    return series, stack, rows


# -- push and pop -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MoveResult:
    before: tuple[str, ...]
    after: tuple[str, ...]
    head: Oid
    base: Oid
    rebuilt: tuple[str, ...]

    @property
    def added(self) -> list[str]:
        return [n for n in self.after if n not in self.before]

    @property
    def removed(self) -> list[str]:
        return [n for n in self.before if n not in self.after]


def move_stack(
    ws: Workspace,
    series: Series,
    stack: Stack,
    target: Sequence[str],
    onto: Oid | None,
    message: str,
    progress: Progress = None,
) -> MoveResult:
    """Make exactly ``target`` (series order) applied, on ``onto`` or the current base."""
    base = onto or stack.base
    keep = []
    if base == stack.base:
        for have, want in zip(stack.applied, target, strict=False):
            if have.name != want:
                break
            keep.append(have)
    rest = list(target[len(keep) :])
    missing = [n for n in rest if n not in series]
    if missing:
        raise PatchstackError(
            f"applied patch '{missing[0]}' is not in the series",
            "put it back into the series file, or pop it first",
        )
    built = []
    if rest:
        engine = make_engine(ws, series, stack)
        try:
            base_tree = ws.git.tree_of(base) if base != stack.base else stack.base_tree
            built = engine.build(base, base_tree, keep, rest, progress)
        finally:
            engine.close()
    head = built[-1][1] if built else (keep[-1].commit if keep else base)
    publish(ws, stack.head, head, message)
    return MoveResult(stack.names, tuple(target), head, base, tuple(rest))


def push(
    ws: Workspace, sel: Selector, onto: str | None = None, progress: Progress = None
) -> MoveResult:
    series = ws.load_series()
    stack = read_stack(ws.git)
    require_movable(stack)
    target = selection.push_target(series, stack.names, sel)
    onto_oid = None
    if onto:
        onto_oid = ws.git.rev_parse(onto)
        if onto_oid is None:
            raise PatchstackError(f"unknown revision '{onto}'", "give a commit, branch or tag")
    if tuple(target) == stack.names and (onto_oid is None or onto_oid == stack.base):
        return MoveResult(stack.names, stack.names, stack.head, stack.base, ())
    return move_stack(ws, series, stack, target, onto_oid, "push", progress)


def pop(ws: Workspace, sel: Selector, progress: Progress = None) -> MoveResult:
    series = ws.load_series()
    stack = read_stack(ws.git)
    require_movable(stack)
    target = selection.pop_target(series, stack.names, sel)
    if tuple(target) == stack.names:
        return MoveResult(stack.names, stack.names, stack.head, stack.base, ())
    return move_stack(ws, series, stack, target, None, "pop", progress)


# -- new ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NewResult:
    name: str
    tag: str
    commit: Oid
    paths: tuple[str, ...]
    untracked_left: tuple[str, ...]
    patch_path: str


def strip_trailers(data: bytes) -> bytes:
    """Drop patchstack's own trailers (and the blank line before them) from format-patch output."""
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if line.startswith(b"diff --git "):
            break
        if (
            line.startswith(b"Patchstack-Patch: ")
            and i + 1 < len(lines)
            and lines[i + 1].startswith(b"Patchstack-Tag: ")
        ):
            drop = 3 if i > 0 and lines[i - 1] == b"" else 2
            return b"\n".join(lines[: i - (drop - 2)] + lines[i + 2 :])
    return data


def new(
    ws: Workspace, name: str, tag_text: str, message: str | None, paths: Sequence[str]
) -> NewResult:
    git = ws.git
    if not name.endswith((".patch", ".diff")):
        name += ".patch"
    problem = validate_name(name)
    if problem:
        raise PatchstackError(problem, "use letters, digits and ._+@=~- only")
    tag, labels = parse_tags(tag_text, "--tag", 0) if tag_text else ("", ())
    if not tag:
        raise PatchstackError("--tag is required", "one of: essential, diagnostic, optimization")
    series = ws.load_series()
    if name in series:
        raise PatchstackError(f"patch '{name}' is already in the series", "choose another name")
    if os.path.exists(ws.patch_path(name)):
        raise RefusedError(
            f"{ws.display(ws.patch_path(name))} already exists", "remove it or choose another name"
        )
    stack = read_stack(git)
    require_movable(stack)
    require_base(series, stack)
    git.refresh_index()
    dirty = git.dirty(exclude=ws.in_tree)
    if dirty.unmerged:
        raise RefusedError(
            "unmerged files: " + ", ".join(dirty.unmerged), "resolve the merge first"
        )
    rel = [_relative_to_top(ws, p) for p in paths]
    if rel:
        inside = ws.in_tree
        for p in rel:
            if inside and (p == inside or p.startswith(inside + "/")):
                raise PatchstackError(
                    f"'{p}' is inside the series directory",
                    "the series directory is never captured",
                )
        chosen = [
            p
            for p in dirty.modified + dirty.untracked
            if any(p == r or p.startswith(r.rstrip("/") + "/") or r == "." for r in rel)
        ]
        unknown = [
            r
            for r in rel
            if not any(c == r or c.startswith(r.rstrip("/") + "/") or r == "." for c in chosen)
        ]
        if unknown:
            raise PatchstackError(
                "no uncommitted edits in: " + ", ".join(unknown), "see 'git status'"
            )
    else:
        chosen = list(dirty.modified)
    if not chosen:
        raise PatchstackError(
            "no uncommitted edits to capture",
            "edit files first, or name new files as PATH arguments",
        )
    partly = [p for p in chosen if p in dirty.partly_staged]
    if partly:
        raise RefusedError(
            "staged changes differ from the work tree in: " + ", ".join(partly),
            "stage or unstage them fully (git add / git restore --staged), then try again",
        )
    untracked_left = tuple(p for p in dirty.untracked if p not in chosen)
    author, date = git.ident()
    subject = (
        message.strip().splitlines()[0]
        if message and message.strip()
        else name.removesuffix(".patch")
    )
    body = "\n".join(message.strip().splitlines()[1:]).strip() if message else ""
    with git.temp_index() as idx:
        idx.read_tree(stack.head)
        idx.add_paths(chosen)
        tree = idx.write_tree()
    if tree == stack.top_tree:
        raise PatchstackError("the edits change nothing", "nothing to capture")
    text = subject + ("\n\n" + body if body else "") + "\n"
    text += f"\nPatchstack-Patch: {name}\nPatchstack-Tag: {tag}\n"
    commit = git.commit_tree(tree, [stack.head], text, author, date)
    data = strip_trailers(git.format_patch(commit))
    parse_patch(data, name)  # what we write must read back
    entry = Entry(name, tag, labels)
    after = stack.applied[-1].name if stack.applied else None
    if after is not None and after not in series:
        after = None
    new_series_ = series.insert(entry, after)
    publish(
        ws,
        stack.head,
        commit,
        f"new {name}",
        [
            FileWrite(ws.patch_path(name), data),
            FileWrite(ws.series_path, new_series_.format().encode("utf-8", "surrogateescape")),
        ],
        captured=chosen,
    )
    return NewResult(name, tag, commit, tuple(chosen), untracked_left, ws.patch_path(name))


def _relative_to_top(ws: Workspace, path: str) -> str:
    full = os.path.normpath(os.path.join(ws.cwd, path))
    rel = os.path.relpath(full, ws.git.top)
    if rel.startswith(".."):
        raise PatchstackError(f"'{path}' is outside the work tree", "name files inside it")
    return rel.replace(os.sep, "/")


# -- status -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatchState:
    name: str
    tag: str | None
    applied: bool
    commit: Oid | None
    matches: str | None  # "exact", "carried", "differs", or None when not applied


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

    @property
    def differs(self) -> list[str]:
        return [p.name for p in self.patches if p.matches == "differs"]


def status(ws: Workspace) -> StatusResult:
    git = ws.git
    series = ws.load_series()
    stack = read_stack(git)
    verdicts = verify_applied(ws, series, stack)
    states = []
    for e in series.entries:
        ap = stack.find(e.name)
        states.append(
            PatchState(
                e.name, e.tag, ap is not None, ap.commit if ap else None, verdicts.get(e.name)
            )
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
    )


def verify_applied(ws: Workspace, series: Series, stack: Stack) -> dict[str, str]:
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
        if _ids_match(patch, raw):
            result[ap.name] = "exact"
        else:
            pending.append((ap, patch))
    for ap, patch in pending:
        diff = git.run(
            "diff-tree",
            "-p",
            "--no-renames",
            "--full-index",
            "--binary",
            parent_tree[ap.commit],
            ap.tree,
        ).stdout
        try:
            actual = parse_patch(diff, ap.name) if diff.strip() else None
        except PatchstackError:
            actual = None
        result[ap.name] = "carried" if actual and _same_change(patch, actual) else "differs"
    return result


def _ids_match(patch: Patch, raw: list[tuple[str, str, str, str, str]]) -> bool:
    """True when the commit's blobs are exactly those the patch's full index lines name."""
    got = {path: (new_mode, new) for _om, new_mode, _old, new, path in raw}
    want = {}
    for f in patch.files:
        if f.renamed or f.copied or not f.new_id or len(f.new_id) != 40:
            return False
        want[f.path] = f.new_id
    return set(want) == set(got) and all(got[p][1] == want[p] for p in want)


def _same_change(a: Patch, b: Patch) -> bool:
    def key(patch: Patch) -> list:
        return sorted(
            (f.path, tuple(ln for h in f.hunks for ln in h.lines if ln[:1] in "+-"))
            for f in patch.files
        )

    return key(a) == key(b)
