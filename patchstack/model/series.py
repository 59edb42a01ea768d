"""The series file: the ordered list of patches, quilt-compatible.

One entry a line, ``name.patch [-pN] # tag[, label...]``. quilt ignores everything after ``#``,
so the tag rides in the comment. Exactly one category tag per entry. Header comments carry
metadata; ``# base: <full commit id> [ref]`` (SHA-1 or SHA-256) is the commit the series was
last refreshed against.

The model keeps every line's raw text, so parsing then formatting gives back the same bytes,
and a rewrite (new base, an added entry) touches only the lines it must.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property

from ..errors import InputError
from .marks import (
    DEFERRED,
    UPSTREAM,
    Deferral,
    Mark,
    Upstream,
    is_mark,
    mark_problem,
    marks_of,
    parse_mark,
)
from .naming import TAGS, case_clashes, invisible_in, name_key, validate_label, validate_name

__all__ = [  # from `naming` and `marks`
    "TAGS",
    "Deferral",
    "Upstream",
    "case_clashes",
    "name_key",
    "validate_label",
    "validate_name",
]

_STRIP_RE = re.compile(r"-p(\d{1,2})\Z")
_BASE_RE = re.compile(r"#\s*base:\s*(\S+)(?:\s+(\S+))?\s*\Z")
_BASE_START_RE = re.compile(r"#\s*base\s*:")
_SHA_RE = re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")


@dataclass(frozen=True)
class Entry:
    """One patch of the series."""

    name: str
    tag: str
    labels: tuple[str, ...] = ()
    strip: int | None = None  # the -pN option; None means quilt's default, 1
    lineno: int = 0
    raw: str = ""

    @property
    def strip_level(self) -> int:
        return 1 if self.strip is None else self.strip

    def render(self) -> str:
        opts = f" -p{self.strip}" if self.strip is not None else ""
        comment = ", ".join((self.tag, *self.labels))
        return f"{self.name}{opts} # {comment}\n"


@dataclass(frozen=True)
class Other:
    """A comment or blank line, kept as it was."""

    raw: str
    lineno: int = 0


Line = Entry | Other


@dataclass(frozen=True)
class Series:
    lines: tuple[Line, ...] = ()
    path: str = "series"

    # Derived views, computed once per (immutable) series: commands ask them per patch.
    @cached_property
    def entries(self) -> tuple[Entry, ...]:
        return tuple(line for line in self.lines if isinstance(line, Entry))

    @cached_property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)

    def __contains__(self, name: str) -> bool:
        return name in self._positions

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {e.name: i for i, e in enumerate(self.entries)}

    def entry(self, name: str) -> Entry:
        return self.entries[self._positions[name]]

    def index(self, name: str) -> int:
        try:
            return self._positions[name]
        except KeyError:
            raise ValueError(f"{name!r} is not in the series") from None

    @property
    def base(self) -> str | None:
        found = self._base_line()
        return found[1] if found else None

    @property
    def base_lineno(self) -> int | None:
        found = self._base_line()
        return self.lines[found[0]].lineno if found else None

    @property
    def base_ref(self) -> str | None:
        found = self._base_line()
        return found[2] if found else None

    def _base_line(self) -> tuple[int, str, str | None] | None:
        for i, line in enumerate(self.lines):
            if isinstance(line, Other):
                m = _BASE_RE.match(line.raw.strip())
                if m:
                    return i, m.group(1), m.group(2)
        return None

    @cached_property
    def _marks(self) -> dict[str, dict[str, Mark]]:
        return marks_of(ln.raw for ln in self.lines if isinstance(ln, Other))

    @property
    def deferred(self) -> dict[str, Deferral]:
        """The deferred patches, by name (`marks.Deferral`)."""
        return self._marks[DEFERRED]  # type: ignore[return-value]

    @property
    def upstream(self) -> dict[str, Upstream]:
        """The patches the base holds, kept in the series, by name (`marks.Upstream`)."""
        return self._marks[UPSTREAM]  # type: ignore[return-value]

    def mark_of(self, name: str) -> Deferral | Upstream | None:
        """The deferred or upstream mark of this patch, if it has one."""
        return self.deferred.get(name) or self.upstream.get(name)

    def with_marks(self, deferrals: Iterable[Deferral], upstream: Iterable[Upstream]) -> Series:
        """The series with exactly these marks, in series order, right after the base line."""
        lines = [ln for ln in self.lines if not (isinstance(ln, Other) and is_mark(ln.raw))]
        position = {n: i for i, n in enumerate(self.names)}
        every: list[Mark] = [*deferrals, *upstream]
        wanted = sorted(every, key=lambda m: (position.get(m.name, 0), m.KIND))
        at = _header_end(lines)
        found = self._base_line()
        if found:
            base_line = self.lines[found[0]]
            at = next(i for i, ln in enumerate(lines) if ln is base_line) + 1
        lines[at:at] = [Other(m.render()) for m in wanted]
        return replace(self, lines=tuple(lines))

    def format(self) -> str:
        return "".join(line.raw for line in self.lines)

    def with_base(self, sha: str, ref: str | None = None) -> Series:
        """Set the ``# base:`` line, keeping the old ref label when none is given (None);
        ``""``: the line names none."""
        found = self._base_line()
        if ref is None and found:
            ref = found[2]
        text = f"# base: {sha}" + (f" {ref}" if ref else "") + "\n"
        lines = list(self.lines)
        if found:
            lines[found[0]] = Other(text, lines[found[0]].lineno)
        else:
            lines.insert(_header_end(lines), Other(text))
        return replace(self, lines=tuple(lines))

    def insert(self, entry: Entry, after: str | None) -> Series:
        """Add ``entry`` right after the entry named ``after`` (None: before the first entry)."""
        entry = replace(entry, raw=entry.raw or entry.render())
        lines = list(self.lines)
        if after is None:
            first = next((i for i, ln in enumerate(lines) if isinstance(ln, Entry)), None)
            pos = first if first is not None else len(lines)
        else:
            pos = next(
                i for i, ln in enumerate(lines) if isinstance(ln, Entry) and ln.name == after
            )
            pos += 1
        if pos > 0 and not lines[pos - 1].raw.endswith("\n"):
            prev = lines[pos - 1]
            lines[pos - 1] = replace(prev, raw=prev.raw + "\n")
        lines.insert(pos, entry)
        return replace(self, lines=tuple(lines))

    def remove(self, name: str) -> Series:
        """Without entry ``name`` (and its deferral, if any)."""
        kept = [d for n, d in self.deferred.items() if n != name]
        kept = [replace(d, root=None) if d.root == name else d for d in kept]
        ups = [u for n, u in self.upstream.items() if n != name]
        out = replace(
            self,
            lines=tuple(ln for ln in self.lines if not (isinstance(ln, Entry) and ln.name == name)),
        )
        return out.with_marks(kept, ups) if self.deferred or self.upstream else out

    def replace_entry(self, name: str, new: Entry) -> Series:
        new = replace(new, raw=new.render())
        return replace(
            self,
            lines=tuple(
                new if isinstance(ln, Entry) and ln.name == name else ln for ln in self.lines
            ),
        )

    def _edited(self, name: str, entry: Entry) -> Series:
        return replace(
            self,
            lines=tuple(
                entry if isinstance(ln, Entry) and ln.name == name else ln for ln in self.lines
            ),
        )

    def renamed(self, name: str, new_name: str) -> Series:
        """Entry ``name`` called ``new_name``; the rest of its line (options, tag, labels,
        spacing) keeps its bytes."""
        old = self.entry(name)
        raw = old.raw or old.render()
        out = self._edited(name, replace(old, name=new_name, raw=raw.replace(name, new_name, 1)))
        if not self.deferred and not self.upstream:
            return out
        moved = [
            replace(
                d,
                name=new_name if d.name == name else d.name,
                root=new_name if d.root == name else d.root,
            )
            for d in self.deferred.values()
        ]
        ups = [
            replace(u, name=new_name if u.name == name else u.name) for u in self.upstream.values()
        ]
        return out.with_marks(moved, ups)

    def retagged(self, name: str, tag: str, labels: tuple[str, ...]) -> Series:
        """Entry ``name`` with a new tag and labels; the part before ``#`` keeps its bytes."""
        old = self.entry(name)
        raw = old.raw or old.render()
        body = raw.rstrip("\r\n")
        eol = raw[len(body) :] or "\n"
        before = body.partition("#")[0]
        if not before.endswith((" ", "\t")):
            before += " "
        text = before + "# " + ", ".join((tag, *labels)) + eol
        return self._edited(name, replace(old, tag=tag, labels=labels, raw=text))

    def moved(self, name: str, before: str | None = None, after: str | None = None) -> Series:
        """Entry ``name``'s line moved right before the entry ``before`` or right after the
        entry ``after``; every other line stays where it is."""
        if (before is None) == (after is None):
            raise ValueError("give exactly one of before and after")
        line = self.entry(name)
        lines = [ln for ln in self.lines if ln is not line]
        anchor = before if before is not None else after
        pos = next(i for i, ln in enumerate(lines) if isinstance(ln, Entry) and ln.name == anchor)
        if after is not None:
            pos += 1
        raw = line.raw or line.render()
        if not raw.endswith("\n"):
            raw += "\r\n" if any(ln.raw.endswith("\r\n") for ln in lines) else "\n"
        if pos > 0 and not lines[pos - 1].raw.endswith("\n"):
            prev = lines[pos - 1]
            lines[pos - 1] = replace(prev, raw=prev.raw + "\n")
        lines.insert(pos, replace(line, raw=raw))
        return replace(self, lines=tuple(lines))


