"""``new``: capture uncommitted edits (all, or those paths) as a new patch on top."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..model import fields, trailers
from ..model.ids import Oid
from ..model.message import guard_diff_starts
from ..model.patchfile import parse_patch
from ..model.series import Entry, Series, parse_tags
from ..model.stack import Stack
from ..transaction import Captured, FileWrite, Plan, publish
from .advice import submodule_step
from .naming import covers, new_patch_name, relative_to_top, require_free
from .state import read_stack, require_base, require_movable


@dataclass(frozen=True)
class NewResult:
    name: str
    tag: str
    commit: Oid
    paths: tuple[str, ...]
    untracked_left: tuple[str, ...]
    patch_path: str
    base_moved_to: Oid | None = None  # an empty series takes the base the patch is made on
    selector_output: str = ""  # what git's hunk selector printed, when it read scripted answers


def split_message(message: str | None, fallback: str) -> str:
    """A commit message from ``-m``: its first line is the subject, the rest the description
    (a line a patch reader would take for a diff, a merge marker or the message's end,
    indented: `message.guard_diff_starts`)."""
    lines = message.strip().splitlines() if message and message.strip() else []
    subject = lines[0].strip() if lines else fallback
    body = "\n".join(lines[1:]).strip()
    return guard_diff_starts(subject + ("\n\n" + body if body else "") + "\n")


def new(
    ws: Checkout,
    name: str,
    tag_text: str,
    message: str | None,
    paths: Sequence[str],
    interactive: bool = False,
    answers: bytes | None = None,
    probe: str | None = None,
) -> NewResult:
    """``interactive``: the hunks to capture are chosen in git's ``add -p`` (on a temporary
    index holding HEAD), reading ``answers`` when given; the rest stays uncommitted.
    ``probe``: the command that shows the patch does its job (`model.fields`)."""
    git = ws.git
    name = new_patch_name(name)
    probe = fields.clean_probe(probe)
    tag, labels = parse_tags(tag_text, "--tag", 0) if tag_text else ("", ())
    if not tag:
        raise PatchstackError("--tag is required", "one of: essential, diagnostic, optimization")
    series = ws.load_series()
    require_free(ws, series, name)
    stack = read_stack(git)
    require_movable(stack)
    require_base(series, stack)
    git.refresh_index()
    dirty = git.dirty(exclude=ws.in_tree)
    if dirty.unmerged:
        raise RefusedError(
            "unmerged files: " + ", ".join(dirty.unmerged), "resolve the merge first"
        )
    rel = [relative_to_top(ws, p) for p in paths]
    if rel:
        inside = ws.in_tree
        for p in rel:
            if inside and (p == inside or p.startswith(inside + "/")):
                raise PatchstackError(
                    f"'{p}' is inside the series directory",
                    "the series directory is never captured",
                )
        candidates = dirty.modified + dirty.untracked
        chosen = [p for p in candidates if any(covers(p, r) for r in rel)]
        unknown = [r for r in rel if not any(covers(c, r) for c in chosen)]
        within = [s for s in dirty.submodules if any(covers(s, r) for r in unknown)]
        if within:
            raise _inside_submodules(within)
        if unknown:
            raise PatchstackError(
                "no uncommitted edits in: " + ", ".join(unknown), "see 'git status'"
            )
    else:
        chosen = list(dirty.modified)
    if not chosen and dirty.submodules:
        raise _inside_submodules(list(dirty.submodules))
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
    author, date = git.ident()
    out = ""
    with git.temp_index() as idx:
        if interactive:
            # The real index's stat data spares git a hash of every file; the edited paths
            # start from HEAD, so that only what is chosen goes in.
            idx.copy_from(os.path.join(git.git_dir, "index"))
            git.set_index_entries(stack.head, list(dirty.modified), env=idx.env)
            offered = [p for p in chosen if p in dirty.modified]
            out = git.select_hunks(idx, ["add", "-p"], offered, answers)
        else:
            idx.read_tree(stack.head)
            idx.add_paths(chosen)
        tree = idx.write_tree()
    if tree == stack.top_tree:
        if interactive:
            raise PatchstackError("no hunk was chosen", "nothing was changed")
        raise PatchstackError("the edits change nothing", "nothing to capture")
    if interactive:
        chosen = git.changed_paths(stack.top_tree, tree)
    untracked_left = tuple(p for p in dirty.untracked if p not in chosen)
    text = split_message(message, name.removesuffix(".patch"))
    if probe:
        text = fields.write(text, [(fields.PROBE, probe)])
    text = trailers.write(text, name, tag)
    commit = git.commit_tree(tree, [stack.head], text, author, date)
    data = trailers.strip_from_mail(git.format_patch(commit))
    parse_patch(data, name)  # what we write must read back
    files, moved = patch_files(ws, series, stack, Entry(name, tag, labels), data)
    publish(ws, Plan("new", stack.head, commit, files, Captured(tuple(chosen))))
    return NewResult(
        name, tag, commit, tuple(chosen), untracked_left, ws.patch_path(name), moved, out
    )


def _inside_submodules(paths: list[str]) -> PatchstackError:
    return PatchstackError(
        f"the only changes are inside the submodule(s) {', '.join(paths)}: a patch holds the"
        " commit a submodule is at, not its files",
        submodule_step(paths),
    )


def patch_files(
    ws: Checkout, series: Series, below: Stack, entry: Entry, data: bytes
) -> tuple[tuple[FileWrite, ...], Oid | None]:
    """The writes that add a new patch (``entry``, its file ``data``) right above the applied
    patches of ``below``, and the base an empty series takes from it (None: unchanged)."""
    after = below.applied[-1].name if below.applied else None
    if after is not None and after not in series:
        after = None
    new_series = series.insert(entry, after)
    moved = None
    if not series.entries and series.base != below.base:
        moved = below.base
        new_series = new_series.with_base(below.base)
    files = (
        FileWrite(ws.patch_path(entry.name), data),
        FileWrite(ws.series_path, new_series.format().encode("utf-8", "surrogateescape")),
    )
    return files, moved
