"""Importing: the sources read (`sources`), made a chain from the series base and patch files
(`building`), the names and tags checked, and the series directory written through the
transaction."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..checkout import Checkout as Workspace
from ..commands.state import make_engine, plain_series, read_stack
from ..errors import PatchstackError, RefusedError
from ..git import Git
from ..model.ids import Oid
from ..model.series import TAGS, Entry, Series, name_key, new_series, parse_tags
from ..transaction import FileWrite, Plan, Worktree, publish
from .building import Built, build_chain
from .sources import Source, read_commits, read_mbox, read_quilt


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


# What the caller proves before anything is written: the series as it will be, and each new
# patch (its file and the tree its commit on the import's chain has): `import branch`, that
# the files give the branch's tree.
Check = Callable[[Series, Mapping[str, Built]], None]


@dataclass(frozen=True)
class Landing:
    """Where an import that moved HEAD on its way ends (``import branch`` after a stop): the
    HEAD it moved to, the HEAD to go back to, and how the work tree goes there."""

    old_head: Oid
    new_head: Oid
    worktree: Worktree


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
    check: Check | None = None,
    landing: Landing | None = None,
    rebase_empty: bool = False,
    base_ref: str | None = None,
) -> ImportResult:
    """``base_ref``: the upstream branch ``natural_base`` was taken from (the base line's
    label)."""
    git = ws.git
    if not sources:
        raise PatchstackError("nothing to import: no patch found", None)
    sources = _resolve_tags(sources, tag_text)
    created = not ws.exists()
    if created:
        if append:
            raise PatchstackError("--append: there is no series to append to", "drop --append")
        base = _base(git, base_rev) if base_rev else natural_base or read_stack(git).base
        ref = base_rev if base_rev and base_rev != base else base_ref
        series = new_series(base, ref)
        start_tree = git.tree_of(base)
    else:
        series = existing_series(ws, append)
        stack = read_stack(git)
        if rebase_empty and natural_base and not series.entries:
            series = series.with_base(natural_base, base_ref)  # nothing to carry: its own base
        elif series.base is None:
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
    built, more_skipped, full_tree = build_chain(git, base, start_tree, sources, ws.progress)
    if not built:
        what, why = more_skipped[0]
        raise PatchstackError(
            f"nothing to import: every patch changes nothing on top of the series ({what}: {why})",
            "the series already holds these changes; nothing was changed",
        )
    writes = []
    for src, data, *_rest in built:
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
    for src, *_rest in built:
        series = series.insert(Entry(src.name, src.tag or "", src.labels), last)
        last = src.name
    if check is not None:
        check(series, {b.source.name: b for b in built})
    files = [FileWrite(target, data) for target, data in writes]
    files.append(FileWrite(ws.series_path, series.format().encode("utf-8", "surrogateescape")))
    stack = read_stack(git)
    if landing is None:
        publish(ws, Plan("import", stack.head, stack.head, tuple(files)))
    else:
        plan = Plan("import", landing.old_head, landing.new_head, tuple(files), landing.worktree)
        publish(ws, plan)
        stack = read_stack(git)
    return ImportResult(
        ws.series_path,
        base,
        created,
        tuple(
            Imported(
                b.source.name,
                b.source.tag or "",
                b.source.labels,
                b.source.origin,
                b.method,
                b.notes,
            )
            for b in built
        ),
        tuple(skipped + more_skipped),
        plain_head=plain_series(git, series.base, series.names, stack, lambda: full_tree),
    )


def existing_series(ws: Workspace, append: bool) -> Series:
    """The series an import adds to; refused when it has patches and ``append`` is off."""
    series = ws.load_series()
    if series.entries and not append:
        raise RefusedError(
            f"the series at {ws.display(ws.series_path)} already has"
            f" {len(series.entries)} patch(es)",
            "add --append to put the imported patches after them, or import into another"
            " series directory (--dir)",
        )
    return series


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
