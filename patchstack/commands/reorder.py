"""Changes in a new order, for the commands that move them (delete, move, fold, split);
`reword` is the other way, for the commands that change messages and keep every tree.

Each patch of the new series is a list of changes of the old canonical chain (``C[k-1] ->
C[k]``, see `engine.chain`), carried in the new order from the series base with git's
three-way merge, exactly as push places a patch. A change that does not merge stops the command
before anything is written, with the conflict report naming the patch and the one it was moved
across. A patch file whose change kept its blobs keeps its bytes; the others are written again
by ``format-patch`` from a commit with the patch's own header (so a PR diff shows only what
moved). The applied patches follow in the new order: when they are a prefix of the series on
its base, their commits are the new chain's, made in one fast-import stream; otherwise the
engine builds them (three-way placement) on top of the unchanged applied prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..checkout import Checkout
from ..engine.build import build
from ..engine.chain import Engine
from ..engine.loaded import LoadedPatch
from ..engine.merging import conflict_hunks
from ..engine.replay import old_chain
from ..engine.verdicts import format_chain
from ..errors import ConflictError, PatchstackError
from ..git import Git, MergeResult
from ..model import message, trailers
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.patchfile import parse_patch
from ..model.series import Entry, Series
from ..model.stack import AppliedPatch, Stack
from ..transaction import FileWrite, Plan, publish
from .refresh.proof import EDITED, prove, refuse_dropping
from .state import make_engine, require_movable

Change = tuple[Oid, Oid]  # (before, after) trees of the old canonical chain


@dataclass(frozen=True)
class Part:
    """One patch of the new series."""

    entry: Entry
    changes: tuple[Change, ...]  # carried in this order
    sources: tuple[str, ...]  # the old patches whose changes it carries (the first: its file)
    applied: bool
    mail: bytes | None = None  # a new header and description (None: the file's own)


@dataclass(frozen=True)
class Reordered:
    head: Oid
    files: tuple[FileWrite, ...]
    rewritten: tuple[str, ...]  # patch files written again because their change moved
    trees: tuple[Oid, ...]  # the new canonical chain


def old_changes(ws: Checkout, series: Series, engine: Engine) -> list[Change]:
    """The change of each patch of the series: (C[k-1], C[k])."""
    chain = old_chain(ws.git, engine, series)
    return [(chain[k], chain[k + 1]) for k in range(len(series.entries))]


def parts_in_order(
    series: Series,
    new_series: Series,
    changes: Sequence[Change],
    stack: Stack,
    special: Mapping[str, Sequence[Part]] | None = None,
) -> list[Part]:
    """The parts of ``new_series``: each patch with its own old change and applied state,
    except the names in ``special``, which become the parts given there (none: left out)."""
    parts: list[Part] = []
    for e in new_series.entries:
        if special and e.name in special:
            parts.extend(special[e.name])
        else:
            on = stack.find(e.name) is not None
            parts.append(Part(e, (changes[series.index(e.name)],), (e.name,), on))
    return parts


def publish_reorder(
    ws: Checkout,
    verb: str,
    series: Series,
    stack: Stack,
    plan: Callable[[Engine, Sequence[Change]], tuple[Series, Sequence[Part]]],
    removed: Sequence[str] = (),
    keep_files: bool = False,
    discard: bool = False,
) -> Reordered:
    """The one way delete, move, fold and split change the series: ``plan`` gives the new
    series and its parts from the old changes; they are carried (`reorder`) and published as
    one ``verb`` entry of the operation log."""
    if stack.applied:
        require_movable(stack)
    engine = make_engine(ws, series, stack)
    try:
        changes = old_changes(ws, series, engine)
        new_series, parts = plan(engine, changes)
        done = reorder(
            ws,
            stack,
            engine,
            changes,
            new_series,
            parts,
            removed,
            keep_files,
            f"patchstack {verb}",
            discard,
        )
    finally:
        engine.close()
    publish(ws, Plan(verb, stack.head, done.head, done.files))
    return done


def reorder(
    ws: Checkout,
    stack: Stack,
    engine: Engine,
    changes: Sequence[Change],
    new_series: Series,
    parts: Sequence[Part],
    removed: Sequence[str] = (),
    keep_files: bool = False,
    verb: str = "this command",
    discard: bool = False,
) -> Reordered:
    """Carry ``parts`` in their order from the series base (``changes``: `old_changes`); the
    new HEAD and the files to write. ``removed``: old patches no longer in the series (their
    files go unless ``keep_files``). Raises ConflictError (nothing written) when a change does
    not merge; refuses to rebuild an applied commit that differs from its patch file unless
    ``discard`` (``verb`` is the command the refusal names). ``engine`` is over the old series."""
    git = ws.git
    series = engine.series
    if stack.applied and any(n not in series for n in stack.names):
        missing = next(n for n in stack.names if n not in series)
        raise PatchstackError(
            f"applied patch '{missing}' is not in the series",
            "put it back into the series file, or pop it first",
        )
    old_names = list(series.names)
    same = 0  # parts before the first that differs from the old series
    while same < min(len(parts), len(old_names)) and _unchanged(
        parts[same], series.entries[same], changes[same]
    ):
        same += 1
    trees = _new_chain(git, engine, changes, parts, same, old_names, removed)
    target = [p.entry.name for p in parts if p.applied]
    proof = prove(ws, series, stack)
    keep = _kept(stack, target, {p.entry.name for p in parts[:same]} - set(proof.named(EDITED)))
    if not discard:
        refuse_dropping(proof, [ap.name for ap in stack.applied[len(keep) :]], verb)
    datas = {p.entry.name: _provisional(ws, series, p) for p in parts}
    moved = _moved(git, parts, trees, same, dict(zip(old_names, changes, strict=True)))
    # The applied patches are the new chain's first commits when they are a prefix of the
    # series on its base, above a kept prefix whose tree is the chain's.
    fast = (
        stack.base == engine.canonical_base
        and target == [p.entry.name for p in parts[: len(target)]]
        and (not keep or keep[-1].tree == trees[len(keep)])
    )
    last = moved[-1] + 1 if moved else 0
    start, end = (len(keep), max(len(target), last)) if fast else (moved[0] if moved else 0, last)
    chain: dict[str, Oid] = {}
    if start < end:
        if fast:
            parent = keep[-1].commit if keep else stack.base
        else:
            parent = git.commit_tree(trees[start], [], "parent\n", *engine.default_author())
        new_engine = _engine_over(git, engine, new_series, datas)
        try:
            chain = _commit_chain(new_engine, parent, parts[start:end], trees[start + 1 :])
        finally:
            new_engine.close()
    wanted = [parts[j].entry.name for j in moved]
    texts = format_chain(git, chain, wanted)
    fresh = {n: trailers.strip_from_mail(texts[n]) for n in wanted}
    final = {**datas, **fresh}
    for name in fresh:  # format-patch writes a/ b/ prefixes: the entry's -pN becomes quilt's -p1
        entry = new_series.entry(name)
        if entry.strip not in (None, 1):
            new_series = new_series.replace_entry(name, replace(entry, strip=None))
    files = _file_writes(ws, series, parts, final, removed, keep_files)
    if new_series.format() != series.format():
        text = new_series.format().encode("utf-8", "surrogateescape")
        files.append(FileWrite(ws.series_path, text))
    head = stack.head
    if target != [ap.name for ap in keep] or len(keep) != len(stack.applied):
        if len(target) == len(keep):
            head = keep[-1].commit if keep else stack.base
        elif fast:
            head = chain[target[-1]]
        else:
            head = _rebuild(ws, stack, engine, new_series, keep, target[len(keep) :], trees, final)
    return Reordered(head, tuple(files), tuple(fresh), tuple(trees))


def _new_chain(
    git: Git,
    engine: Engine,
    changes: Sequence[Change],
    parts: Sequence[Part],
    same: int,
    old_names: Sequence[str],
    removed: Sequence[str],
) -> list[Oid]:
    """T[0..n]: the series base, then each part's changes carried onto the tree before it."""
    git.prepare_merges(  # the merges' fixed sides, in one stream
        [(b, a, p.entry.name) for p in parts[same:] for b, a in p.changes if b != a]
    )
    trees = [changes[0][0] if changes else git.tree_of(engine.canonical_base)]
    for j, part in enumerate(parts):
        tree = trees[-1]
        if j < same:
            trees.append(part.changes[0][1])
            continue
        for before, after in part.changes:
            tree = _carry(git, engine, before, tree, after, part, parts, old_names, removed)
        if tree == trees[-1] and any(b != a for b, a in part.changes):
            raise PatchstackError(
                f"patch '{part.entry.name}' would change nothing at its new place",
                "nothing was changed",
            )
        trees.append(tree)
    return trees


