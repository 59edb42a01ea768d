"""Refresh after upstream moved, fold edits into a patch, dry-run checks, and base drift.

**Where the new base comes from.** ``refresh`` recognises how the user's base moved:

1. the series is popped and the branch was fast-forwarded (``git pull``): the new base is HEAD;
2. ``refresh --onto REV``: the new base is REV, whatever is applied;
3. the stack is applied and ``git pull`` merged upstream into it: HEAD is a merge whose one
   parent carries the stack and whose other parent is the new base; after ``git pull --rebase``
   the stack already sits on the new base (git replayed the patch commits).

In every route the result is the same: the branch is the new base plus one commit per patch
that was applied before, linear, and every patch file and the ``# base:`` line describe it.
With no move and uncommitted edits in files of an applied patch, the edits are folded into the
top applied patch (or ``--patch NAME``) and the patches above it are re-applied (route 4).

**Replay.** The old patch files define the old canonical chain ``C[0..n]`` (the series base
plus each patch, exactly, as in `engine`). Each patch k is the change ``C[k-1] -> C[k]``; it is
carried onto the new tree ``T[k-1]`` by a three-way merge (``merge-tree``), giving ``T[k]``.
Reality wins where it exists: when an applied commit's parent tree is already ``T[k-1]`` (the
rebase route, a stack that did not move, a folded patch), its tree is ``T[k]``. All trees and
commits are built in the object database; the work tree and branch move once, at the end or at
the stop, through `service.publish`.

**Verdicts.** ``unchanged``: the change ``T[k-1] -> T[k]`` has the very blobs and modes of
``C[k-1] -> C[k]``, so its diff is the same text and the file keeps its bytes (it is not even
rewritten). ``upstream``: ``T[k] == T[k-1]``, the new base already contains the change (the patch
is kept, unapplied, unless ``--drop-merged``; its file is never deleted). Otherwise the file is
regenerated with ``format-patch`` from a commit with the patch's own author, date and message,
so only the diff part changes: ``offset`` when every hunk has the same lines as before (only
line numbers and blob ids moved), ``merged`` when the hunks' lines changed. ``conflict``: the
merge did not resolve.

**Stop, continue, abort.** At a conflict the branch holds the new base plus the patches replayed
so far, and the work tree additionally the conflicting patch with diff3 markers (labelled with
the new base, the old base and the patch name); the index keeps the committed version, so
``git diff`` shows the conflict. ``refresh-state.json`` in ``.git/patchstack/`` records the
plan, the trees done so far, and what ``--abort`` needs: the old HEAD, a copy of the index, and
a backup commit (ref ``refs/worktree/patchstack-refresh-backup``, so gc keeps it) whose tree
holds the work tree with the user's uncommitted edits and untracked files, and the bytes of the
series files. ``--continue`` takes the files the conflicting patch touches from the work tree
(no ``git add``), refuses while markers remain, and replays the rest. ``--abort`` puts back
HEAD, the work tree, the index and the series files byte for byte. While a refresh is stopped,
every other command is refused (`guard`).

**check** is the same replay against a target (``@{upstream}``, else HEAD below its applied
patches), computing objects only: no file, ref or index is written, and the merge cache is not
saved. A conflicting patch is left out and the replay goes on, so one run lists every conflict.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

from .engine import ConflictHunk, Engine, Known, LoadedPatch, ProvenStream, parse_conflict_markers
from .errors import ConflictError, PatchstackError, RefusedError
from .git import Git, MergeResult, Oid
from .patch import Patch, parse_patch
from .selection import Selector
from .series import Series
from .service import FileWrite, make_engine, publish, read_stack, strip_trailers
from .stack import Stack, stack_from_history
from .workspace import Workspace, write_atomic
from .workspace import refresh_guard as guard
from .workspace import refresh_in_progress as in_progress
from .workspace import refresh_state_path as state_path

INDEX_COPY = "refresh-index"
BACKUP_REF = "refs/worktree/patchstack-refresh-backup"
VERDICTS = ("unchanged", "offset", "merged", "conflict", "upstream")
_HEX_RE = re.compile(r"[0-9a-f]{7,40}\Z")
_MARKER_RE = re.compile(r"(<<<<<<<|>>>>>>>|\|\|\|\|\|\|\|)( |\Z)|=======\Z")


# -- values -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """Patch ``name``: the old change ``before -> after`` and, when applied, its real one."""

    name: str
    before: Oid
    after: Oid
    real: tuple[Oid, Oid] | None = None  # (parent tree, tree) of its applied commit


@dataclass(frozen=True)
class Done:
    """A replayed patch: the tree it was carried onto (``parent``) and the result."""

    name: str
    parent: Oid
    tree: Oid
    resolved: bool = False
    commit: str | None = None  # the commit made for it on the new base, when already made

    @property
    def upstream(self) -> bool:
        return self.tree == self.parent


@dataclass(frozen=True)
class UpstreamCommit:
    oid: str
    subject: str


@dataclass(frozen=True)
class BlamedHunk:
    hunk: ConflictHunk
    commits: tuple[UpstreamCommit, ...]
    traced: bool  # True: commits that changed these lines; False: commits touching the file


@dataclass(frozen=True)
class Conflict:
    patch: str
    files: tuple[str, ...]
    hunks: tuple[BlamedHunk, ...]
    detail: str = ""


@dataclass(frozen=True)
class Verdict:
    name: str
    tag: str
    verdict: str  # one of VERDICTS
    resolved: bool = False  # a conflict the user resolved (refresh --continue)
    rewritten: bool = False  # the patch file was rewritten
    applied: bool = False  # applied after the command
    dropped: bool = False  # removed from the series (--drop-merged)


@dataclass(frozen=True)
class RefreshResult:
    route: str
    old_base: str | None
    new_base: Oid
    new_ref: str | None
    verdicts: tuple[Verdict, ...]
    head: Oid
    applied: tuple[str, ...]
    folded: tuple[str, ...] = ()  # paths folded into ``fold_into``
    fold_into: str | None = None
    stopped: Conflict | None = None
    aborted: bool = False

    def to_json(self) -> dict:
        return {
            "route": self.route,
            "old_base": self.old_base,
            "new_base": self.new_base,
            "new_ref": self.new_ref,
            "head": self.head,
            "applied": list(self.applied),
            "fold_into": self.fold_into,
            "folded": list(self.folded),
            "patches": [asdict(v) for v in self.verdicts],
            "stopped": conflict_json(self.stopped) if self.stopped else None,
            "aborted": self.aborted,
        }


@dataclass(frozen=True)
class CheckResult:
    target: Oid
    target_name: str
    old_base: str | None
    verdicts: tuple[Verdict, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def to_json(self) -> dict:
        return {
            "target": self.target,
            "target_name": self.target_name,
            "base": self.old_base,
            "ok": self.ok,
            "patches": [
                {"name": v.name, "tag": v.tag, "verdict": v.verdict} for v in self.verdicts
            ],
            "conflicts": [conflict_json(c) for c in self.conflicts],
        }


def conflict_json(c: Conflict) -> dict:
    return {
        "patch": c.patch,
        "files": list(c.files),
        "hunks": [
            {
                "path": b.hunk.path,
                "line": b.hunk.line,
                "expected": list(b.hunk.expected),
                "now": list(b.hunk.now),
                "wanted": list(b.hunk.wanted),
                "upstream_commits": [{"commit": u.oid, "subject": u.subject} for u in b.commits],
                "traced_lines": b.traced,
            }
            for b in c.hunks
        ],
        "detail": c.detail,
    }


@dataclass(frozen=True)
class State:
    """Everything a refresh needs to go on or to undo itself; saved while it is stopped."""

    orig_head: str
    branch: str | None
    old_base: str | None
    new_base: str
    new_ref: str | None
    route: str
    applied_before: tuple[str, ...]
    drop_merged: bool
    steps: tuple[Step, ...]
    fold_into: str | None = None
    folded: tuple[str, ...] = ()
    done: tuple[Done, ...] = ()
    stopped_at: str | None = None
    stop_head: str | None = None
    stop_tree: str | None = None
    merged_tree: str | None = None
    touched: tuple[str, ...] = ()
    conflicted: tuple[str, ...] = ()
    backup: str | None = None
    series_blobs: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({"version": 1, **asdict(self)}, indent=1, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str) -> State:
        data = json.loads(text)
        data.pop("version", None)
        data["steps"] = tuple(
            Step(s["name"], s["before"], s["after"], tuple(s["real"]) if s["real"] else None)
            for s in data["steps"]
        )
        data["done"] = tuple(Done(**d) for d in data["done"])
        for key in ("applied_before", "folded", "touched", "conflicted"):
            data[key] = tuple(data[key])
        return State(**data)


# -- the state file -----------------------------------------------------------------------------


def _load_state(git: Git) -> State:
    try:
        with open(state_path(git), encoding="utf-8") as f:
            return State.from_json(f.read())
    except FileNotFoundError:
        raise PatchstackError(
            "no refresh is in progress", "run 'patchstack refresh' to start one"
        ) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise PatchstackError(
            f"{state_path(git)} is damaged: {exc}",
            "look at it; removing it forgets the stopped refresh",
        ) from exc


def _state_dir(git: Git) -> str:
    return os.path.dirname(state_path(git))


def _save_state(git: Git, state: State) -> None:
    os.makedirs(_state_dir(git), exist_ok=True)
    write_atomic(state_path(git), state.to_json().encode())


def _clear_state(git: Git) -> None:
    for path in (state_path(git), os.path.join(_state_dir(git), INDEX_COPY)):
        if os.path.exists(path):
            os.unlink(path)
    git.delete_ref(BACKUP_REF)


# -- planning -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    route: str
    new_base: Oid
    new_ref: str | None
    stack: Stack  # the stack whose patches were applied (the patch side of a merge)


def _target(git: Git, series: Series, stack: Stack, onto: str | None) -> _Target:
    real = stack
    merged_upstream = None
    if not stack.applied:
        info = next(git.iter_stack(stack.head))
        if len(info.parents) == 2:
            sides = [stack_from_history(p, git.iter_stack(p)) for p in info.parents]
            patched = [i for i, s in enumerate(sides) if s.applied]
            if len(patched) == 1:
                real = sides[patched[0]]
                merged_upstream = info.parents[1 - patched[0]]
    if onto:
        new = git.rev_parse(onto)
        if new is None:
            raise PatchstackError(f"unknown revision '{onto}'", "give a commit, branch or tag")
        ref = None if _HEX_RE.match(onto) else onto
        return _Target("onto", new, ref, real)
    if merged_upstream:
        return _Target("merge", merged_upstream, None, real)
    if stack.base == series.base:
        return _Target("none", stack.base, None, stack)
    return _Target("rebased" if stack.applied else "pull", stack.base, None, stack)


def _old_chain(git: Git, engine: Engine, series: Series) -> list[Oid]:
    """C[0..n] from the patch files; a patch already contained in its base adds nothing."""
    n = len(series.entries)
    try:  # the engine's canonical chain: cached, or made in one stream
        engine.canonical(n)
        return [engine.canonical(k) for k in range(n + 1)]
    except ConflictError:
        pass
    chain = [engine.canonical(0)]
    for entry in series.entries:
        lp = engine.patch(entry.name)
        try:
            chain.append(engine.apply_exact(chain[-1], lp))
        except ConflictError:
            with git.temp_index() as idx:
                idx.read_tree(chain[-1])
                contained, _ = idx.apply(lp.data, entry.strip_level, reverse=True)
            if not contained:
                raise
            chain.append(chain[-1])
    return chain


def _steps(series: Series, chain: Sequence[Oid], real: dict[str, tuple[Oid, Oid]]) -> tuple:
    return tuple(
        Step(e.name, chain[i], chain[i + 1], real.get(e.name)) for i, e in enumerate(series.entries)
    )


def _real_changes(stack: Stack) -> dict[str, tuple[Oid, Oid]]:
    real = {}
    for i, ap in enumerate(stack.applied):
        real[ap.name] = (stack.applied[i - 1].tree if i else stack.base_tree, ap.tree)
    return real


def _labels(old_base: str | None, new_base: str, new_ref: str | None) -> tuple[str, str]:
    ours = f"new base {new_base[:12]}" + (f" ({new_ref})" if new_ref else "")
    base = f"old base {old_base[:12]}" if old_base else "old base"
    return ours, base


def _replay(
    git: Git,
    steps: Sequence[Step],
    start: int,
    tree: Oid,
    labels: tuple[str, str],
    keep_going: bool = False,
    skip: frozenset[str] = frozenset(),
    placer: Placer | None = None,
) -> tuple[list[Done], list[tuple[str, Oid, MergeResult]]]:
    """Carry steps[start:] onto ``tree``. Stops at the first conflict unless ``keep_going``
    (then the conflicting patch is left out). Returns the done patches and the conflicts as
    (name, the tree it was carried onto, merge result).

    With a ``placer`` (commits on the new base), a patch whose files upstream did not touch is
    committed in one fast-import stream, proven by its blob ids, with no merge at all; the
    others are merged with git's merge-ort, as without one.
    """
    done: list[Done] = []
    conflicts: list[tuple[str, Oid, MergeResult]] = []
    for step in steps[start:]:
        if step.name in skip:
            continue
        reuse = step.real is not None and step.real[0] == tree  # its applied commit fits
        if placer is not None and step.before != step.after and not reuse:
            commit = placer.place(step.name)
            if commit is not None:
                done.append(Done(step.name, tree, Oid(""), commit=commit))
                tree = Oid("")
                continue
        if placer is not None and not tree:
            tree = placer.resolve(done, tree)
        if step.real and step.real[0] == tree:
            new = step.real[1]
        elif tree == step.before:
            new = step.after
        elif step.before == step.after:
            new = tree
        else:
            merged = git.merge_trees(
                step.before, tree, step.after, (labels[0], step.name), base_label=labels[1]
            )
            if not merged.clean:
                conflicts.append((step.name, tree, merged))
                if keep_going:
                    continue
                break
            new = merged.tree
        commit = placer.commit(step.name, tree, new) if placer is not None and new != tree else None
        done.append(Done(step.name, tree, new, commit=commit))
        tree = new
    if placer is not None:
        placer.resolve(done, tree)
        placer.close()
    return done, conflicts


class Placer:
    """The commits of a replay on the new base, made as the replay goes (see `_replay`)."""

    def __init__(self, engine: Engine, parent: Oid, names: Sequence[str]) -> None:
        self.engine = engine
        self.parent = parent
        self.names = list(names)
        self.session: ProvenStream | None = None
        self.known: Known | None = None  # of the parent's tree, as far as streams looked

    def place(self, name: str) -> Oid | None:
        lp = self.engine.patch(name)
        if self.session is None:
            rest = self.names[self.names.index(name) :]
            paths = {p for n in rest for p in self.engine.patch(n).patch.paths}
            self.session = ProvenStream(self.engine.git, self.parent, paths, self.known)
        commit = self.session.commit(self.parent, lp, self.engine)
        if commit is not None:
            self.parent = commit
        return commit

    def commit(self, name: str, before: Oid, tree: Oid) -> Oid:
        """The commit of a merged patch: ``before`` -> ``tree`` on the current parent."""
        self.close()
        if self.known is not None:  # what the merge changed, from one raw diff
            self.known.update(self.engine.git.raw_diffs([(before, tree)])[0])
        self.parent = self.engine.commit(self.parent, tree, name)
        return self.parent

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.known = self.session.known()
            self.session = None

    def resolve(self, done: list[Done], tree: Oid) -> Oid:
        """Fill in the trees of the commits the stream made; returns the current tree."""
        self.close()
        pending = [i for i, d in enumerate(done) if not d.tree]
        if not pending:
            return tree
        trees = self.engine.git.trees_of([done[i].commit for i in pending])
        for i, t in zip(pending, trees, strict=True):
            done[i] = replace(done[i], tree=t)
        for i, d in enumerate(done):
            if not d.parent:  # carried onto the result of the patch before it
                done[i] = replace(d, parent=done[i - 1].tree)
        return done[-1].tree


def _same_hunks(a: Patch, b: Patch) -> bool:
    def key(p: Patch) -> list:
        return [(f.path, f.binary, tuple(h.lines for h in f.hunks)) for f in p.files]

    return key(a) == key(b)


@dataclass(frozen=True)
class _Classified:
    verdicts: dict[str, str]
    data: dict[str, bytes]  # new bytes of the patch files that change


def _classify(
    git: Git,
    engine: Engine,
    steps: Sequence[Step],
    done: Sequence[Done],
    commits: dict[str, Oid],
) -> _Classified:
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
    texts = _format_chain(git, commits, [d.name for d in moved])
    for d, old, new in zip(carried, old_raw, new_raw, strict=True):
        lp = engine.patch(d.name)
        if sorted(old) == sorted(new):
            verdicts[d.name] = "unchanged"
            continue
        text = strip_trailers(texts[d.name])
        if text == lp.data:
            verdicts[d.name] = "unchanged"
            continue
        fresh = parse_patch(text, d.name, lp.entry.strip_level)
        data[d.name] = text
        verdicts[d.name] = "offset" if _same_hunks(lp.patch, fresh) else "merged"
    return _Classified(verdicts, data)


def _format_chain(git: Git, commits: dict[str, Oid], wanted: Sequence[str]) -> dict[str, bytes]:
    """format-patch output of the commits of ``wanted``: one process over the linear chain
    ``commits`` (in order) when several are wanted, else one each."""
    if len(wanted) < 2:
        return {n: git.format_patch(commits[n]) for n in wanted}
    names = list(commits)
    texts = git.format_patches(commits[names[0]] + "^", commits[names[-1]])
    if len(texts) != len(names):  # not the linear chain it should be: one by one
        return {n: git.format_patch(commits[n]) for n in wanted}
    by_name = dict(zip(names, texts, strict=True))
    return {n: by_name[n] for n in wanted}


# -- conflict reports ---------------------------------------------------------------------------


def _find(lines: Sequence[str], seq: Sequence[str]) -> int | None:
    n = len(seq)
    for i in range(len(lines) - n + 1):
        if list(lines[i : i + n]) == list(seq):
            return i
    return None


def conflict_report(
    git: Git, name: str, merged: MergeResult, old_base: str | None, new_base: str
) -> Conflict:
    hunks: list[BlamedHunk] = []
    listing = git.ls_tree_paths(merged.tree, list(merged.conflicted)) if merged.conflicted else {}
    rng = f"{old_base}..{new_base}" if old_base and old_base != new_base else None
    for path in merged.conflicted:
        if path not in listing:
            continue
        text = git.read_blob(listing[path][1]).decode("utf-8", "surrogateescape")
        merged_lines = text.split("\n")
        base_blob = git.show_file(new_base, path)
        base_lines = base_blob.decode("utf-8", "surrogateescape").split("\n") if base_blob else []
        for h in parse_conflict_markers(path, text):
            commits: list[tuple[str, str]] = []
            traced = False
            if rng:
                anchor = list(h.now)
                if not any(ln.strip() for ln in anchor):
                    end = h.line + len(h.now) + len(h.expected) + len(h.wanted) + 2
                    anchor = [
                        merged_lines[i] for i in (h.line - 2, end) if 0 <= i < len(merged_lines)
                    ]
                pos = _find(base_lines, anchor) if anchor else None
                if pos is not None:
                    commits = git.log_lines(rng, path, pos + 1, pos + len(anchor))
                    traced = True
                if not commits:
                    commits = [(c, s) for c, s, _f in git.log_upstream(rng, [path])]
                    traced = False
            hunks.append(BlamedHunk(h, tuple(UpstreamCommit(c, s) for c, s in commits), traced))
    return Conflict(name, merged.conflicted, tuple(hunks), merged.messages.strip())


def find_markers(ws: Workspace, paths: Sequence[str]) -> list[tuple[str, int]]:
    """(path, line) of conflict markers left in the work tree files ``paths``."""
    found = []
    for path in paths:
        full = os.path.join(ws.git.top, path)
        if not os.path.isfile(full):
            continue
        with open(full, "rb") as f:
            text = f.read().decode("utf-8", "surrogateescape")
        for i, line in enumerate(text.split("\n"), start=1):
            if _MARKER_RE.match(line):
                found.append((path, i))
    return found


# -- refresh ------------------------------------------------------------------------------------


def refresh(
    ws: Workspace,
    onto: str | None = None,
    drop_merged: bool = False,
    patch: str | None = None,
) -> RefreshResult:
    git = ws.git
    guard(git)
    series = ws.load_series()
    stack = read_stack(git)
    target = _target(git, series, stack, onto)
    missing = [n for n in target.stack.names if n not in series]
    if missing:
        raise PatchstackError(
            f"applied patch '{missing[0]}' is not in the series",
            "put it back into the series file, or pop it first",
        )
    git.refresh_index()
    dirty = git.dirty(exclude=ws.in_tree)
    if dirty.unmerged:
        raise RefusedError(
            "unmerged files: " + ", ".join(dirty.unmerged), "finish or abort the git merge first"
        )
    engine = make_engine(ws, series, target.stack)
    try:
        chain = _old_chain(git, engine, series)
        real = _real_changes(target.stack)
        head = stack.head
        src: tuple[Oid, tuple[str, ...]] = (git.tree_of(head), ())
        fold_into, folded = None, ()
        moved = target.new_base != target.stack.base
        if patch and moved:
            raise PatchstackError(
                "--patch folds uncommitted edits, and the base moved",
                "refresh onto the new base first (commit or capture the edits meanwhile)",
            )
        if not moved and target.stack.applied:
            fold_into, folded, real_tree = _fold_plan(ws, series, target.stack, dirty, patch)
            if fold_into:
                real[fold_into] = (real[fold_into][0], real_tree[0])
                src = (real_tree[1], folded)
        elif patch:
            raise PatchstackError("no patch is applied", "--patch folds edits into an applied one")
        state = State(
            orig_head=head,
            branch=git.head_ref(),
            old_base=series.base,
            new_base=target.new_base,
            new_ref=target.new_ref,
            route=target.route if not fold_into else "fold",
            applied_before=target.stack.names,
            drop_merged=drop_merged,
            steps=_steps(series, chain, real),
            fold_into=fold_into,
            folded=folded,
        )
        git.prepare_merges(
            [(s.before, s.after, s.name) for s in state.steps if s.before != s.after]
        )
        placer = Placer(engine, Oid(target.new_base), [s.name for s in state.steps])
        done, conflicts = _replay(
            git, state.steps, 0, git.tree_of(target.new_base), _labels_of(state), placer=placer
        )
        if conflicts:
            return _stop(ws, state, engine, series, done, conflicts[0], src, head, dirty)
        return _finish(ws, state, engine, series, done, src, head)
    finally:
        engine.close()


def _labels_of(state: State) -> tuple[str, str]:
    return _labels(state.old_base, state.new_base, state.new_ref)


def _fold_plan(ws, series, stack, dirty, patch):
    """Which applied patch takes which edits, and its new tree: (name, paths, (tree, W))
    where W is HEAD's tree with the edited files as they are in the work tree."""
    git = ws.git
    if patch:
        from .selection import resolve_name

        name = resolve_name(series, patch)
        if stack.find(name) is None:
            raise PatchstackError(
                f"patch '{name}' is not applied", "push it first, or fold into an applied one"
            )
    else:
        name = stack.applied[-1].name
    own = set(ws.read_patch(series.entry(name))[1].paths)
    paths = tuple(p for p in dirty.modified if p in own)
    if not paths:
        others = [
            (p, ap.name)
            for ap in stack.applied
            for p in ws.read_patch(series.entry(ap.name))[1].paths
            if p in dirty.modified
        ]
        if others:
            path, owner = others[0]
            raise PatchstackError(
                f"the uncommitted edits in {path} belong to '{owner}', not to '{name}'",
                f"fold them with 'patchstack refresh --patch {owner}'",
            )
        return None, (), None
    if any(p in dirty.partly_staged for p in paths):
        raise RefusedError(
            "staged changes differ from the work tree in: "
            + ", ".join(p for p in paths if p in dirty.partly_staged),
            "stage or unstage them fully (git add / git restore --staged), then try again",
        )
    with git.temp_index() as idx:
        idx.read_tree(stack.head)
        idx.add_paths(list(paths))
        worktree = idx.write_tree()
    ap = stack.find(name)
    if ap.commit == stack.head:
        tree = worktree
    else:
        merged = git.merge_trees(stack.top_tree, ap.tree, worktree, ("patch", "edits"))
        if not merged.clean:
            raise RefusedError(
                f"the edits in {', '.join(paths)} do not fold cleanly into '{name}'",
                "patches above it change the same lines: fold into the top patch instead",
            )
        tree = merged.tree
    return name, paths, (tree, worktree)


