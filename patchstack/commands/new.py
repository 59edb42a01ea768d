"""``new``: capture uncommitted edits (all, or those paths) as a new patch on top."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError, RefusedError
from ..model import trailers
from ..model.ids import Oid
from ..model.patchfile import parse_patch
from ..model.series import Entry, parse_tags, validate_name
from ..transaction import Captured, FileWrite, Plan, publish
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


def split_message(message: str | None, fallback: str) -> str:
    """A commit message from ``-m``: its first line is the subject, the rest the description."""
    lines = message.strip().splitlines() if message and message.strip() else []
    subject = lines[0].strip() if lines else fallback
    body = "\n".join(lines[1:]).strip()
    return subject + ("\n\n" + body if body else "") + "\n"


def _covers(path: str, wanted: str) -> bool:
    return wanted == "." or path == wanted or path.startswith(wanted.rstrip("/") + "/")


def new(
    ws: Checkout, name: str, tag_text: str, message: str | None, paths: Sequence[str]
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
    if os.path.lexists(ws.patch_path(name)):
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
        candidates = dirty.modified + dirty.untracked
        chosen = [p for p in candidates if any(_covers(p, r) for r in rel)]
        unknown = [r for r in rel if not any(_covers(c, r) for c in chosen)]
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
    with git.temp_index() as idx:
        idx.read_tree(stack.head)
        idx.add_paths(chosen)
        tree = idx.write_tree()
    if tree == stack.top_tree:
        raise PatchstackError("the edits change nothing", "nothing to capture")
    text = trailers.write(split_message(message, name.removesuffix(".patch")), name, tag)
    commit = git.commit_tree(tree, [stack.head], text, author, date)
    data = trailers.strip_from_mail(git.format_patch(commit))
    parse_patch(data, name)  # what we write must read back
    after = stack.applied[-1].name if stack.applied else None
    if after is not None and after not in series:
        after = None
    new_series = series.insert(Entry(name, tag, labels), after)
    moved = None
    if not series.entries and series.base != stack.base:
        moved = stack.base
        new_series = new_series.with_base(stack.base)
    files = (
        FileWrite(ws.patch_path(name), data),
        FileWrite(ws.series_path, new_series.format().encode("utf-8", "surrogateescape")),
    )
    publish(ws, Plan("new", stack.head, commit, files, Captured(tuple(chosen))))
    return NewResult(name, tag, commit, tuple(chosen), untracked_left, ws.patch_path(name), moved)


def _relative_to_top(ws: Checkout, path: str) -> str:
    full = os.path.normpath(os.path.join(ws.cwd, path))
    rel = os.path.relpath(full, ws.git.top)
    if rel.startswith(".."):
        raise PatchstackError(f"'{path}' is outside the work tree", "name files inside it")
    return rel.replace(os.sep, "/")
