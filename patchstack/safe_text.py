"""Text that cannot lie to or attack a terminal or a reader: pure functions.

Everything patchstack prints that came from a patch, a commit or a file (subjects,
descriptions, diff lines, paths, names, git's own messages) goes through `visible` first.
It replaces, with a visible ``<U+XXXX>``:

- C0 control characters other than tab and newline (ESC starts every terminal control
  sequence, OSC ``ESC ] 0 ; title BEL`` included; CR can overwrite a line), DEL, and C1
  controls (U+0080-U+009F; U+009B is a one-character CSI on some terminals);
- format characters (Unicode category Cf): the bidirectional controls U+202A-U+202E and
  U+2066-U+2069 of Trojan Source (CVE-2021-42574), the zero-width U+200B-U+200D, U+2060 and
  U+FEFF, and the tag characters that can smuggle invisible text;
- the line and paragraph separators U+2028 and U+2029.

Bytes that are not UTF-8 (kept as lone surrogates by ``surrogateescape``) become ``<0xNN>``.

`findings` says which of these a text holds, so that the output can carry a warning, as
GitHub does for bidirectional text. `deep_visible` applies `visible` to every string inside
frozen dataclasses, tuples and mappings (the values a template renders).

Colour that patchstack adds itself must survive: `mark_style` turns the ESC of a styled
string into a per-process random token that no input can forge (it is printable, so `visible`
leaves it alone), and `restore_style` turns it back after the text was made visible.
"""

from __future__ import annotations

import dataclasses
import os
import re
import unicodedata
from collections.abc import Mapping
from typing import Any, TypeVar

_KEEP = frozenset("\t\n")
# Printable, unguessable: stands for an ESC that patchstack itself wrote (colour).
STYLE_TOKEN = "\ue000" + os.urandom(8).hex() + "\ue001"
T = TypeVar("T")


def _bad(ch: str) -> bool:
    o = ord(ch)
    if o < 0x20:
        return ch not in _KEEP
    if o < 0x7F:
        return False
    if o <= 0x9F:
        return True  # DEL and C1
    if 0xDC80 <= o <= 0xDCFF:
        return True  # an undecodable byte (surrogateescape)
    return unicodedata.category(ch) in ("Cf", "Zl", "Zp", "Cs")


def _shown(ch: str) -> str:
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:
        return f"<0x{o - 0xDC00:02X}>"
    return f"<U+{o:04X}>"


# Every character but printable ASCII, tab and newline: the only ones `_bad` may judge bad
# (found by the regular expression engine, so that plain text costs no Python per character).
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")


def _replace(match: re.Match[str]) -> str:
    ch = match.group()
    return _shown(ch) if _bad(ch) else ch


def visible(text: str) -> str:
    """``text`` with every control, format and invisible character shown as ``<U+XXXX>``."""
    if _SUSPECT.search(text) is None:
        return text  # the common case, fast
    return _SUSPECT.sub(_replace, text)


def findings(text: str) -> tuple[str, ...]:
    """The distinct characters `visible` would replace, as ``U+XXXX`` in first-seen order."""
    seen = dict.fromkeys(_shown(ch)[1:-1] for ch in _SUSPECT.findall(text) if _bad(ch))
    return tuple(seen)


def is_trojan(code: str) -> bool:
    """Is ``U+XXXX`` a bidirectional control or an invisible character (not a plain control)?"""
    if not code.startswith("U+"):
        return False
    return unicodedata.category(chr(int(code[2:], 16))) in ("Cf", "Zl", "Zp")


def warning(found: tuple[str, ...]) -> str | None:
    """The one-line warning for output that had characters replaced, or None."""
    if not found:
        return None
    shown = ", ".join(found[:8]) + (", ..." if len(found) > 8 else "")
    kind = (
        "bidirectional or invisible Unicode characters"
        if any(is_trojan(c) for c in found)
        else "control characters"
    )
    return (
        f"this output contains {kind} ({shown}); they are shown as <U+XXXX> and may make"
        " text read differently from what it does (CVE-2021-42574)"
    )


def mark_style(styled: str) -> str:
    """A string styled by patchstack (ANSI colour), with its ESCs turned into the token."""
    return styled.replace("\x1b", STYLE_TOKEN)


def restore_style(text: str) -> str:
    return text.replace(STYLE_TOKEN, "\x1b")


def safe_terminal(text: str) -> tuple[str, tuple[str, ...]]:
    """What may be written to a terminal: ``text`` made visible, patchstack's colour kept;
    and what was replaced."""
    return restore_style(visible(text)), findings(text.replace(STYLE_TOKEN, ""))


def deep_visible(value: T) -> tuple[T, tuple[str, ...]]:
    """``value`` with `visible` applied to every string in it (dataclasses, tuples, lists,
    mappings), and what was replaced anywhere."""
    found: dict[str, None] = {}

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for code in findings(v):
                found[code] = None
            return visible(v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            changes = {f.name: walk(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
            same = all(changes[k] is getattr(v, k) for k in changes)
            return v if same else dataclasses.replace(v, **changes)
        if isinstance(v, tuple):
            items = tuple(walk(x) for x in v)
            if all(a is b for a, b in zip(items, v, strict=True)):
                return v
            return type(v)(*items) if hasattr(v, "_fields") else items
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, Mapping):
            return {walk(k): walk(x) for k, x in v.items()}
        return v

    result = walk(value)
    return result, tuple(found)