def _commit_chain(engine: Engine, base: Oid, done: Sequence[Done]) -> tuple[Oid, dict[str, Oid]]:
    parent = base
    commits = {}
    for d in done:
        if d.upstream:
            continue
        parent = Oid(d.commit) if d.commit else engine.commit(parent, d.tree, d.name)
        commits[d.name] = parent
    return parent, commits


def _finish(
    ws: Workspace,
    state: State,
    engine: Engine,
    series: Series,
    done: Sequence[Done],
    src: tuple[Oid, Sequence[str]],
    current_head: Oid,
) -> RefreshResult:
    git = ws.git
    new_base = Oid(state.new_base)
    _top, commits = _commit_chain(engine, new_base, done)
    classified = _classify(git, engine, state.steps, done, commits)
    resolved = {d.name for d in done if d.resolved}
    new_series = series.with_base(new_base, state.new_ref)
    dropped = set()
    if state.drop_merged:
        for d in done:
            if d.upstream:
                new_series = new_series.remove(d.name)
                dropped.add(d.name)
    upstream = {d.name for d in done if d.upstream}
    applied_after = [n for n in new_series.names if n in state.applied_before and n not in upstream]
    head = _final_head(git, engine, new_series, new_base, done, commits, applied_after, classified)
    files = [FileWrite(ws.patch_path(n), data) for n, data in classified.data.items()]
    text = new_series.format().encode("utf-8", "surrogateescape")
    if text != series.format().encode("utf-8", "surrogateescape"):
        files.append(FileWrite(ws.series_path, text))
    publish(ws, current_head, head, "refresh", files, worktree_from=(src[0], tuple(src[1])))
    if in_progress(git):
        _clear_state(git)
    verdicts = tuple(
        Verdict(
            e.name,
            e.tag,
            classified.verdicts[e.name],
            resolved=e.name in resolved,
            rewritten=e.name in classified.data,
            applied=e.name in applied_after,
            dropped=e.name in dropped,
        )
        for e in series.entries
    )
    return RefreshResult(
        state.route,
        state.old_base,
        new_base,
        state.new_ref,
        verdicts,
        head,
        tuple(applied_after),
        state.folded,
        state.fold_into,
    )


