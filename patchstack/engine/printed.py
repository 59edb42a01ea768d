"""What check's short output prints of its conflict reports, traced alone.

`check` without ``--verbose``/``--json`` prints one upstream commit a primary conflict (the
first its hunks name, `cli.conflicttext.conflict_summary`): tracing every hunk's lines
through upstream's history (``git log -p -U0`` of every conflicting file, `engine.culprits`)
was a third of its time on a real drift. Here the reports come untraced
(`triage.reports` with ``attribute=False``) and only what is printed is traced.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..git import Git, MergeResult
from ..model.conflict import Conflict
from . import culprits
from .culprits import Walk
from .evidence import superseded
from .triage import PRIMARY


def traced_as_printed(
    git: Git,
    reports: Sequence[Conflict],
    old_base: str | None,
    target: str,
    full: Sequence[str] | bool,
    walk: Walk | None = None,
) -> list[Conflict]:
    """The untraced ``reports`` with what check's short output prints of them traced: a
    primary conflict's first upstream commit (`cli.conflicttext.conflict_summary`), so the
    hunks of its first file, then, where none of those names a commit, the rest of its
    files; every hunk of a report ``full`` shows, and of one that may be superseded (its
    "by" is the first of every hunk's commits holding the lines). A file's trace does not
    depend on the others walked with it (`engine.merging.blame_first`), so what is printed is
    what tracing every hunk prints (``PATCHSTACK_TRACE_ALL=1``, the differential tests).
    ``walk``: `Git.line_changes` or what stands for it (`culprits.attribute`): each file's
    commits kept from an earlier command."""
    out = list(reports)
    primary = [i for i, r in enumerate(out) if r.kind == PRIMARY and r.hunks]
    first = {i: _paths(out[i]) if _whole(out[i], full) else _paths(out[i])[:1] for i in primary}
    out = _trace(git, out, first, old_base, target, walk)
    rest = {
        i: _paths(out[i])[1:]
        for i in primary
        if not _whole(out[i], full) and not any(h.upstream for h in out[i].hunks)
    }
    out = _trace(git, out, {i: p for i, p in rest.items() if p}, old_base, target, walk)
    for i in primary:
        if out[i].superseded is not None:  # now judged with the hunks' commits
            out[i] = replace(out[i], superseded=superseded(out[i], git.show_file))
    return out


def first_traced(reports: Sequence[Conflict], full: Sequence[str] | bool) -> list[str]:
    """The files `traced_as_printed` walks first (a walk begun before it asks,
    `KeptLines.start`)."""
    primary = [r for r in reports if r.kind == PRIMARY and r.hunks]
    firsts = (_paths(r) if _whole(r, full) else _paths(r)[:1] for r in primary)
    return list(dict.fromkeys(p for paths in firsts for p in paths))


# git's words for a conflict that leaves markers in PATH (merge-ort: content, add/add)
_MARKED = re.compile(r"^CONFLICT \((?:content|add/add)\): Merge conflict in (.+)$", re.MULTILINE)


def first_guessed(conflicts: Sequence[tuple[str, str, MergeResult]]) -> list[str]:
    """`first_traced`'s files as the replay's conflicts (name, tree, merge) tell them before
    they are triaged or read: each one's first conflicted file git says it left markers in,
    so the walk begins while the reports are built (git walks while Python triages). A
    guess: a knock-on's file, or one whose patch is shown whole, is walked for nothing or
    when traced; what is traced is the same either way (`KeptLines.start`)."""
    guessed: list[str] = []
    for _name, _tree, merged in conflicts:
        marked = set(_MARKED.findall(merged.messages))
        guessed += [p for p in merged.conflicted if p in marked][:1]
    return list(dict.fromkeys(guessed))


def _whole(r: Conflict, full: Sequence[str] | bool) -> bool:
    shown = full is True or (not isinstance(full, bool) and r.patch in full)
    return shown or r.superseded is not None


def _paths(r: Conflict) -> list[str]:
    return list(dict.fromkeys(h.path for h in r.hunks))


def _trace(
    git: Git,
    reports: list[Conflict],
    wanted: dict[int, list[str]],
    old_base: str | None,
    target: str,
    walk: Walk | None = None,
) -> list[Conflict]:
    """``reports`` with the hunks of the paths ``wanted`` (report index -> paths) traced, in
    one walk (`culprits.attribute`), as `triage.reports` traces a primary conflict's."""
    texts: list[tuple[str, bytes | None, bytes]] = []
    for i, paths in wanted.items():
        tree = reports[i].merged_tree
        assert tree is not None
        listing = git.ls_tree_paths(tree, paths)
        texts += [(p, git.show_file(target, p), git.read_blob(listing[p][1])) for p in paths]
    if not texts:
        return reports
    found = iter(culprits.attribute(git, old_base, target, texts, walk))
    out = list(reports)
    for i, paths in wanted.items():
        traced = {p: iter(next(found)) for p in paths}
        hunks = tuple(next(traced[h.path]) if h.path in traced else h for h in out[i].hunks)
        out[i] = replace(out[i], hunks=hunks)
    return out
