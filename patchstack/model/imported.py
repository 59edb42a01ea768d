"""What a patch from elsewhere becomes: quilt series lines (tags from comments or guards),
names, messages, authors and dates; and where GNU patch's fuzz would put a hunk
(`locate_preimage`), so that a fuzzy quilt patch is merged three-way instead of applied with
fuzz. Pure functions."""

from __future__ import annotations

import email.utils
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from ..errors import InputError
from .patchfile import FileDiff, Patch, decode
from .series import TAGS, name_key, parse_tags

MAX_FUZZ = 2  # quilt's (GNU patch's) default


_GUARD_RE = re.compile(r"#\s*([+-])([^\s#]+)")


@dataclass(frozen=True)
class QuiltLine:
    """One entry of a quilt series file."""

    file: str  # as written, relative to the quilt directory (may contain '/')
    strip: int
    tag: str | None
    labels: tuple[str, ...]
    lineno: int


def parse_quilt_series(text: str, path: str) -> list[QuiltLine]:
    """Entries of a quilt (or MQ / guilt) series file; comment and blank lines are skipped."""
    result: list[QuiltLine] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(text.splitlines(), start=1):
        body = raw.strip()
        if not body or body.startswith("#"):
            continue
        entry_part, hash_, comment = body.partition("#")
        words = entry_part.split()
        file = words[0]
        if file.startswith("/") or ".." in file.split("/"):
            raise InputError(path, lineno, f"patch path '{file}' leaves the quilt directory")
        strip = 1
        for word in words[1:]:
            m = re.fullmatch(r"-p(\d{1,2})", word)
            if m:
                strip = int(m.group(1))
            elif word == "-R":
                raise InputError(
                    path,
                    lineno,
                    f"reversed patch (-R) '{file}' is not supported",
                    "reverse the patch file (interdiff, or 'patch -R') and drop -R",
                )
            else:
                raise InputError(path, lineno, f"unknown option '{word}' for '{file}'")
        tag, labels = comment_tags(hash_ + comment, path, lineno)
        if file in seen:
            raise InputError(path, lineno, f"'{file}' listed twice (first on line {seen[file]})")
        seen[file] = lineno
        result.append(QuiltLine(file, strip, tag, labels, lineno))
    return result


def comment_tags(comment: str, path: str, lineno: int) -> tuple[str | None, tuple[str, ...]]:
    """Tag and labels from a series entry's comment: guards, or patchstack's own tag list."""
    guards = _GUARD_RE.findall(comment)
    if guards:
        tags = [name for sign, name in guards if sign == "+" and name in TAGS]
        if len(set(tags)) > 1:
            raise InputError(
                path,
                lineno,
                "more than one tag among the guards: " + ", ".join(tags),
                "a patch has exactly one of " + ", ".join(TAGS),
            )
        labels = tuple(sign + name for sign, name in guards if not (sign == "+" and name in TAGS))
        return (tags[0] if tags else None), labels
    text = comment.lstrip("#").strip()
    if not text:
        return None, ()
    try:
        return parse_tags(text, path, lineno)
    except InputError:
        return None, ()  # a free comment, not tags


def quilt_name(file: str) -> str:
    """A patchstack name for a quilt patch path: folders joined with '--', odd characters '_'."""
    name = unicodedata.normalize("NFC", "--".join(part for part in file.split("/") if part))
    name = "".join(ch if ch.isprintable() else "_" for ch in name)
    name = re.sub(r"[^\w.+@=~-]", "_", name)
    name = re.sub(r"\.\.+", ".", name)
    if not re.match(r"[^\W]", name):
        name = "_" + name
    return name


def slug(subject: str, limit: int = 52) -> str:
    """A file name from a subject, as ``git format-patch`` makes one (without the number)."""
    text = re.sub(r"[^A-Za-z0-9._]+", "-", subject)
    text = re.sub(r"\.\.+", ".", text).strip("-.")
    text = text[:limit].rstrip("-.")
    return (text or "patch") + ".patch"


def unique_name(name: str, taken: set[str]) -> str:
    """``name``, or ``name`` numbered (``fix-2.patch``) when it is taken; ``taken`` holds the
    `name_key` of every name handed out, so that two names never differ only by case (one
    file on macOS and Windows). The name returned is added to ``taken``."""
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    k = 1
    while name_key(name) in taken:
        k += 1
        name = f"{stem}-{k}{dot}{ext}"
    taken.add(name_key(name))
    return name