def _final_head(git, engine, new_series, new_base, done, commits, applied_after, classified):
    """The new base plus one commit per patch to keep applied."""
    chain_names = [d.name for d in done if not d.upstream]
    if applied_after == chain_names[: len(applied_after)]:
        return commits[applied_after[-1]] if applied_after else new_base

    def load(entry):
        data = classified.data.get(entry.name) or engine.patch(entry.name).data
        return LoadedPatch(entry, data, parse_patch(data, entry.name, entry.strip_level))

    trees = {d.name: d.tree for d in done}
    new_engine = Engine(git, new_series, load, new_base, engine.default_author)
    chain = [git.tree_of(new_base)]
    for e in new_series.entries:
        chain.append(trees.get(e.name, chain[-1]))
    new_engine.seed(chain)
    try:
        built = new_engine.build(new_base, chain[0], [], applied_after)
    finally:
        new_engine.close()
    return built[-1][1]


def _stop(
    ws: Workspace,
    state: State,
    engine: Engine,
    series: Series,
    done: Sequence[Done],
    conflict: tuple[str, Oid, MergeResult],
    src: tuple[Oid, Sequence[str]],
    current_head: Oid,
    dirty=None,
) -> RefreshResult:
    git = ws.git
    name, parent_tree, merged = conflict
    stop_head, _commits = _commit_chain(engine, Oid(state.new_base), done)
    touched = tuple(git.changed_paths(parent_tree, merged.tree))
    state = replace(
        state,
        done=tuple(done),
        stopped_at=name,
        stop_head=stop_head,
        stop_tree=parent_tree,
        merged_tree=merged.tree,
        touched=touched,
        conflicted=merged.conflicted,
    )
    fresh = state.backup is None
    if fresh:
        state = _backup(ws, state, series, dirty)
    _save_state(git, state)
    try:
        publish(
            ws,
            current_head,
            stop_head,
            f"refresh stopped at {name}",
            worktree_from=(src[0], tuple(src[1])),
            worktree_to=merged.tree,
        )
    except BaseException:
        if fresh:
            _clear_state(git)
        raise
    report = conflict_report(git, name, merged, state.old_base, state.new_base)
    so_far = _classify(git, engine, state.steps, done, _commits).verdicts
    so_far[name] = "conflict"
    resolved = {d.name for d in done if d.resolved}
    verdicts = tuple(
        Verdict(e.name, e.tag, so_far[e.name], resolved=e.name in resolved)
        for e in series.entries
        if e.name in so_far
    )
    return RefreshResult(
        state.route,
        state.old_base,
        Oid(state.new_base),
        state.new_ref,
        verdicts,
        stop_head,
        (),
        state.folded,
        state.fold_into,
        stopped=report,
    )


