"""Reading the diff part of a patch file: file headers (git's extended headers, traditional
``---``/``+++``), hunks with their counts checked, binary data checked (`binary_data`); every
malformation an `InputError` naming the file and line."""

from __future__ import annotations

import re

from ..errors import InputError
from .binary_data import check_binary
from .diff import FileDiff, Hunk

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)\Z")


_MBOX_FROM_RE = re.compile(r"From [0-9a-f]{40} ")


_INDEX_RE = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)(?: ([0-7]{6}))?\Z")


VALID_MODES = ("100644", "100755", "120000", "160000")


MAX_LINE_NUMBER = 2**31 - 1  # git's and GNU patch's line numbers are C ints


_CRLF_HINT = (
    "the patch file has Windows (CR LF) line endings in its own lines, as a checkout with"
    " text conversion makes them: add '* -text' to a .gitattributes file in the series folder"
    " and check the file out again, or strip the CR from the patch's own lines (diff, index,"
    " ---, +++, @@) and keep those of the changed content"
)


_GIT_HEADER_PREFIXES = (
    "old mode ",
    "new mode ",
    "deleted file mode ",
    "new file mode ",
    "copy from ",
    "copy to ",
    "rename from ",
    "rename to ",
    "similarity index ",
    "dissimilarity index ",
    "index ",
)


