"""What a patch name and a label may be: safe file names in the series folder (quilt allows
subfolders), the same on every file system (NFC; two names that differ only by case are one
file on macOS and Windows), and labels that fit an entry's comment."""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .series import Entry, Series

TAGS: tuple[str, ...] = ("essential", "diagnostic", "optimization")
_NAME_RE = re.compile(r"[^\W][\w.+@=~-]*\Z")

_PLAIN = r"[A-Za-z0-9][A-Za-z0-9._+@=~-]*"
_PLAIN_RE = re.compile(_PLAIN)
_PLAIN_FOLDERS_RE = re.compile(rf"{_PLAIN}(?:/{_PLAIN})*")


def validate_name(name: str, folders: bool = False) -> str | None:
    """Why ``name`` is not a safe patch name, or None when it is.

    Letters and digits of any script are allowed (in NFC, the form macOS and most tools
    write), with ``._+@=~-``; with ``folders``, '/' separates subfolders of the series
    directory, as quilt allows (``debian/fix.patch``).
    """
    if ".." not in name and (_PLAIN_FOLDERS_RE if folders else _PLAIN_RE).fullmatch(name):
        return None  # the common case, decided without the checks below
    if not name:
        return "empty patch name"
    if "\\" in name or ("/" in name and not folders):
        return f"patch name '{name}' contains a path separator"
    if ".." in name:
        return f"patch name '{name}' contains '..'"
    if any(ch.isspace() for ch in name):
        return f"patch name '{name}' contains whitespace"
    if unicodedata.normalize("NFC", name) != name:
        return f"patch name '{name}' is not in Unicode NFC form (write it composed)"
    if not all(_NAME_RE.match(part) and part.isprintable() for part in name.split("/")):
        return (
            f"patch name '{name}' contains characters other than letters, digits and ._+@=~-"
            " (or a part of it starts with one of ._+@=~-)"
        )
    return None


def validate_label(label: str) -> str | None:
    """Why ``label`` cannot be a free label of an entry, or None when it can."""
    if not label.strip():
        return "empty label"
    if label in TAGS:
        return f"'{label}' is a tag, not a label (an entry has exactly one tag)"
    if any(ch in label for ch in "#,") or any(ch.isspace() for ch in label):
        return f"label '{label}' contains whitespace, '#' or ','"
    return None


def invisible_in(word: str) -> str | None:
    """Why a tag or label cannot be ``word``: it holds a control or invisible character."""
    bad = next((ch for ch in word if not ch.isprintable()), None)
    if bad is None:
        return None
    return f"tag or label {word!r} holds an invisible or control character (U+{ord(bad):04X})"


def named_files(text: str) -> tuple[str, ...]:
    """The patch files a series file's text names, read leniently (a line that does not parse
    still names its first word, if that is a safe name): what a snapshot of the series
    directory takes, besides the series file itself."""
    found: dict[str, None] = {}
    for raw in text.splitlines():
        words = raw.partition("#")[0].split()
        if words and validate_name(words[0], folders=True) is None:
            found[words[0]] = None
    return tuple(found)


def name_key(name: str) -> str:
    """What a case-insensitive file system (macOS, Windows) sees of a patch name: two names
    with the same key are one file there."""
    return unicodedata.normalize("NFC", name).casefold()


def case_clashes(series: Series) -> tuple[tuple[Entry, Entry], ...]:
    """Pairs of entries whose names differ only by case (or Unicode normalization): one file
    on the case-insensitive file systems of macOS and Windows."""
    first: dict[str, Entry] = {}
    clashes = []
    for e in series.entries:
        key = name_key(e.name)
        if key in first:
            clashes.append((first[key], e))
        else:
            first[key] = e
    return tuple(clashes)