def _backup(ws: Workspace, state: State, series: Series, dirty) -> State:
    """Snapshot what --abort restores: the index bytes, the work tree, the series files."""
    git = ws.git
    os.makedirs(_state_dir(git), exist_ok=True)
    index = os.path.join(git.git_dir, "index")
    if os.path.exists(index):
        with open(index, "rb") as f:
            write_atomic(os.path.join(_state_dir(git), INDEX_COPY), f.read())
    with git.temp_index() as idx:
        idx.read_tree(state.orig_head)
        paths = list(dirty.modified + dirty.untracked) if dirty else []
        if paths:
            idx.add_paths(paths)
        worktree = idx.write_tree()
    names = ["series", *series.names]
    blobs = git.hash_files([os.path.join(ws.series_dir, n) for n in names])
    series_tree = git.mktree([("100644", b, n) for n, b in zip(names, blobs, strict=True)])
    tree = git.mktree([("040000", worktree, "worktree"), ("040000", series_tree, "series")])
    ident = "patchstack <patchstack@invalid>"
    commit = git.commit_tree(
        tree, [state.orig_head], "patchstack refresh backup\n", ident, "1000000000 +0000"
    )
    git.delete_ref(BACKUP_REF)
    git.update_refs([(BACKUP_REF, commit, None)], "patchstack: refresh backup")
    return replace(state, backup=commit, series_blobs=dict(zip(names, blobs, strict=True)))