def _unchanged(part: Part, old: Entry, change: Change) -> bool:
    e = part.entry
    return (
        part.sources == (old.name,)
        and part.changes == (change,)
        and part.mail is None
        and (e.name, e.tag, e.strip) == (old.name, old.tag, old.strip)
    )


def _kept(stack: Stack, target: Sequence[str], unchanged: set[str]) -> list[AppliedPatch]:
    """The applied prefix that stays as it is: same patches, in the same places."""
    keep: list[AppliedPatch] = []
    for ap, want in zip(stack.applied, target, strict=False):
        if ap.name != want or want not in unchanged:
            break
        keep.append(ap)
    return keep


def _carry(
    git: Git,
    engine: Engine,
    before: Oid,
    tree: Oid,
    after: Oid,
    part: Part,
    parts: Sequence[Part],
    old_names: Sequence[str],
    removed: Sequence[str],
) -> Oid:
    """``before -> after`` carried onto ``tree`` (push's placement), or a ConflictError."""
    name = part.entry.name
    result = engine.carry(before, tree, after, name)
    if isinstance(result, MergeResult):
        files = result.conflicted or tuple(git.changed_paths(before, after))
        others = _crossed(engine, part, parts, old_names, removed, files)
        gone = [n for n in others if n in removed]
        crossed = [n for n in others if n not in removed]
        notes = []
        if gone:
            notes.append("deleted patches that changed these files: " + ", ".join(gone))
        if crossed:
            notes.append("patches it moves across that change these files: " + ", ".join(crossed))
        report = Conflict(
            name,
            tuple(files),
            tuple(conflict_hunks(git, result.tree, result.conflicted)),
            detail=result.messages.strip(),
            merged_tree=result.tree,
            note="; ".join(notes),
        )
        with_whom = f" with '{others[0]}'" if others else ""
        if others and others[0] in removed:
            raise ConflictError(
                f"patch '{name}' conflicts{with_whom}: it cannot do without it",
                report,
                f"it changes lines '{others[0]}' made: delete it too, or fold '{others[0]}'"
                " into it; nothing was changed",
            )
        raise ConflictError(
            f"patch '{name}' conflicts{with_whom} in the new order",
            report,
            "they change the same lines: keep their order, or fold one into the other;"
            " nothing was changed",
        )
    return result