def _header_end(lines: list[Line]) -> int:
    """Index just after the leading run of comment lines (where metadata belongs)."""
    i = 0
    while i < len(lines) and isinstance(lines[i], Other) and lines[i].raw.lstrip().startswith("#"):
        i += 1
    return i


def parse_tags(text: str, path: str, lineno: int) -> tuple[str, tuple[str, ...]]:
    """Parse ``tag[, label...]`` from an entry's comment."""
    words = [w.strip() for w in text.split(",")]
    words = [w for w in words if w]
    if not words:
        raise InputError(path, lineno, "missing tag", _tag_hint())
    problem = next(filter(None, map(invisible_in, words)), None)
    if problem:
        hint = "a tag or label is a word of visible characters: remove the character"
        raise InputError(path, lineno, problem, hint)
    category = [w for w in words if w in TAGS]
    if not category:
        raise InputError(path, lineno, f"unknown tag '{words[0]}'", _tag_hint(words[0], path))
    if len(category) > 1:
        raise InputError(
            path, lineno, f"more than one category tag: {', '.join(category)}", _tag_hint()
        )
    if words[0] != category[0]:
        raise InputError(path, lineno, f"unknown tag '{words[0]}'", _tag_hint(words[0], path))
    return category[0], tuple(words[1:])


