"""The import's chain: every source made a commit on a throwaway chain from where the import
starts, exactly or by a three-way merge (never with fuzz), in one fast-import stream; the patch
files regenerated from the chain with one ``format-patch`` and read back."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from ..engine.committer import raw_date, streamable_author
from ..engine.merging import conflict_hunks, merge, misfit_notes
from ..errors import ConflictError, EnvironmentFault, GitFailure, PatchstackError
from ..git import FastImport, Git, TempIndex
from ..model import trailers
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.imported import locate_preimage
from ..model.patchfile import Patch, parse_patch
from ..progress import QUIET, Progress
from .sources import Source

_ANCHOR_IDENT = ("patchstack <patchstack@invalid>", "1000000000 +0000")


class Built(NamedTuple):
    """A patch made by the import: its source, file bytes (read back: ``patch``), how it was
    placed, why a merge was needed, and the tree of its commit on the import's chain."""

    source: Source
    data: bytes
    method: str
    notes: tuple[str, ...]
    tree: Oid
    patch: Patch


def build_chain(
    git: Git, base: Oid, start_tree: Oid, sources: Sequence[Source], progress: Progress = QUIET
) -> tuple[list[Built], list[tuple[str, str]], Oid]:
    """Apply each source on the chain; regenerate every patch file from the chain's commits
    (made in one fast-import stream where the committer may write their identity, see
    `engine.committer`). Also returns the tree the chain ends with."""
    default: list[tuple[str, str]] = []

    def default_ident() -> tuple[str, str]:
        if not default:
            date = git.commit_date(base)
            default.append((git.ident()[0], date))
        return default[0]

    stream = FastImport(git, throwaway=True)
    message = b"patchstack import\n"
    anchor = stream.commit("", _ANCHOR_IDENT[0], _ANCHOR_IDENT[1], message, [_root(start_tree)])
    parent, tree = anchor, start_tree
    done: list[tuple[Source, str, tuple[str, ...], Oid]] = []
    skipped: list[tuple[str, str]] = []
    held: list[Oid | None] = [None]  # the tree the temporary index holds, when known
    progress.step("applying the patches", len(sources))
    try:
        with git.temp_index() as idx:
            for i, src in enumerate(sources):
                progress(i, len(sources))
                new_tree, method, notes = _place(git, idx, tree, src, held)
                if new_tree == tree:
                    skipped.append((src.name, "changes nothing on top of the patches before it"))
                    continue
                author = src.author or default_ident()[0]
                date = src.date or default_ident()[1]
                text = trailers.write(src.message.rstrip("\n") + "\n", src.name, src.tag or "")
                when = raw_date(date) if streamable_author(author) else None
                if when is not None:
                    data = text.encode("utf-8", "surrogateescape")
                    parent = stream.commit(parent, author, when, data, [_root(new_tree)], False)
                else:  # commit-tree reads this identity as git does: the stream's commits first
                    parent = stream.ids([parent])[0]
                    stream.close()
                    with _naming(src):
                        parent = git.commit_tree(new_tree, [parent], text, author, date)
                    stream = FastImport(git, throwaway=True)
                tree = new_tree
                done.append((src, method, notes, tree))
        anchor, parent = stream.ids([anchor, parent])
    finally:
        stream.close()
    progress.step("writing the patch files")
    mails = git.format_patches(anchor, parent) if done else []
    if len(mails) != len(done):
        raise GitFailure(f"format-patch gave {len(mails)} patches for {len(done)} commits")
    built = []
    for (src, method, notes, made), mail in zip(done, mails, strict=True):
        data = trailers.strip_from_mail(mail)
        with _naming(src):
            patch = parse_patch(data, src.name)  # what we write must read back
        built.append(Built(src, data, method, notes, made, patch))
    return built, skipped, tree


@contextlib.contextmanager
def _naming(src: Source) -> Iterator[None]:
    """An error making ``src``'s patch names where it came from (``commit 1a2b3c4d5e6f``)."""
    try:
        yield
    except (ConflictError, EnvironmentFault):
        raise
    except PatchstackError as exc:
        raise PatchstackError(f"{src.origin} ({src.name}): {exc.message}", exc.hint) from exc


def _root(tree: Oid) -> tuple[str, str, str]:
    """The change that makes a commit's whole tree ``tree`` (fast-import)."""
    return ("040000", tree, "")


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