def _crossed(
    engine: Engine,
    part: Part,
    parts: Sequence[Part],
    old_names: Sequence[str],
    removed: Sequence[str],
    files: Sequence[str],
) -> tuple[str, ...]:
    """The old patches whose order relative to ``part`` changed (or that left the series),
    and that touch ``files``."""
    old_pos = {n: i for i, n in enumerate(old_names)}
    new_pos = {s: j for j, p in enumerate(parts) for s in p.sources}
    mine = part.sources[0]
    found = []
    for name in old_names:
        if name in part.sources:
            continue
        crossed = name in removed or (
            name in new_pos and (old_pos[name] < old_pos[mine]) != (new_pos[name] < new_pos[mine])
        )
        if crossed and set(engine.patch(name).patch.paths) & set(files):
            found.append(name)
    return tuple(found)


def _provisional(ws: Checkout, series: Series, part: Part) -> bytes:
    """The part's file before its diff is regenerated: its source's bytes, with the new
    header and description when it has one."""
    source = series.entry(part.sources[0])
    data, patch = ws.read_patch(source)
    if part.mail is None:
        return data
    return message.splice(part.mail, data, message.line_offset(data, patch.diff_lineno))


def _engine_over(
    git: Git, engine: Engine, new_series: Series, datas: Mapping[str, bytes]
) -> Engine:
    def load(entry: Entry) -> LoadedPatch:
        data = datas[entry.name]
        return LoadedPatch(entry, data, parse_patch(data, entry.name, entry.strip_level))

    return Engine(git, new_series, load, engine.canonical_base, engine.default_author, engine.store)


def _moved(
    git: Git,
    parts: Sequence[Part],
    trees: Sequence[Oid],
    same: int,
    originals: Mapping[str, Change],
) -> list[int]:
    """The parts whose file is written again: all but those that carry exactly one old
    patch's change with the very same blobs."""
    moved: list[int] = []
    pairs = [(trees[j], trees[j + 1]) for j in range(same, len(parts))]
    olds = [originals[parts[j].sources[0]] for j in range(same, len(parts))]
    raws = git.raw_diffs(pairs + olds)
    new_raw, old_raw = raws[: len(pairs)], raws[len(pairs) :]
    for j, new, old in zip(range(same, len(parts)), new_raw, old_raw, strict=True):
        part = parts[j]
        whole = part.changes == (originals[part.sources[0]],) and len(part.sources) == 1
        if not whole or sorted(new) != sorted(old):
            moved.append(j)
    return moved


def _commit_chain(
    engine: Engine, parent: Oid, parts: Sequence[Part], trees: Sequence[Oid]
) -> dict[str, Oid]:
    """Commits of ``parts`` with these trees, one on the other from ``parent``: the very
    commits the engine makes (`Committer.chain`)."""
    items = [(engine.patch(p.entry.name), t) for p, t in zip(parts, trees, strict=False)]
    made = engine.committer.chain(parent, items)
    return {p.entry.name: c for p, c in zip(parts, made, strict=False)}


def _file_writes(
    ws: Checkout,
    series: Series,
    parts: Sequence[Part],
    final: Mapping[str, bytes],
    removed: Sequence[str],
    keep_files: bool,
) -> list[FileWrite]:
    files = []
    for part in parts:
        name = part.entry.name
        if name in series and ws.read_patch(series.entry(name))[0] == final[name]:
            continue
        files.append(FileWrite(ws.patch_path(name), final[name]))
    if not keep_files:
        files += [FileWrite(ws.patch_path(n), None) for n in removed]
    return files


def _rebuild(
    ws: Checkout,
    stack: Stack,
    engine: Engine,
    new_series: Series,
    keep: Sequence[AppliedPatch],
    rest: Sequence[str],
    trees: Sequence[Oid],
    final: Mapping[str, bytes],
) -> Oid:
    """The applied patches ``rest``, in the new order, on top of ``keep``."""
    if not rest:
        return keep[-1].commit if keep else stack.base
    new_engine = _engine_over(ws.git, engine, new_series, final)
    new_engine.seed(list(trees))
    ws.progress.step("building commits")
    try:
        built = build(new_engine, stack.base, stack.base_tree, keep, rest, ws.progress)
    finally:
        new_engine.close()
    return built.head