def continue_(ws: Workspace) -> RefreshResult:
    git = ws.git
    state = _load_state(git)
    left = find_markers(ws, state.conflicted)
    if left:
        raise RefusedError(
            "conflict markers remain: " + ", ".join(f"{p}:{n}" for p, n in left[:10]),
            "edit the files to resolve them, then run 'patchstack refresh --continue' again",
        )
    head = git.head()
    if head != state.stop_head:
        raise RefusedError(
            f"HEAD moved since the refresh stopped (it was {state.stop_head[:12]})",
            f"'git reset --soft {state.stop_head[:12]}' and continue, or"
            " 'patchstack refresh --abort'",
        )
    names = ["series", *(s.name for s in state.steps)]
    now = git.hash_files([os.path.join(ws.series_dir, n) for n in names])
    changed = [n for n, b in zip(names, now, strict=True) if state.series_blobs.get(n) != b]
    if changed:
        raise RefusedError(
            "series files changed while the refresh was stopped: " + ", ".join(changed),
            "put them back, or run 'patchstack refresh --abort'",
        )
    series = ws.load_series()
    # A file the patch creates and the user deleted while resolving is in neither place.
    before = git.ls_tree(state.stop_tree)
    paths = [p for p in state.touched if p in before or os.path.lexists(os.path.join(git.top, p))]
    with git.temp_index() as idx:
        idx.read_tree(state.stop_tree)
        if paths:
            idx.add_paths(paths)
        resolved_tree = idx.write_tree()
    stack = read_stack(git)
    engine = make_engine(ws, series, stack)
    try:
        k = [s.name for s in state.steps].index(state.stopped_at)
        done = [*state.done, Done(state.stopped_at, Oid(state.stop_tree), resolved_tree, True)]
        more, conflicts = _replay(git, state.steps, k + 1, resolved_tree, _labels_of(state))
        done += more
        src = (resolved_tree, state.touched)
        if conflicts:
            return _stop(ws, state, engine, series, done, conflicts[0], src, head)
        return _finish(ws, state, engine, series, done, src, head)
    finally:
        engine.close()


