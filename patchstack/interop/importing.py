"""Importing: every source made a commit on a throwaway chain from the series base, exactly
or by a three-way merge (never with fuzz); the patch files regenerated from the chain with one
``format-patch``; the series directory written through the transaction."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..checkout import Checkout as Workspace
from ..commands.state import make_engine, plain_series, read_stack
from ..engine.merging import conflict_hunks, merge, misfit_notes
from ..errors import ConflictError, GitFailure, PatchstackError, RefusedError
from ..git import Git, TempIndex
from ..model import trailers
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.imported import locate_preimage
from ..model.patchfile import parse_patch
from ..model.series import TAGS, Entry, name_key, new_series, parse_tags
from ..progress import QUIET, Progress
from ..transaction import FileWrite, Plan, publish
from .sources import Source, read_commits, read_mbox, read_quilt

_ANCHOR_IDENT = ("patchstack <patchstack@invalid>", "1000000000 +0000")


@dataclass(frozen=True)
class Imported:
    name: str
    tag: str
    labels: tuple[str, ...]
    origin: str
    method: str  # "exact", "three-way merge"
    notes: tuple[str, ...]  # why a merge was needed, per file and hunk


@dataclass(frozen=True)
class ImportResult:
    series_path: str
    base: Oid
    created: bool  # the series file was created by this import
    patches: tuple[Imported, ...]
    skipped: tuple[tuple[str, str], ...]  # (name or origin, why)
    warnings: tuple[str, ...] = ()  # what was read as GNU patch reads it (quilt_tolerance)
    plain_head: int = 0  # plain commits of HEAD that carry the series (`state.plain_series`)

    @property
    def merged(self) -> list[Imported]:
        return [p for p in self.patches if p.method != "exact"]


def import_quilt(
    ws: Workspace, directory: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    full = os.path.abspath(os.path.join(ws.cwd, directory))
    if os.path.isdir(full) and os.path.abspath(ws.series_dir) == full:
        raise RefusedError(
            f"{directory} is the series directory itself; importing would overwrite its files",
            f"move it first (mv {directory} quilt-patches) and import from there",
        )
    tree = _start_tree(ws, base)
    listing: list[dict[str, tuple[str, str]]] = []

    def exists(path: str) -> bool:
        if not listing:
            listing.append(ws.git.ls_tree(tree))
        return path in listing[0]

    sources, skipped, warnings = read_quilt(full, ws.display(full), exists, _taken(ws, append))
    result = _import(ws, sources, skipped, tag, append, base, None)
    return replace(result, warnings=tuple(warnings))


def _start_tree(ws: Workspace, base: str | None) -> Oid:
    """The tree a quilt series is imported onto (for GNU patch's "does this file exist")."""
    if base:
        return ws.git.tree_of(_base(ws.git, base))
    if ws.exists():
        series = ws.load_series()
        if series.base:
            return ws.git.tree_of(Oid(series.base))
    return ws.git.tree_of(read_stack(ws.git).base)


def import_commits(
    ws: Workspace, rng: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    sources, skipped, natural = read_commits(ws.git, rng, _taken(ws, append))
    return _import(ws, sources, skipped, tag, append, base, natural)


def import_mbox(
    ws: Workspace, path: str, tag: str | None, append: bool, base: str | None
) -> ImportResult:
    full = os.path.abspath(os.path.join(ws.cwd, path))
    sources, skipped = read_mbox(ws.git, full, ws.display(full), _taken(ws, append))
    return _import(ws, sources, skipped, tag, append, base, None)


def _taken(ws: Workspace, append: bool) -> tuple[str, ...]:
    """The names an imported patch may not take: those of the series it is appended to (a
    name that clashes, by case too, is numbered as a repeated subject is)."""
    return ws.load_series().names if append and ws.exists() else ()


def _import(
    ws: Workspace,
    sources: list[Source],
    skipped: list[tuple[str, str]],
    tag_text: str | None,
    append: bool,
    base_rev: str | None,
    natural_base: Oid | None,
) -> ImportResult:
    git = ws.git
    if not sources:
        raise PatchstackError("nothing to import: no patch found", None)
    sources = _resolve_tags(sources, tag_text)
    created = not ws.exists()
    if created:
        if append:
            raise PatchstackError("--append: there is no series to append to", "drop --append")
        base = _base(git, base_rev) if base_rev else natural_base or read_stack(git).base
        ref = base_rev if base_rev and base_rev != base else None
        series = new_series(base, ref)
        start_tree = git.tree_of(base)
    else:
        series = ws.load_series()
        if series.entries and not append:
            raise RefusedError(
                f"the series at {ws.display(ws.series_path)} already has"
                f" {len(series.entries)} patch(es)",
                "add --append to put the imported patches after them, or import into another"
                " series directory (--dir)",
            )
        stack = read_stack(git)
        if series.base is None:
            series = series.with_base(stack.base)
        base = Oid(series.base or stack.base)
        if base_rev and _base(git, base_rev) != base:
            raise PatchstackError(
                f"--base {base_rev} is not the series base {base[:12]}",
                "drop --base: patches are imported onto the series base",
            )
        engine = make_engine(ws, series, stack)
        try:
            start_tree = engine.canonical(len(series.entries))
        finally:
            engine.close()
    keys = {name_key(n) for n in series.names}
    clash = [s.name for s in sources if name_key(s.name) in keys]
    if clash:  # the readers number names that clash: a name from elsewhere is a bug
        raise PatchstackError(
            "already in the series: " + ", ".join(clash), "rename the patches, or drop them"
        )
    built, more_skipped, full_tree = _build(git, base, start_tree, sources, ws.progress)
    if not built:
        what, why = more_skipped[0]
        raise PatchstackError(
            f"nothing to import: every patch changes nothing on top of the series ({what}: {why})",
            "the series already holds these changes; nothing was changed",
        )
    writes = []
    for src, data, _method, _notes in built:
        target = ws.patch_path(src.name)
        if os.path.exists(target):
            with open(target, "rb") as f:
                if f.read() != data:
                    raise RefusedError(
                        f"{ws.display(target)} already exists and is not in the series",
                        "remove or rename it, then import again; nothing was changed",
                    )
        writes.append((target, data))
    last = series.names[-1] if series.names else None
    for src, _data, _m, _n in built:
        series = series.insert(Entry(src.name, src.tag or "", src.labels), last)
        last = src.name
    files = [FileWrite(target, data) for target, data in writes]
    files.append(FileWrite(ws.series_path, series.format().encode("utf-8", "surrogateescape")))
    stack = read_stack(git)
    publish(ws, Plan("import", stack.head, stack.head, tuple(files)))
    return ImportResult(
        ws.series_path,
        base,
        created,
        tuple(
            Imported(s.name, s.tag or "", s.labels, s.origin, method, notes)
            for s, _d, method, notes in built
        ),
        tuple(skipped + more_skipped),
        plain_head=plain_series(git, series.base, series.names, stack, lambda: full_tree),
    )


def _base(git: Git, rev: str) -> Oid:
    oid = git.rev_parse(rev)
    if oid is None:
        raise PatchstackError(f"unknown revision '{rev}'", "give a commit, branch or tag")
    return oid


def _resolve_tags(sources: list[Source], tag_text: str | None) -> list[Source]:
    default = parse_tags(tag_text, "--tag", 0) if tag_text else None
    result, untagged, bad = [], [], []
    for s in sources:
        if s.tag is not None and s.tag not in TAGS:
            bad.append(f"{s.name} ('{s.tag}')")
        elif s.tag is None:
            if default is None:
                untagged.append(s.name)
            else:
                s = replace(s, tag=default[0], labels=s.labels + default[1])
        result.append(s)
    if bad:
        raise PatchstackError(
            "unknown tag on: " + ", ".join(bad), "a tag is one of " + ", ".join(TAGS)
        )
    if untagged:
        raise PatchstackError(
            f"{len(untagged)} patch(es) without a tag: " + ", ".join(untagged),
            "give --tag TAG for them (or tag them at the source: a '#+essential' guard in the"
            " quilt series, a 'Patchstack-Tag:' trailer); nothing was changed",
        )
    return result


def _build(
    git: Git, base: Oid, start_tree: Oid, sources: Sequence[Source], progress: Progress = QUIET
) -> tuple[list[tuple[Source, bytes, str, tuple[str, ...]]], list[tuple[str, str]], Oid]:
    """Apply each source on the chain; regenerate every patch file from the chain's commits.
    Also returns the tree the chain ends with."""
    default: list[tuple[str, str]] = []

    def default_ident() -> tuple[str, str]:
        if not default:
            date = git.commit_date(base)
            default.append((git.ident()[0], date))
        return default[0]

    anchor = git.commit_tree(start_tree, [], "patchstack import\n", *_ANCHOR_IDENT)
    parent, tree = anchor, start_tree
    done: list[tuple[Source, str, tuple[str, ...]]] = []
    skipped: list[tuple[str, str]] = []
    held: list[Oid | None] = [None]  # the tree the temporary index holds, when known
    progress.step("applying the patches", len(sources))
    with git.temp_index() as idx:
        for i, src in enumerate(sources, 1):
            progress(i - 1, len(sources))
            new_tree, method, notes = _place(git, idx, tree, src, held)
            if new_tree == tree:
                skipped.append((src.name, "changes nothing on top of the patches before it"))
                continue
            author = src.author or default_ident()[0]
            date = src.date or default_ident()[1]
            message = src.message.rstrip("\n") + "\n"
            message = trailers.write(message, src.name, src.tag or "")
            parent = git.commit_tree(new_tree, [parent], message, author, date)
            tree = new_tree
            done.append((src, method, notes))
    progress.step("writing the patch files")
    mails = git.format_patches(anchor, parent) if done else []
    if len(mails) != len(done):
        raise GitFailure(f"format-patch gave {len(mails)} patches for {len(done)} commits")
    built = []
    for (src, method, notes), mail in zip(done, mails, strict=True):
        data = trailers.strip_from_mail(mail)
        parse_patch(data, src.name)  # what we write must read back
        built.append((src, data, method, notes))
    return built, skipped, tree


def _place(
    git: Git, idx: TempIndex, tree: Oid, src: Source, held: list[Oid | None]
) -> tuple[Oid, str, tuple[str, ...]]:
    """The tree after ``src`` on ``tree``: exact, or by a three-way merge; never with fuzz."""
    if src.trees is not None:
        parent_tree, commit_tree = src.trees
        if parent_tree == tree:
            return commit_tree, "exact", ()
        merged = merge(git, parent_tree, tree, commit_tree, ("imported so far", src.name))
        if not merged.clean:
            _conflict(git, src, merged.tree, merged.conflicted, merged.messages)
        return merged.tree, "three-way merge", ("its parent differs from the patches before it",)
    assert src.diff is not None and src.patch is not None
    if held[0] != tree:
        idx.read_tree(tree)
    held[0] = None
    ok, err = idx.apply(src.diff, src.strip)
    if ok:
        written = idx.write_tree()
        held[0] = written
        return written, "exact", ()
    for preimage in (_preimage_from_ids, _preimage_from_hunks):
        found = preimage(git, idx, tree, src)
        if found is None:
            continue
        pre_tree, notes = found
        idx.read_tree(pre_tree)
        ok2, _ = idx.apply(src.diff, src.strip)
        if not ok2:
            continue
        post_tree = idx.write_tree()
        merged = merge(git, pre_tree, tree, post_tree, ("imported so far", src.name))
        if merged.clean:
            return merged.tree, "three-way merge", notes
        _conflict(git, src, merged.tree, merged.conflicted, merged.messages)
    raise ConflictError(
        f"{src.origin} does not apply, not even by a three-way merge, on the base plus the"
        " patches before it",
        Conflict(
            src.name,
            src.patch.paths,
            detail="\n".join([*misfit_notes(git, tree, src.patch), err.strip()]),
        ),
        "fix the patch (or the --base); nothing was changed",
    )


def _preimage_from_ids(
    git: Git, idx: TempIndex, tree: Oid, src: Source
) -> tuple[Oid, tuple[str, ...]] | None:
    """The tree with each file as the patch's index lines name it, when git has those blobs."""
    assert src.patch is not None
    files = [
        (f, f.old_path, f.old_id)
        for f in src.patch.files
        if f.old_path and f.old_id and set(f.old_id) != {"0"}
    ]
    if not files:
        return None
    found = git.resolve_blobs(old_id for _f, _p, old_id in files)
    if not all(found.values()):
        return None
    listing = git.ls_tree(tree)
    entries: list[tuple[str, str, str]] = []
    for f, old_path, old_id in files:
        mode = f.old_mode or listing.get(old_path, ("100644", ""))[0]
        entries.append((mode, found[old_id] or "", old_path))
    idx.read_tree(tree)
    idx.set_entries(entries)
    notes = tuple(f"{p}: merged from the blob its index line names" for _f, p, _o in files)
    return idx.write_tree(), notes


def _preimage_from_hunks(
    git: Git, idx: TempIndex, tree: Oid, src: Source
) -> tuple[Oid, tuple[str, ...]] | None:
    """The tree with each hunk's own context where ``patch --fuzz`` would have put it."""
    assert src.patch is not None
    listing = git.ls_tree(tree)
    entries, notes = [], []
    for f in src.patch.files:
        if f.old_path is None or f.binary or f.renamed or f.copied:
            continue
        if f.old_path not in listing:
            return None
        mode, blob = listing[f.old_path]
        located = locate_preimage(git.read_blob(blob), f)
        if located is None:
            return None
        text, fuzzes = located
        for h, fuzz in zip(f.hunks, fuzzes, strict=True):
            if fuzz:
                notes.append(f"{f.old_path}: hunk at line {h.old_start} needed fuzz {fuzz}")
        entries.append((mode, git.write_blob(text), f.old_path))
    if not notes:
        return None
    idx.read_tree(tree)
    idx.set_entries(entries)
    return idx.write_tree(), tuple(notes)


def _conflict(git: Git, src: Source, merged: Oid, files: Sequence[str], detail: str) -> None:
    hunks = conflict_hunks(git, merged, files)
    raise ConflictError(
        f"{src.origin} conflicts with the base plus the patches before it",
        Conflict(src.name, tuple(files), tuple(hunks), (), detail, merged),
        "fix the patch (or choose another --base); nothing was changed",
    )