def is_file_start(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith("diff --git ") or line.rstrip("\r") == "diff --git":
        return True
    return line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _unquote(path: str) -> str:
    """Undo git's C-style quoting of a path ("a/with\\ttab")."""
    if not (path.startswith('"') and path.endswith('"') and len(path) >= 2):
        return path
    raw = path[1:-1].encode("utf-8", "surrogateescape")
    out = bytearray()
    i = 0
    simple = {
        ord("n"): 10,
        ord("t"): 9,
        ord('"'): 34,
        ord("\\"): 92,
        ord("a"): 7,
        ord("b"): 8,
        ord("f"): 12,
        ord("r"): 13,
        ord("v"): 11,
    }
    while i < len(raw):
        c = raw[i]
        if c == 92 and i + 1 < len(raw):
            n = raw[i + 1]
            if n in simple:
                out.append(simple[n])
                i += 2
                continue
            if 48 <= n <= 55:
                out.append(int(raw[i + 1 : i + 4], 8))
                i += 4
                continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_components(path: str, strip: int, where: tuple[str, int]) -> str:
    if path == "/dev/null":
        return path
    parts = path.split("/")
    if strip >= len(parts):
        raise InputError(where[0], where[1], f"cannot strip {strip} components from '{path}'")
    return "/".join(parts[strip:])


def _header_path(line: str, prefix: str) -> str:
    value = line[len(prefix) :].rstrip("\r")
    if value.startswith('"'):
        end = value.find('"', 1)
        while end != -1 and value[end - 1] == "\\":
            end = value.find('"', end + 1)
        return _unquote(value[: end + 1]) if end != -1 else value
    return value.split("\t")[0].rstrip()


def _git_line_paths(line: str) -> tuple[str, str] | None:
    rest = line[len("diff --git ") :].rstrip("\r")
    if rest.startswith('"'):
        end = rest.find('" ')
        if end == -1:
            return None
        return _unquote(rest[: end + 1]), _unquote(rest[end + 2 :])
    # Unquoted: both names are the same length when there is no rename ("a/x y b/x y").
    half = (len(rest) - 1) // 2
    if len(rest) % 2 == 1 and rest[half] == " ":
        a, b = rest[:half], rest[half + 1 :]
        if a.partition("/")[2] == b.partition("/")[2]:
            return a, b
    parts = rest.split(" ")
    return (parts[0], parts[-1]) if len(parts) == 2 else None


def parse_diff(lines: list[str], start: int, path: str, strip: int) -> list[FileDiff]:
    files: list[FileDiff] = []
    i = start
    n = len(lines)
    while i < n:
        line = lines[i]
        if is_file_start(lines, i):
            fd, i = _parse_file(lines, i, path, strip)
            files.append(fd)
        elif line.startswith("@@"):
            raise InputError(path, i + 1, "hunk header outside of a file diff")
        elif _MBOX_FROM_RE.match(line) or (files and line.startswith("Subject: ")):
            raise InputError(
                path,
                i + 1,
                "a second mail starts here: one patch file holds one patch",
                "split the mbox with 'patchstack import mbox'",
            )
        else:
            i += 1  # text between file diffs (Index:, a signature); git ignores it too
    return files


def _parse_file(lines: list[str], i: int, path: str, strip: int) -> tuple[FileDiff, int]:
    n = len(lines)
    lineno = i + 1
    old_path = new_path = None
    info: dict[str, str | bool | None] = {}
    binary = False
    git_names: tuple[str, str] | None = None
    if lines[i].startswith("diff --git"):
        _no_cr(lines, i, path)
        if not lines[i][len("diff --git") :].strip():
            raise InputError(
                path, lineno, "'diff --git' line names no file", "regenerate the patch"
            )
        # An unquoted rename with spaces is ambiguous here; "rename from/to" or "---/+++" say.
        git_names = _git_line_paths(lines[i])
        old_path, new_path = git_names or (None, None)
        i += 1
        while i < n and lines[i].startswith(_GIT_HEADER_PREFIXES):
            _no_cr(lines, i, path)
            h = lines[i].rstrip("\r")
            if h.startswith("index "):
                m = _INDEX_RE.match(h)
                if not m:
                    raise InputError(path, i + 1, f"malformed index line '{h}'")
                info["old_id"], info["new_id"] = m.group(1), m.group(2)
                if m.group(3):
                    _check_mode(m.group(3), path, i)
                    info["old_mode"] = info["new_mode"] = m.group(3)
            elif h.startswith(("old mode ", "deleted file mode ")):
                info["old_mode"] = _check_mode(h.rsplit(" ", 1)[1], path, i)
                if h.startswith("deleted"):
                    new_path = "/dev/null"
            elif h.startswith(("new mode ", "new file mode ")):
                info["new_mode"] = _check_mode(h.rsplit(" ", 1)[1], path, i)
                if h.startswith("new file"):
                    old_path = "/dev/null"
            elif h.startswith(("rename from ", "copy from ")):
                old_path = "a/" + _header_path(h, h.split(" from ")[0] + " from ")
                info["renamed" if h.startswith("rename") else "copied"] = True
            elif h.startswith(("rename to ", "copy to ")):
                new_path = "b/" + _header_path(h, h.split(" to ")[0] + " to ")
            i += 1
        changed = _changed_file(old_path, new_path, strip)
        if i < n and lines[i].startswith("Binary files "):
            raise InputError(
                path,
                i + 1,
                f"binary change to '{changed}' without data",
                "regenerate the patch with 'git diff --binary' or 'git format-patch'",
            )
        if i < n and lines[i].rstrip("\r") == "GIT binary patch":
            binary = True
            i = check_binary(lines, i + 1, path, changed)
    if i < n and lines[i].startswith("--- "):
        if not (i + 1 < n and lines[i + 1].startswith("+++ ")):
            raise InputError(path, i + 1, "'---' line without a following '+++' line")
        _no_cr(lines, i, path)
        _no_cr(lines, i + 1, path)
        old_path = _header_path(lines[i], "--- ")
        new_path = _header_path(lines[i + 1], "+++ ")
        for k, name in ((i, old_path), (i + 1, new_path)):
            if name.startswith("/") and name != "/dev/null":
                raise InputError(
                    path,
                    k + 1,
                    f"refused path '{name}': a traditional diff naming an absolute path",
                    "a patch names files relative to the top of the tree; fix the patch",
                )
        if git_names and not info.get("renamed") and not info.get("copied"):
            _check_agree(git_names, old_path, new_path, path, i, strip)
        i += 2
        if not (i < n and lines[i].startswith("@@")):
            raise InputError(path, i + 1, "file header without a hunk")
    hunks: list[Hunk] = []
    while i < n and lines[i].startswith("@@"):
        hunk, i = _parse_hunk(lines, i, path)
        hunks.append(hunk)
    if (
        hunks
        and i < n
        and lines[i][:1] in ("+", "-", " ")
        and not is_file_start(lines, i)
        and lines[i].rstrip("\r") not in ("--", "-- ")
    ):
        raise InputError(
            path,
            i + 1,
            "hunk has more lines than its header says",
            "fix the line counts in the '@@' header, or regenerate the patch",
        )
    renamed_or_copied = bool(info.get("renamed") or info.get("copied"))
    mode_line = "old_mode" in info and info.get("old_mode") != info.get("new_mode")
    where = (path, lineno)
    old = None if old_path in (None, "/dev/null") else _strip_components(old_path, strip, where)
    new = None if new_path in (None, "/dev/null") else _strip_components(new_path, strip, where)
    if old is None and new is None:
        raise InputError(path, lineno, "file diff names no file")
    headers_change = old_path == "/dev/null" or new_path == "/dev/null" or mode_line
    if git_names is not None and not (hunks or binary or headers_change or renamed_or_copied):
        raise InputError(
            path,
            lineno,
            "file diff without a change (no hunk, mode, rename or binary data)",
            "regenerate the patch",
        )
    return (
        FileDiff(
            old,
            new,
            _text(info.get("old_mode")),
            _text(info.get("new_mode")),
            _text(info.get("old_id")),
            _text(info.get("new_id")),
            binary,
            bool(info.get("renamed")),
            bool(info.get("copied")),
            tuple(hunks),
            lineno,
        ),
        i,
    )


def _text(value: str | bool | None) -> str | None:
    return value if isinstance(value, str) else None


def _no_cr(lines: list[str], i: int, path: str) -> None:
    """The patch's own lines (not the content it changes) must not end in CR."""
    if lines[i].endswith("\r"):
        raise InputError(path, i + 1, "line ends in CR LF (a CRLF patch file)", _CRLF_HINT)


def _check_mode(mode: str, path: str, i: int) -> str:
    if mode not in VALID_MODES:
        what = "a folder's mode" if mode == "040000" else "not a file mode git writes"
        raise InputError(
            path,
            i + 1,
            f"invalid mode '{mode}' ({what})",
            "a file's mode is one of " + ", ".join(VALID_MODES) + "; regenerate the patch",
        )
    return mode


def _changed_file(old: str | None, new: str | None, strip: int) -> str:
    """The file a git file diff changes, as its header names it (for messages)."""
    name = new if new not in (None, "/dev/null") else old
    return _beyond(name, strip) if name else "?"


def _beyond(name: str, strip: int) -> str:
    """``name`` without its first ``strip`` components (what is left when there are fewer)."""
    parts = name.split("/")
    return "/".join(parts[strip:]) if strip < len(parts) else name


def _check_agree(
    git_names: tuple[str, str], old: str, new: str, path: str, i: int, strip: int
) -> None:
    """Without a rename, '---'/'+++' name the file the 'diff --git' line names (each read
    with the patch's strip level)."""
    for k, (side, name, want) in enumerate(
        (("---", old, git_names[0]), ("+++", new, git_names[1]))
    ):
        if name != "/dev/null" and _beyond(name, strip) != _beyond(want, strip):
            raise InputError(
                path,
                i + k + 1,
                f"the '{side}' name '{name}' disagrees with the 'diff --git' name '{want}'"
                " (and there is no rename)",
                "make the names agree, or regenerate the patch with git",
            )


def _line_number(text: str | None, default: int, path: str, i: int) -> int:
    if text is None:
        return default
    if len(text) > 10 or int(text) > MAX_LINE_NUMBER:
        raise InputError(
            path,
            i + 1,
            f"hunk line number {text[:24]}{'...' if len(text) > 24 else ''} is out of range",
            f"line numbers and counts are at most {MAX_LINE_NUMBER}; regenerate the patch",
        )
    return int(text)


def _parse_hunk(lines: list[str], i: int, path: str) -> tuple[Hunk, int]:
    header = lines[i].rstrip("\r")
    m = _HUNK_RE.match(header)
    if not m:
        raise InputError(
            path,
            i + 1,
            f"malformed hunk header '{header[:60]}'",
            "a hunk starts with '@@ -OLD[,COUNT] +NEW[,COUNT] @@'",
        )
    if m.group(5) == "" and lines[i].endswith("\r"):
        _no_cr(lines, i, path)
    old_start = _line_number(m.group(1), 0, path, i)
    old_len = _line_number(m.group(2), 1, path, i)
    new_start = _line_number(m.group(3), 0, path, i)
    new_len = _line_number(m.group(4), 1, path, i)
    if old_start + old_len > MAX_LINE_NUMBER or new_start + new_len > MAX_LINE_NUMBER:
        raise InputError(path, i + 1, "hunk line numbers overflow", "regenerate the patch")
    lineno = i + 1
    i += 1
    old_left, new_left = old_len, new_len
    body: list[str] = []
    n = len(lines)
    ended = ""  # the sides ("-", "+") a "\\ No newline" line closed
    while old_left > 0 or new_left > 0:
        if i >= n:
            raise InputError(
                path,
                i,
                f"truncated hunk: {old_left} old and {new_left} new lines missing",
                "the patch file was cut short; regenerate it",
            )
        line = lines[i]
        kind = line[:1]
        if kind == "\\":
            ended = _no_newline(body, ended, path, i)
            body.append(line)
            i += 1
            continue
        if (kind in (" ", "", "-") and "-" in ended) or (kind in (" ", "", "+") and "+" in ended):
            raise InputError(
                path,
                i,
                "'\\ No newline at end of file' in the middle of a hunk",
                "it may only follow the last line of the old or the new side; regenerate the patch",
            )
        if kind in (" ", ""):
            old_left -= 1
            new_left -= 1
        elif kind == "-":
            old_left -= 1
        elif kind == "+":
            new_left -= 1
        else:
            raise InputError(
                path,
                i + 1,
                f"unexpected line in hunk ({old_left} old and {new_left} new lines expected)",
                "fix the line counts in the '@@' header, or regenerate the patch",
            )
        if old_left < 0 or new_left < 0:
            raise InputError(
                path,
                i + 1,
                "hunk line counts do not match its '@@' header",
                "fix the line counts in the '@@' header, or regenerate the patch",
            )
        body.append(line if kind else " ")
        i += 1
    while i < n and lines[i].startswith("\\"):
        ended = _no_newline(body, ended, path, i)
        body.append(lines[i])
        i += 1
    return Hunk(old_start, old_len, new_start, new_len, m.group(5), tuple(body), lineno), i


def _no_newline(body: list[str], ended: str, path: str, i: int) -> str:
    """The sides closed after a "\\ No newline" line at ``i`` that follows ``body``."""
    prev = body[-1][:1] if body else "\\"
    if prev == "\\":
        raise InputError(
            path,
            i + 1,
            "'\\ No newline at end of file' does not follow a line of the hunk",
            "regenerate the patch",
        )
    return ended + {" ": "-+", "-": "-", "+": "+"}[prev]
