"""The patch file: one named diff, read strictly.

patchstack writes patches in ``git format-patch`` form (a From/Date/Subject header, the
description, ``---``, a diffstat, and a diff with ``a/`` ``b/`` prefixes and full ``index``
lines); `git.Git.format_patch` produces the bytes, so this module only reads.

Reading accepts that form (folded and MIME-encoded headers included), plain ``diff -u`` and quilt
patches with or without a header, and DEP-3 style description headers. Reading is strict where
tools are lax: a hunk whose line counts disagree with its header, a garbage ``@@`` line, a
truncated hunk, a binary change without data, two mails in one file or a file with no change
at all is an `InputError` naming the file and line. (unidiff, for one, reads a garbage hunk
header as "no hunks"; git would refuse the patch later with a less useful message.)

The text is decoded as UTF-8 with ``surrogateescape``, so any bytes survive a round trip.
"""

from __future__ import annotations

import email.header
import re
from dataclasses import dataclass

from ..errors import InputError
from .binary_data import check_binary

_HUNK_RE = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)\Z")
_MBOX_FROM_RE = re.compile(r"From [0-9a-f]{40} ")
_HEADER_RE = re.compile(r"([A-Za-z][A-Za-z0-9-]*):(?: |\Z)")
_INDEX_RE = re.compile(r"index ([0-9a-f]+)\.\.([0-9a-f]+)(?: ([0-7]{6}))?\Z")
_SUBJECT_PREFIX_RE = re.compile(r"^(\s*\[[^\]]*\])+\s*")
# What git writes and applies: a regular file, an executable, a symbolic link, a submodule.
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


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_len: int
    new_start: int
    new_len: int
    section: str
    lines: tuple[str, ...]  # each starts with ' ', '-', '+' or '\\' (no newline at end)
    lineno: int

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln.startswith("-"))

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln.startswith("+"))

    @property
    def preimage(self) -> tuple[str, ...]:
        return tuple(ln[1:] for ln in self.lines if ln[:1] in (" ", "-", ""))


@dataclass(frozen=True)
class FileDiff:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    old_mode: str | None = None
    new_mode: str | None = None
    old_id: str | None = None
    new_id: str | None = None
    binary: bool = False
    renamed: bool = False
    copied: bool = False
    hunks: tuple[Hunk, ...] = ()
    lineno: int = 0

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or ""

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p in (self.old_path, self.new_path) if p))

    @property
    def added(self) -> int:
        return sum(len(h.added) for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(len(h.removed) for h in self.hunks)


@dataclass(frozen=True)
class Patch:
    subject: str | None
    description: str
    author: str | None = None  # "Name <email>"
    date: str | None = None  # as written in the header (RFC 2822)
    files: tuple[FileDiff, ...] = ()
    diff_lineno: int = 1
    # DEP-3 fields other than description and author (Origin, Bug-Debian, Forwarded,
    # Last-Update...), as (name as written, value), in file order.
    fields: tuple[tuple[str, str], ...] = ()

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for f in self.files for p in f.paths))

    @property
    def added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed for f in self.files)

    def message(self, fallback_subject: str) -> str:
        """The commit message: subject, blank line, description."""
        subject = self.subject or fallback_subject
        return subject + ("\n\n" + self.description if self.description else "") + "\n"


def decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def parse_patch(data: bytes, path: str, strip: int = 1) -> Patch:
    """Parse and validate a patch. ``path`` names the file in error messages."""
    lines = decode(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise InputError(path, 1, "the patch is empty", "a patch needs at least one file diff")
    start = _find_diff_start(lines)
    if start is None:
        raise InputError(path, 1, "no diff found in the patch", "a patch needs a unified diff")
    author, date, subject, description, fields = _parse_head(lines[:start])
    files = _parse_diff(lines, start, path, strip)
    if not files:
        raise InputError(path, start + 1, "no file diff found", "a patch needs a unified diff")
    return Patch(subject, description, author, date, tuple(files), start + 1, fields)


def _is_file_start(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith("diff --git ") or line.rstrip("\r") == "diff --git":
        return True
    return line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _find_diff_start(lines: list[str]) -> int | None:
    for i in range(len(lines)):
        if _is_file_start(lines, i):
            # quilt/svn "Index:" and "====" lines, and a "diff -u ..." command line, belong
            # to the file diff rather than to the description.
            j = i
            while j > 0 and (
                lines[j - 1].startswith(("Index: ", "====", "diff "))
                and not lines[j - 1].startswith("diff --git ")
            ):
                j -= 1
            return j
    return None


_DEP3_FIELDS = ("origin", "bug", "forwarded", "reviewed-by", "acked-by", "last-update")
_DEP3_FIELDS += ("applied-upstream",)


def _is_dep3_field(key: str) -> bool:
    return key in _DEP3_FIELDS or key.startswith("bug-")


def _parse_head(
    head: list[str],
) -> tuple[str | None, str | None, str | None, str, tuple[tuple[str, str], ...]]:
    i = 0
    if head and head[0].startswith("From ") and not head[0].startswith("From: "):
        i = 1  # the mbox separator line
    headers: dict[str, str] = {}
    spelled: dict[str, str] = {}
    if i < len(head) and _HEADER_RE.match(head[i]):
        key = None
        while i < len(head) and head[i].strip():
            line = head[i].rstrip("\r")
            m = _HEADER_RE.match(line)
            if line[:1] in (" ", "\t") and key:
                if key == "description":
                    # DEP-3 continuation: " ." stands for an empty line.
                    more = line.strip()
                    headers[key] += "\n" + ("" if more == "." else more)
                else:
                    headers[key] += " " + line.strip()
            elif m:
                key = m.group(1).lower()
                if key not in headers:
                    headers[key] = line[m.end() :].strip()
                    spelled[key] = m.group(1)
            else:
                break
            i += 1
    body = head[i:]
    # The description ends at the last "---" line (what follows is the diffstat).
    cut = max((k for k, ln in enumerate(body) if ln.rstrip("\r") == "---"), default=None)
    if cut is not None:
        body = body[:cut]
    subject = headers.get("subject")
    description = "\n".join(ln.rstrip("\r") for ln in body).strip("\n")
    if subject is None and "description" in headers:  # DEP-3
        first, _, rest = headers["description"].partition("\n")
        subject = first
        description = "\n".join(p for p in (rest.strip(), description) if p)
    if subject is not None:
        subject = _SUBJECT_PREFIX_RE.sub("", _decode_header(subject)).strip() or None
    author = headers.get("from") or headers.get("author")
    if author is not None:
        author = _decode_header(author)
    fields = tuple((spelled[k], v) for k, v in headers.items() if _is_dep3_field(k))
    return author, headers.get("date"), subject, description, fields


def _decode_header(value: str) -> str:
    if "=?" not in value:
        return value
    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (UnicodeDecodeError, LookupError, email.errors.HeaderParseError):
        return value


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


def _parse_diff(lines: list[str], start: int, path: str, strip: int) -> list[FileDiff]:
    files: list[FileDiff] = []
    i = start
    n = len(lines)
    while i < n:
        line = lines[i]
        if _is_file_start(lines, i):
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
        if i < n and lines[i].startswith("Binary files "):
            raise InputError(
                path,
                i + 1,
                "binary change without data",
                "regenerate the patch with 'git diff --binary' or 'git format-patch'",
            )
        if i < n and lines[i].rstrip("\r") == "GIT binary patch":
            binary = True
            i = check_binary(lines, i + 1, path)
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
            _check_agree(git_names, old_path, new_path, path, i)
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
        and not _is_file_start(lines, i)
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


def _check_agree(git_names: tuple[str, str], old: str, new: str, path: str, i: int) -> None:
    """Without a rename, '---'/'+++' name the file the 'diff --git' line names."""
    for k, (side, name, want) in enumerate(
        (("---", old, git_names[0]), ("+++", new, git_names[1]))
    ):
        if name != "/dev/null" and name.partition("/")[2] != want.partition("/")[2]:
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