def abort(ws: Workspace) -> RefreshResult:
    git = ws.git
    state = _load_state(git)
    orig = Oid(state.orig_head)
    git.reset_worktree(orig)
    if state.backup:
        snap_tree = Oid(git.out("rev-parse", f"{state.backup}^{{tree}}:worktree").strip())
        for _om, nm, _oo, no, path in git.raw_diffs([(git.tree_of(orig), snap_tree)])[0]:
            full = os.path.join(git.top, path)
            if set(no) == {"0"}:
                if os.path.lexists(full):
                    os.unlink(full)
                continue
            os.makedirs(os.path.dirname(full), exist_ok=True)
            if nm == "120000":
                if os.path.lexists(full):
                    os.unlink(full)
                os.symlink(git.read_blob(no), full)
                continue
            write_atomic(full, git.read_blob(no))
            os.chmod(full, 0o755 if nm == "100755" else 0o644)
    for name, blob in state.series_blobs.items():
        path = os.path.join(ws.series_dir, name)
        data = git.read_blob(blob)
        if _read(path) != data:
            write_atomic(path, data)
    head = git.head()
    if head != orig:
        git.update_refs([(state.branch or "HEAD", orig, head)], "patchstack: refresh --abort")
    copy = os.path.join(_state_dir(git), INDEX_COPY)
    if os.path.exists(copy):
        with open(copy, "rb") as f:
            write_atomic(os.path.join(git.git_dir, "index"), f.read())
    git.refresh_index()
    _clear_state(git)
    return RefreshResult(
        state.route,
        state.old_base,
        Oid(state.new_base),
        state.new_ref,
        (),
        orig,
        state.applied_before,
        aborted=True,
    )


