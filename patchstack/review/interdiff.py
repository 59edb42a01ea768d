"""Diffs of patches: the interdiff of two versions of a patch, and what moved in a rebase.

The *interdiff* shows how a patch's change differs between two versions, in the manner of
``git range-diff``. Each version is written out per file as an *outline*, without what only
says where it applies: a ``## path ##`` title line (with ``(new)``, ``(deleted)``, a rename
or a mode change), then each hunk as ``@@`` plus its section heading and its lines, with no
``index`` lines and no line numbers. The outlines of the same file are diffed with `difflib`,
so a group of changes never spans two files. Every content line carries two markers: the
first (the *outer* one) says old (``-``) or new (``+``) version of the patch, the second (the
*inner* one) is the patch's own marker. ``++x`` is a line the patch now adds, ``-+x`` one it
no longer adds, ``+-x`` one it now removes, ``--x`` one it no longer removes.

Each group starts with a header line ``@@ path @@`` at column 0 (a content line never starts
with ``@``). When a group starts at the file's title line and the title is the same in both
versions, the title line is left out: the header already names the file.

In a Markdown ``diff`` fence GitHub colours a line by its first character only, which would
show ``+-x`` (a line the patch now removes) in green. `markdown_line` therefore writes each
content line with one more column in front: the *net effect* on the patched code (``+`` the
code now has the line: ``++`` and ``--``; ``-`` it no longer has it: ``-+`` and ``+-``;
blank for context, titles and hunk headers), followed by the two range-diff markers.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from ..model.patchfile import FileDiff, Hunk, Patch

Outline = dict[str, tuple[str, ...]]


def file_title(f: FileDiff) -> str:
    if f.old_path and f.new_path and f.old_path != f.new_path:
        return f"{f.old_path} -> {f.new_path}"
    return f.path


def file_meta(f: FileDiff) -> tuple[str, ...]:
    """What a file diff does besides its hunks, as words (the same for both outline forms)."""
    meta = []
    if f.old_path is None:
        meta.append(f"new file mode {f.new_mode or '100644'}")
    elif f.new_path is None:
        meta.append(f"deleted file mode {f.old_mode or '100644'}")
    elif f.old_mode and f.new_mode and f.old_mode != f.new_mode:
        meta += [f"old mode {f.old_mode}", f"new mode {f.new_mode}"]
    if f.renamed or f.copied:
        verb = "rename" if f.renamed else "copy"
        meta += [f"{verb} from {f.old_path}", f"{verb} to {f.new_path}"]
    if f.binary:
        meta.append(f"binary content {f.new_id or '?'}")
    return tuple(meta)


def _title_line(f: FileDiff) -> str:
    notes = []
    if f.old_path is None:
        notes.append("new")
    elif f.new_path is None:
        notes.append("deleted")
    elif f.old_mode and f.new_mode and f.old_mode != f.new_mode:
        notes.append(f"mode {f.old_mode} -> {f.new_mode}")
    if f.copied:
        notes.append("copy")
    if f.binary:
        notes.append(f"binary {f.new_id or '?'}")
    return f"## {file_title(f)}" + (f" ({', '.join(notes)})" if notes else "") + " ##"


def outline(patch: Patch) -> Outline:
    """The patch per file (keyed by its path), without index lines or line numbers."""
    out: Outline = {}
    for f in sorted(patch.files, key=lambda f: (f.path, f.old_path or "")):
        lines = [_title_line(f)]
        for hunk in f.hunks:
            lines.append(("@@ " + hunk.section.strip()).rstrip())
            lines += hunk.lines
        key = f.path
        while key in out:  # the same path twice (a copy and an edit): keep both
            key += " "
        out[key] = tuple(lines)
    return out


def _groups(
    old: Sequence[str], new: Sequence[str], context: int
) -> list[list[tuple[str, int, int, int, int]]]:
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return list(matcher.get_grouped_opcodes(context))


def interdiff(old: Patch, new: Patch, context: int = 3) -> tuple[str, ...]:
    """The interdiff of two versions of a patch (see the module doc); empty when equal."""
    a, b = outline(old), outline(new)
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        old_lines, new_lines = a.get(key, ()), b.get(key, ())
        if old_lines == new_lines:
            continue
        path = key.rstrip(" ")
        for group in _groups(old_lines, new_lines, context):
            body: list[str] = []
            for tag, i1, i2, k1, k2 in group:
                if tag == "equal":
                    body += [" " + ln for ln in old_lines[i1:i2]]
                else:
                    body += ["-" + ln for ln in old_lines[i1:i2]]
                    body += ["+" + ln for ln in new_lines[k1:k2]]
            # The title line says no more than the header when it is the same in both
            # versions, or when the file is only in one of them (all its lines say so).
            one_sided = not (old_lines and new_lines)
            if body and body[0][1:3] == "##" and (body[0][0] == " " or one_sided):
                path, body = body[0][4:-3], body[1:]
            out.append(f"@@ {path} @@")
            out += body
    return tuple(out)


def text_diff(old: Sequence[str], new: Sequence[str]) -> tuple[str, ...]:
    """A diff of two short texts with every line shown and no header (a description)."""
    out: list[str] = []
    for tag, i1, i2, k1, k2 in difflib.SequenceMatcher(None, old, new).get_opcodes():
        if tag == "equal":
            out += [" " + ln for ln in old[i1:i2]]
        else:
            out += ["-" + ln for ln in old[i1:i2]]
            out += ["+" + ln for ln in new[k1:k2]]
    return tuple(out)


# -- what moved in a rebase -------------------------------------------------------------------


def _block_starts(hunk: Hunk) -> list[int]:
    """The line (in the file before the patch) where each change block of a hunk begins."""
    starts, line, inside = [], hunk.old_start if hunk.old_len else hunk.old_start + 1, False
    for text in hunk.lines:
        kind = text[:1]
        if kind in ("-", "+"):
            if not inside:
                starts.append(line)
                inside = True
            if kind == "-":
                line += 1
        elif kind != "\\":
            inside = False
            line += 1
    return starts


def moves(old: Patch, new: Patch) -> tuple[str, ...]:
    """Where each file's changes moved (``src/a.py: line 10 → 13 (+3)``), for two versions
    of a patch whose change is the same."""
    a = {f.path: f for f in old.files}
    out = []
    for f in sorted(new.files, key=lambda f: f.path):
        before = a.get(f.path)
        if before is None or f.binary:
            continue
        pairs = list(
            zip(
                (s for h in before.hunks for s in _block_starts(h)),
                (s for h in f.hunks for s in _block_starts(h)),
                strict=False,
            )
        )
        shifted = [(x, y) for x, y in pairs if x != y]
        if not shifted:
            continue
        offsets = {y - x for x, y in shifted}
        where = ", ".join(f"{x} → {y}" for x, y in shifted[:4])
        more = f" and {len(shifted) - 4} more" if len(shifted) > 4 else ""
        by = f" ({next(iter(offsets)):+d})" if len(offsets) == 1 else ""
        s = "s" if len(shifted) > 1 else ""
        out.append(f"{f.path}: line{s} {where}{more}{by}")
    return tuple(out)


# -- reading interdiff lines ------------------------------------------------------------------


def effect(line: str) -> str:
    """The net effect of an interdiff content line on the patched code: '+', '-' or ' '."""
    outer, inner = line[:1], line[1:2]
    if outer not in "+-" or not outer or inner not in ("+", "-"):
        return " "
    return "+" if outer == inner else "-"


def markdown_line(line: str) -> str:
    """An interdiff line in the notation that reads right in a Markdown ``diff`` fence."""
    if line.startswith("@@"):
        return line
    return effect(line) + " " + line


def lcs(a: Sequence[str], b: Sequence[str]) -> set[str]:
    """The items of one longest common subsequence of ``a`` and ``b`` (distinct items)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        row, below = table[i], table[i + 1]
        for j in range(m - 1, -1, -1):
            row[j] = below[j + 1] + 1 if a[i] == b[j] else max(below[j], row[j + 1])
    kept: set[str] = set()
    i = j = 0
    while i < n and j < m:
        if a[i] == b[j]:
            kept.add(a[i])
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return kept


# -- the review -------------------------------------------------------------------------------
