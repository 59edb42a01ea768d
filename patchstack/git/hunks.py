"""The ``-U0`` hunks of many pairs of trees from one ``diff-tree --stdin -p`` process, kept for
the command by the pair of ids: `Listings.line_hunks` asks one process a pair (a verdict's
`madeby.removes_made_by` asked nine for one skip of weight-sync's, some pairs more than once)."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from ..errors import PatchstackError
from .base import GitBase
from .history import PATHSPEC_MAX, _diff_header, _span

Hunks = dict[str, tuple[tuple[int, int, int, int], ...]]
Headed = dict[bytes, tuple[tuple[int, int, int, int], ...]]  # by the file's ``diff --git`` line
_ID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")


def pairs_hunks(
    git: GitBase, pairs: Sequence[tuple[str, str]], paths: Collection[str] | None = None
) -> list[Headed]:
    """For each (old, new) pair of tree ids (not commits): each text file that differs (by its
    ``diff --git`` line) -> its ``-U0`` hunks, (old start, old count, new start, new count) as
    git writes them (a binary file, or one only whose mode changed, has none); `only` gives
    what `Listings.line_hunks` of the pair gives for some of ``paths`` (None: any path; a few
    go to git as its pathspec). The pairs the command did not ask before for these paths are
    asked in one process."""
    if paths is not None and not paths:
        return [{} for _ in pairs]
    asked = frozenset(paths) if paths is not None and len(paths) <= PATHSPEC_MAX else None
    memo = git._memo

    def kept(pair: tuple[str, str]) -> bool:
        was = memo.get(("pair-hunks", *pair))
        return was is not None and (was[0] is None or (asked is not None and asked <= was[0]))

    todo = [p for p in dict.fromkeys(pairs) if not kept(p)]
    if todo:
        for pair, found in zip(todo, _ask(git, todo, asked), strict=True):
            memo[("pair-hunks", *pair)] = (asked, found)
    return [memo[("pair-hunks", *p)][1] for p in pairs]


def only(hunks: Headed, paths: Sequence[str]) -> Hunks:
    """The hunks of ``paths`` (`Listings.line_hunks` asked with them as its pathspec)."""
    return {p: hunks[h] for p in paths if (h := _diff_header(p)) in hunks}


def _ask(
    git: GitBase, pairs: Sequence[tuple[str, str]], paths: Collection[str] | None
) -> list[Headed]:
    echoes = [f"{a} {b}".encode() for a, b in pairs]
    if not all(_ID.fullmatch(a.encode()) and _ID.fullmatch(b.encode()) for a, b in pairs):
        raise PatchstackError(f"not a pair of tree ids: {pairs}")
    args = ["diff-tree", "--stdin", "-p", "-U0", "-r", "--no-renames", "--no-commit-id"]
    args += ["--no-color", "--no-ext-diff", "--no-textconv"]
    args += ["--", *sorted(paths)] if paths is not None else []
    out = git.run(*args, input=b"".join(e + b"\n" for e in echoes)).stdout
    found = parse_hunks(out, echoes)
    if len(found) != len(pairs):
        raise PatchstackError(f"git diff-tree answered {len(found)} of {len(pairs)} pairs")
    return found


def parse_hunks(out: bytes, echoes: Sequence[bytes] | None = None) -> list[Headed]:
    """The hunks of ``diff-tree -p -U0`` output, by each file's ``diff --git`` line (files
    with none left out: a binary one, a mode change). With ``echoes`` (``--stdin``): a part a
    pair, each begun by the pair's echo; without, the whole output is one part."""
    found: list[dict[bytes, list[tuple[int, int, int, int]]]] = [] if echoes is not None else [{}]
    files: list[tuple[int, int, int, int]] | None = None
    for line in out.split(b"\n"):
        if echoes is not None and len(found) < len(echoes) and line == echoes[len(found)]:
            found.append({})  # diff-tree echoes each pair before its diff
            files = None
        elif line.startswith(b"diff --git "):
            files = found[-1].setdefault(line, [])
        elif files is not None and line.startswith(b"@@ -"):
            old, new = line[4:].split(b" @@", 1)[0].split(b" +")
            files.append((*_span(old), *_span(new)))
    return [{h: tuple(spans) for h, spans in f.items() if spans} for f in found]