# -- check --------------------------------------------------------------------------------------


def check(ws: Workspace, onto: str | None, sel: Selector) -> CheckResult:
    """Would the series apply on ``onto``? Objects only: no file, ref or index is written."""
    git = ws.git
    guard(git)
    series = ws.load_series()
    stack = read_stack(git)
    if onto:
        target = git.rev_parse(onto)
        if target is None:
            raise PatchstackError(f"unknown revision '{onto}'", "give a commit, branch or tag")
        name = onto
    else:
        upstream = git.upstream_of_head()
        target = git.rev_parse(upstream) if upstream else None
        name = upstream or "HEAD"
        if target is None:
            target, name = stack.base, "HEAD" if not stack.applied else "HEAD (below the stack)"
    skip = frozenset(e.name for e in series.entries if not sel.keeps_tag(e.tag))
    engine = make_engine(ws, series, stack)
    try:
        chain = _old_chain(git, engine, series)
        steps = _steps(series, chain, {})
        labels = _labels(series.base, target, name)
        git.prepare_merges(
            [
                (s.before, s.after, s.name)
                for s in steps
                if s.before != s.after and s.name not in skip
            ]
        )
        placer = Placer(engine, target, [s.name for s in steps])
        done, conflicts = _replay(
            git, steps, 0, git.tree_of(target), labels, keep_going=True, skip=skip, placer=placer
        )
        _top, commits = _commit_chain(engine, target, done)
        classified = _classify(git, engine, steps, done, commits)
    finally:
        engine.close(save_cache=False)
    bad = {c[0] for c in conflicts}
    verdicts = tuple(
        Verdict(e.name, e.tag, "conflict" if e.name in bad else classified.verdicts[e.name])
        for e in series.entries
        if e.name not in skip
    )
    reports = tuple(conflict_report(git, n, m, series.base, target) for n, _t, m in conflicts)
    return CheckResult(target, name, series.base, verdicts, reports)