def patch_message(patch: Patch, fallback: str) -> str:
    """A commit message for a patch read from a file: subject, description, DEP-3 fields."""
    subject, description = patch.subject, patch.description
    if subject is None and description:
        # A free-text header (quilt's): its first line is the subject when it stands alone.
        first, _, rest = description.partition("\n")
        if first.strip() and (not rest or not rest.split("\n", 1)[0].strip()) and len(first) < 100:
            subject, description = first.strip(), rest.strip("\n")
    subject = subject or fallback
    parts = [subject]
    if description.strip():
        parts.append(description.strip("\n"))
    if patch.fields:
        parts.append("\n".join(f"{k}: {v}" for k, v in patch.fields))
    return "\n\n".join(parts) + "\n"


def normalize_author(text: str | None) -> str | None:
    """ "Name <email>" from a From:/Author: value, or None when there is none."""
    if not text or not text.strip():
        return None
    text = " ".join(text.split())
    if "<" not in text and "@" not in text:
        return f"{text} <>"  # a name alone (DEP-3 allows it); git accepts an empty email
    name, addr = email.utils.parseaddr(text)
    if not name and not addr:
        return None
    name = (name or addr.split("@")[0]).strip().replace("<", "").replace(">", "")
    return f"{name} <{addr.strip()}>"


def normalize_date(text: str | None) -> str | None:
    """A date git accepts ("<epoch> <+hhmm>"), or None when ``text`` is not a full date."""
    if not text or not text.strip():
        return None
    text = text.strip()
    if re.fullmatch(r"\d+ [+-]\d{4}", text):
        return text
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            return None
    delta = when.utcoffset()
    if when.tzinfo is None or delta is None:
        return None
    offset = int(delta.total_seconds()) // 60
    sign = "+" if offset >= 0 else "-"
    return f"{int(when.timestamp())} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


def locate_preimage(
    old: bytes, fd: FileDiff, max_fuzz: int = MAX_FUZZ
) -> tuple[bytes, tuple[int, ...]] | None:
    """The file ``old`` with each hunk's preimage put where ``patch --fuzz`` would place it.

    Hunks are placed in order, nearest to where their header says first (carrying the offset
    of the previous hunk), with all context, else up to ``max_fuzz`` context lines ignored at
    either end. The ignored lines are replaced by the hunk's own, so that the patch applies to
    the result exactly. Returns (that file, the fuzz each hunk needed) or None when a hunk fits
    nowhere.
    """
    cur = decode(old).splitlines(keepends=True)
    keys = [ln[:-1] if ln.endswith("\n") else ln for ln in cur]
    out: list[str] = []
    pos = offset = 0
    fuzzes = []
    for h in fd.hunks:
        body = [ln for ln in h.lines if not ln.startswith("\\")]
        pre: list[str] = []
        for i, ln in enumerate(h.lines):
            if ln[:1] in (" ", "-"):
                no_newline = i + 1 < len(h.lines) and h.lines[i + 1].startswith("\\")
                pre.append(ln[1:] + ("" if no_newline else "\n"))
        pre_keys = [ln[:-1] if ln.endswith("\n") else ln for ln in pre]
        lead = next((i for i, ln in enumerate(body) if ln[:1] != " "), len(body))
        trail = next((i for i, ln in enumerate(reversed(body)) if ln[:1] != " "), len(body))
        nominal = h.old_start - 1 if h.old_len else h.old_start
        found = None
        for fuzz in range(max_fuzz + 1):
            front, back = min(fuzz, lead), min(fuzz, trail)
            if fuzz and not (front or back):
                break
            core = pre_keys[front : len(pre_keys) - back]
            want = nominal + offset + front
            lo, hi = pos + front, len(keys) - len(core) - back
            for p in _nearest_first(want, lo, hi):
                if keys[p : p + len(core)] == core:
                    found = (p - front, p + len(core) + back, max(front, back))
                    break
            if found:
                break
        if found is None:
            return None
        start, end, used = found
        out.extend(cur[pos:start])
        out.extend(pre)
        pos = end
        offset = start - nominal
        fuzzes.append(used)
    out.extend(cur[pos:])
    return "".join(out).encode("utf-8", "surrogateescape"), tuple(fuzzes)


def _nearest_first(want: int, lo: int, hi: int) -> Iterator[int]:
    if lo > hi:
        return
    want = min(max(want, lo), hi)
    yield want
    for d in range(1, hi - lo + 1):
        if want - d >= lo:
            yield want - d
        if want + d <= hi:
            yield want + d
        if want - d < lo and want + d > hi:
            return