def _tag_hint(word: str | None = None, path: str = "") -> str:
    from .suggest import did_you_mean

    if path.startswith("--"):  # an option on the command line
        how = f"{path} takes one of " + ", ".join(TAGS) + ", then labels: 'optimization,nvidia'"
    else:
        how = "write one of " + ", ".join(TAGS) + " after '#', e.g. 'fix.patch # essential'"
    close = did_you_mean(word, TAGS) if word else None
    return f"{close} ({how})" if close else how


def parse_series(text: str, path: str = "series") -> Series:
    """Parse a series file. Raises InputError naming ``path`` and the line."""
    lines: list[Line] = []
    seen: dict[str, int] = {}
    base_line = 0
    from .conflict import unresolved_in_series  # (a series parsed before: not loaded)

    raws = re.findall(r"[^\n]*\n|[^\n]+\Z", text)
    unresolved_in_series([r.rstrip("\r\n") for r in raws], path)
    for lineno, raw in enumerate(raws, start=1):
        body = raw.rstrip("\r\n")
        stripped = body.strip()
        if not stripped or stripped.startswith("#"):
            m = _BASE_RE.match(stripped)
            if m is None and _BASE_START_RE.match(stripped):
                raise InputError(
                    path,
                    lineno,
                    f"malformed base line '{stripped[:60]}'",
                    "write '# base: <full commit id> [ref]' (one id, one optional ref name)",
                )
            if m and not _SHA_RE.match(m.group(1)):
                raise InputError(
                    path,
                    lineno,
                    f"base '{m.group(1)}' is not a full commit id (40 or 64 hex digits)",
                    "write '# base: <full commit id> [ref]'",
                )
            if m and base_line:
                raise InputError(
                    path,
                    lineno,
                    f"a second '# base:' line (the first is line {base_line})",
                    "a series has one base: keep one of the two lines",
                )
            base_line = base_line or (lineno if m else 0)
            wrong = mark_problem(stripped)
            if wrong:
                raise InputError(path, lineno, wrong[0], wrong[1])
            lines.append(Other(raw, lineno))
            continue
        entry_part, _, comment = body.partition("#")
        words = entry_part.split()
        name = words[0]
        problem = validate_name(name, folders=True)
        if problem:
            raise InputError(path, lineno, problem)
        strip = None
        for word in words[1:]:
            m = _STRIP_RE.match(word)
            if not m:
                if word.startswith("-p"):
                    raise InputError(
                        path, lineno, f"malformed option '{word}'", "write -pN, e.g. -p0 or -p1"
                    )
                if not word.startswith("-"):
                    raise InputError(
                        path,
                        lineno,
                        f"patch name '{name} {word}' contains whitespace",
                        "a line is 'name.patch [-pN] # tag'; rename the file without spaces",
                    )
                raise InputError(
                    path,
                    lineno,
                    f"unexpected option '{word}'",
                    "a line is 'name.patch [-pN] # tag'",
                )
            if strip is not None:
                raise InputError(path, lineno, f"option '{word}' given twice")
            strip = int(m.group(1))
        if not comment.strip():
            raise InputError(path, lineno, f"missing tag for '{name}'", _tag_hint())
        tag, labels = parse_tags(comment, path, lineno)
        if name in seen:
            raise InputError(
                path, lineno, f"duplicate patch name '{name}' (first on line {seen[name]})"
            )
        seen[name] = lineno
        lines.append(Entry(name, tag, labels, strip, lineno, raw))
    series = Series(tuple(lines), path)
    for line in series.lines:
        mark = parse_mark(line.raw) if isinstance(line, Other) else None
        if mark is not None and mark.name not in seen:
            raise InputError(
                path,
                line.lineno,
                f"{mark.KIND} patch '{mark.name}' is not in the series",
                "remove the line, or put the patch back into the series",
            )
        if isinstance(mark, Deferral) and mark.root and mark.root not in seen:
            raise InputError(
                path, line.lineno, f"deferred after '{mark.root}', which is not in the series"
            )
    return series


def new_series(base: str, ref: str | None = None) -> Series:
    header = "# patchstack series: one patch a line, 'name.patch [-pN] # tag[, label...]'\n"
    return parse_series(header).with_base(base, ref)