# -- drift (status) -----------------------------------------------------------------------------


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

    def to_json(self) -> dict:
        return {
            "base": self.base,
            "target": self.target,
            "target_name": self.target_name,
            "commits": self.commits,
            "touching": [asdict(c) for c in self.touching],
        }


def drift(ws: Workspace) -> Drift | None:
    """Upstream commits between the series base and the upstream ref (or HEAD below the
    stack), and those of them that touch files the patches touch."""
    git = ws.git
    series = ws.load_series()
    base = series.base
    if not base or git.rev_parse(base) is None:
        return None
    upstream = git.upstream_of_head()
    target = git.rev_parse(upstream) if upstream else None
    name = upstream or "HEAD"
    if target is None:
        target = read_stack(git).base
    if target == base or not git.is_ancestor(base, target):
        return Drift(base, target, name, 0, ())
    owners: dict[str, list[str]] = {}
    for e in series.entries:
        for p in ws.read_patch(e)[1].paths:
            owners.setdefault(p, []).append(e.name)
    rng = f"{base}..{target}"
    count = len(git.log_upstream(rng))
    touching = []
    if owners:
        for oid, subject, files in git.log_upstream(rng, sorted(owners)):
            hit = [f for f in files if f in owners]
            patches = tuple(dict.fromkeys(n for f in hit for n in owners[f]))
            touching.append(DriftCommit(oid, subject, tuple(hit), patches))
    return Drift(base, target, name, count, tuple(touching))


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
