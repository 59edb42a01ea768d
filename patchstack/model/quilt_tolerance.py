"""What GNU patch (and so quilt) accepts that patchstack's strict reader does not: made explicit.

``import quilt`` must give the tree ``quilt push -a`` gives, or say why not. Before a quilt
patch is read strictly, `tolerate` rewrites the few things GNU patch takes in its stride, each
with a warning naming the file and line, so that nothing is silently different:

- a patch file whose every line ends in CR LF: GNU patch strips the CRs ("Stripping trailing
  CRs from patch"); so does the import;
- ``Binary files a/x and b/x differ`` in a git file diff (a binary change without data): GNU
  patch skips that file with a warning; the import leaves the section out and records in the
  imported patch's description that the binary change had no data; when the section creates
  the file (``new file mode``, or ``/dev/null`` as the old side), GNU patch creates it empty
  (glibc's ``timezone/testdata/XT6``), and so does the import;
- ``---``/``+++`` names that disagree with each other or with the ``diff --git`` line, without
  a rename: GNU patch picks one of the names (the one that exists, else the one with the
  fewest components, the shortest base name, the shortest name); the import rewrites the
  section's headers to that name;
- a traditional ``---``/``+++`` name with a space and no tab before the timestamp: GNU patch
  cuts the name at the first space; the import does the same (the name is ambiguous) and says so;
- lines after a hunk that its ``@@`` counts do not cover (glibc's
  ``hurd-i386/tg-sysvshm.diff``): GNU patch ends the file's hunks there and skips everything up
  to the next file diff, later ``@@`` hunks of the same file included; so does the import.

The names are compared, and rewritten, at the strip level of the series entry (``-p0``, ...).

Pure functions over bytes: the caller says which paths exist.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

_GIT_RE = re.compile(rb"^diff --git ", re.MULTILINE)
_BINARY_RE = re.compile(rb"^Binary files (.*) and (.*) differ\r?$")
_HUNK_RE = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


@dataclass(frozen=True)
class Tolerated:
    data: bytes
    warnings: tuple[str, ...] = ()  # "file:line: what was done"
    notes: tuple[str, ...] = ()  # for the imported patch's description


def _strip(path: str, level: int) -> str:
    if path == "/dev/null":
        return path
    parts = path.split("/")
    return "/".join(parts[level:]) if level < len(parts) else path


def best_name(names: list[str], exists: Callable[[str], bool]) -> str:
    """GNU patch's choice among a file diff's names: an existing one first, then the fewest
    path components, the shortest base name, the shortest name; the first on a tie."""
    candidates = [n for n in names if n and n != "/dev/null"]
    present = [n for n in candidates if exists(n)]
    pool = present or candidates

    def key(n: str) -> tuple[int, int, int]:
        return (n.count("/"), len(n.rsplit("/", 1)[-1]), len(n))

    return min(pool, key=key)  # min keeps the first of equal keys


def _sections(lines: list[bytes]) -> list[tuple[int, int]]:
    """(start, end) of each file diff that starts with 'diff --git'."""
    starts = [i for i, ln in enumerate(lines) if ln.startswith(b"diff --git ")]
    ends = [*starts[1:], len(lines)] if starts else []
    out = []
    for s, e in zip(starts, ends, strict=True):
        signature = next((k for k in range(s + 1, e) if lines[k].rstrip(b"\r") == b"-- "), e)
        out.append((s, signature))
    return out


def _name_of(line: bytes, prefix: bytes) -> tuple[str, bool]:
    """The name of a '---'/'+++' line and whether it was cut at a space (no tab)."""
    value = line[len(prefix) :].rstrip(b"\r").decode("utf-8", "surrogateescape")
    if value.startswith('"'):
        return value, False
    if "\t" in value:
        return value.split("\t", 1)[0], False
    if " " in value.strip():
        return value.strip().split(" ", 1)[0], True
    return value.strip(), False


def tolerate(data: bytes, shown: str, strip: int, exists: Callable[[str], bool]) -> Tolerated:
    warnings: list[str] = []
    notes: list[str] = []
    lines = data.split(b"\n")
    body = lines[:-1] if lines and lines[-1] == b"" else lines
    if body and all(ln.endswith(b"\r") for ln in body):
        lines = [ln[:-1] if ln.endswith(b"\r") else ln for ln in lines]
        warnings.append(
            f"{shown}:1: every line ends in CR LF; the CRs were stripped, as GNU patch does"
        )
    drop: set[int] = set()
    git_sections = _sections(lines)
    in_git: set[int] = set()
    for start, end in git_sections:
        in_git.update(range(start, end))
        section = lines[start:end]
        for k, ln in enumerate(section):
            m = _BINARY_RE.match(ln)
            if m and not any(x.startswith((b"--- ", b"@@")) for x in section[:k]):
                name = _strip(m.group(2).decode("utf-8", "surrogateescape"), strip)
                if name == "/dev/null":
                    name = _strip(m.group(1).decode("utf-8", "surrogateescape"), strip)
                mode = next(
                    (j for j, x in enumerate(section) if x.startswith(b"new file mode ")), None
                )
                if mode is not None or m.group(1) == b"/dev/null":
                    warnings.append(
                        f"{shown}:{start + k + 1}: binary file '{name}' created without its data:"
                        " created empty, as GNU patch (quilt) creates it"
                    )
                    notes.append(
                        f"The quilt patch created the binary file '{name}' without its data"
                        " ('Binary files ... differ'); quilt creates it empty, and so did the"
                        " import."
                    )
                    if mode is None:
                        lines[start + k] = b"new file mode 100644"
                        mode = k
                    drop.update(j for j in range(start + 1, end) if j != start + mode)
                    break
                warnings.append(
                    f"{shown}:{start + k + 1}: binary change to '{name}' without data: left out,"
                    " as GNU patch (quilt) leaves it out"
                )
                notes.append(
                    f"The quilt patch changed the binary file '{name}' without its data"
                    " ('Binary files ... differ'); quilt skips that change, and so did the import."
                )
                drop.update(range(start, end))
                break
        else:
            _agree(lines, start, end, shown, strip, exists, warnings)
    for i, ln in enumerate(lines):
        if i in in_git or not ln.startswith(b"--- ") or i + 1 >= len(lines):
            continue
        if not lines[i + 1].startswith(b"+++ "):
            continue
        for k, prefix in ((i, b"--- "), (i + 1, b"+++ ")):
            name, cut = _name_of(lines[k], prefix)
            if cut:
                whole = lines[k][len(prefix) :].rstrip(b"\r").decode("utf-8", "surrogateescape")
                warnings.append(
                    f"{shown}:{k + 1}: the name '{whole.strip()}' has a space and no tab:"
                    f" GNU patch (quilt) reads '{name}', and so does the import"
                )
                lines[k] = prefix + name.encode("utf-8", "surrogateescape")
    drop |= _uncounted(lines, shown, warnings)
    kept = [ln for i, ln in enumerate(lines) if i not in drop]
    return Tolerated(b"\n".join(kept), tuple(warnings), tuple(notes))


def _file_start(lines: list[bytes], i: int) -> bool:
    """Where GNU patch looks for the next file diff: a 'diff' or 'Index:' line, a '---' line
    followed by '+++', or the signature that ends the mail."""
    line = lines[i]
    if line.startswith((b"diff ", b"Index: ")) or line.rstrip(b"\r") in (b"--", b"-- "):
        return True
    return line.startswith(b"--- ") and i + 1 < len(lines) and lines[i + 1].startswith(b"+++ ")


def _uncounted(lines: list[bytes], shown: str, warnings: list[str]) -> set[int]:
    """The lines after a complete hunk that look like more of it (' ', '+', '-') up to the
    next file diff: GNU patch skips them, and the hunks among them."""
    drop: set[int] = set()
    i, n = 0, len(lines) - (1 if lines and lines[-1] == b"" else 0)  # the last newline stays
    while i < n:
        m = _HUNK_RE.match(lines[i])
        if not m:
            i += 1
            continue
        header, at = lines[i], i
        old = int(m.group(1)) if m.group(1) is not None else 1
        new = int(m.group(2)) if m.group(2) is not None else 1
        i += 1
        while (old > 0 or new > 0) and i < n:
            kind = lines[i][:1]
            if kind in (b" ", b""):
                old, new = old - 1, new - 1
            elif kind in (b"-", b"+"):
                old, new = (old - 1, new) if kind == b"-" else (old, new - 1)
            elif kind != b"\\":
                break  # a short hunk: the strict reader names it
            i += 1
        while i < n and lines[i][:1] == b"\\":
            i += 1
        if old > 0 or new > 0 or i >= n or lines[i][:1] not in (b" ", b"+", b"-"):
            continue
        if _file_start(lines, i):
            continue
        first = i
        while i < n and not _file_start(lines, i):
            i += 1
        hunks = sum(1 for k in range(first, i) if lines[k].startswith(b"@@ "))
        text = header.rstrip(b"\r").decode("utf-8", "replace").split(" @@")[0] + " @@"
        also = f", with the {hunks} hunk(s) among them," if hunks else ""
        warnings.append(
            f"{shown}:{first + 1}: {i - first} line(s) after the hunk at line {at + 1} that its"
            f" header '{text}' does not count: ignored{also} as GNU patch (quilt) ignores them"
        )
        drop.update(range(first, i))
    return drop


def _agree(
    lines: list[bytes],
    start: int,
    end: int,
    shown: str,
    strip: int,
    exists: Callable[[str], bool],
    warnings: list[str],
) -> None:
    """Make a git section's names agree at the entry's strip level, choosing as GNU patch
    does, when there is no rename."""
    section = lines[start:end]
    if any(ln.startswith((b"rename ", b"copy ")) for ln in section):
        return
    k = next((j for j, ln in enumerate(section) if ln.startswith(b"--- ")), None)
    if k is None or k + 1 >= len(section) or not section[k + 1].startswith(b"+++ "):
        return
    old, _ = _name_of(section[k], b"--- ")
    new, _ = _name_of(section[k + 1], b"+++ ")
    if old.startswith('"') or new.startswith('"'):
        return
    head = section[0][len(b"diff --git ") :].rstrip(b"\r").decode("utf-8", "surrogateescape")
    halves = head.split(" ")
    git_old, git_new = (halves[0], halves[-1]) if len(halves) == 2 else (old, new)
    names = [_strip(n, strip) for n in (old, new, git_old, git_new)]
    real = [n for n in names[:2] if n != "/dev/null"]
    if len(set(real + [n for n in names[2:] if n != "/dev/null"])) <= 1:
        return
    chosen = best_name(real + names[2:], exists)
    warnings.append(
        f"{shown}:{start + k + 1}: the file diff names '{old}', '{new}' and"
        f" '{head}' without a rename: GNU patch (quilt) changes '{chosen}', and so does the"
        " import"
    )
    a, b = ("/".join([side] * strip) + "/" + chosen if strip else chosen for side in "ab")
    enc = "utf-8", "surrogateescape"
    lines[start] = b"diff --git " + a.encode(*enc) + b" " + b.encode(*enc)
    if old != "/dev/null":
        lines[start + k] = b"--- " + a.encode(*enc)
    if new != "/dev/null":
        lines[start + k + 1] = b"+++ " + b.encode(*enc)
