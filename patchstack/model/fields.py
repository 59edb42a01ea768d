"""A patch's fields: its probe, and where it stands upstream (DEP-3 and its cousins).

**Where patchstack writes them.** As the last paragraph of the patch's description, one
``Key: value`` line each, the way git writes trailers::

    Subject: [PATCH] communicator: enable the fused all-reduce on SM120

    The fork runs on eight RTX PRO 6000 Blackwell cards ...

    Patchstack-Probe: python3 -c "import srt.layers.communicator as c; ..."
    Forwarded: https://github.com/example/srt/pull/812
    Last-Update: 2026-02-12
    ---
     srt/layers/communicator.py | 2 +-

Being part of the commit message, the paragraph goes wherever the patch goes, byte for byte:
``format-patch`` writes it again (``refresh``, ``edit``), ``git am`` keeps it (``export
mbox``), quilt reads nothing above the diff, and ``git interpret-trailers`` reads it as
trailers. DEP-3 allows its fields in the free text of a ``format-patch`` style header.

**Where they are read.** That paragraph, any other paragraph of the description made only of
field lines (Yocto's ``Upstream-Status:`` often stands on its own above ``Signed-off-by:``),
and the header block at the top of the file (a DEP-3 quilt header; SUSE's
``Patch-mainline:`` among the mail headers), which `patchfile` reads. Keys are
case-insensitive; the last one of a key wins, as git reads trailers.

Pure: text in, values and text out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date

from ..errors import PatchstackError

PROBE = "Patchstack-Probe"
FORWARDED = "Forwarded"
APPLIED = "Applied-Upstream"
LAST_UPDATE = "Last-Update"
UPSTREAM_KEYS = (
    FORWARDED,
    APPLIED,
    "Bug",
    "Origin",
    "Patch-mainline",
    "Git-commit",
    "Upstream-Status",
    LAST_UPDATE,
)
_KNOWN = {k.lower(): k for k in (PROBE, *UPSTREAM_KEYS)}
_FIELD_RE = re.compile(r"([A-Za-z][A-Za-z0-9-]*):(?:[ \t]+(.*?))?[ \t]*\Z")
_COMMIT_RE = re.compile(r"(?:\bcommit[:/]\s*|^)([0-9a-f]{7,64})\b", re.IGNORECASE)

# The states of a patch upstream, in the order a summary lists them.
SUBMITTED, PENDING, APPLIED_STATE, NOT_NEEDED, REJECTED, NONE = (
    "submitted",
    "pending",
    "applied",
    "not-needed",
    "rejected",
    "none",
)
STATES = (SUBMITTED, PENDING, APPLIED_STATE, NOT_NEEDED, REJECTED, NONE)


def known(key: str) -> bool:
    return key.lower() in _KNOWN or key.lower().startswith("bug-")


@dataclass(frozen=True)
class Field:
    key: str  # as written
    value: str  # continuation lines joined by one space

    def named(self, key: str) -> bool:
        return self.key.lower() == key.lower()


def _is_field_paragraph(lines: Sequence[str]) -> bool:
    return bool(lines) and all(
        _FIELD_RE.match(ln) if i == 0 else (ln[:1] in (" ", "\t") or _FIELD_RE.match(ln))
        for i, ln in enumerate(lines)
    )


def _paragraphs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) of each run of non-blank lines."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j].strip():
            j += 1
        out.append((i, j))
        i = j
    return out


def _fields_in(lines: Sequence[str]) -> list[Field]:
    found: list[Field] = []
    for ln in lines:
        m = _FIELD_RE.match(ln)
        if m and ln[:1] not in (" ", "\t"):
            found.append(Field(m.group(1), m.group(2) or ""))
        elif found:
            last = found[-1]
            found[-1] = Field(last.key, (last.value + " " + ln.strip()).strip())
    return found


def read(description: str, header: Iterable[tuple[str, str]] = ()) -> tuple[Field, ...]:
    """The known fields of a patch: those of its header block (``Patch.fields``), then those
    of the field paragraphs of its description, in file order."""
    found = [Field(k, " ".join(v.split())) for k, v in header if known(k)]
    lines = description.split("\n")
    for start, end in _paragraphs(lines):
        if _is_field_paragraph(lines[start:end]):
            found += [f for f in _fields_in(lines[start:end]) if known(f.key)]
    return tuple(found)


def value(fields: Iterable[Field], key: str) -> str | None:
    """The last value of ``key``, or None."""
    found = None
    for f in fields:
        if f.named(key):
            found = f.value
    return found


def probe_of(fields: Iterable[Field]) -> str | None:
    return value(fields, PROBE) or None


def clean_probe(probe: str | None) -> str | None:
    """A probe as ``--probe`` gives it: one line, stripped ("": none)."""
    if probe is not None and "\n" in probe.strip():
        raise PatchstackError(
            "--probe: a probe is one line", "join the commands with '&&', or run a script"
        )
    return probe.strip() if probe is not None else None


# -- where a patch stands upstream -----------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    state: str  # one of STATES
    detail: str = ""  # the URL, commit, version or reason, as written
    field: str | None = None  # the field the state was read from
    commit: str | None = None  # the upstream commit it was applied as, when one is named
    updated: date | None = None  # Last-Update
    bug: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "state": self.state,
            "detail": self.detail,
            "field": self.field,
            "commit": self.commit,
            "updated": self.updated.isoformat() if self.updated else None,
            "bug": self.bug,
        }


def _bracket(text: str) -> tuple[str, str]:
    """Yocto's ``Word [detail]`` as (word, detail)."""
    m = re.match(r"\s*([A-Za-z-]+)\s*(?:\[(.*)\])?\s*(.*)\Z", text)
    if not m:
        return text.strip(), ""
    return m.group(1), (m.group(2) or m.group(3) or "").strip()


def _commit_in(text: str) -> str | None:
    m = _COMMIT_RE.search(text)
    return m.group(1).lower() if m else None


def _forwarded(text: str) -> tuple[str, str]:
    word, _, rest = text.strip().partition(" ")
    states = {"no": PENDING, "not-needed": NOT_NEEDED, "yes": SUBMITTED}
    state = states.get(word.lower().rstrip(","))
    if state is None:
        return SUBMITTED, text  # a URL, a mail address
    return state, rest.strip(" ,()")


def _mainline(text: str, fields: Sequence[Field]) -> tuple[str, str, str | None]:
    word, _, rest = text.partition(",")
    w = word.strip().lower()
    if re.match(r"v?\d", w):
        return APPLIED_STATE, text, _commit_in(value(fields, "Git-commit") or "")
    if w.startswith(("submitted", "queued")):
        return SUBMITTED, rest.strip() or text, None
    if w.startswith("never"):
        return NOT_NEEDED, rest.strip(), None
    return PENDING, rest.strip(), None


_YOCTO = {
    "pending": PENDING,
    "submitted": SUBMITTED,
    "accepted": APPLIED_STATE,
    "backport": APPLIED_STATE,
    "inappropriate": NOT_NEEDED,
    "inactive-upstream": NOT_NEEDED,
    "denied": REJECTED,
}


def upstream_of(fields: Sequence[Field]) -> Upstream:
    """Where a patch stands, from the first field that says: ``Applied-Upstream``, then
    ``Forwarded``, SUSE's ``Patch-mainline``, Yocto's ``Upstream-Status``, and DEP-3's
    ``Origin: upstream`` or ``backport`` (taken from upstream)."""
    updated = _date(value(fields, LAST_UPDATE))
    bug = value(fields, "Bug") or next(
        (f.value for f in fields if f.key.lower()[:4] == "bug-"), None
    )

    def make(state: str, detail: str, key: str, commit: str | None = None) -> Upstream:
        return Upstream(state, detail, key, commit, updated, bug)

    applied = value(fields, APPLIED)
    if applied:
        return make(APPLIED_STATE, applied, APPLIED, _commit_in(applied))
    forwarded = value(fields, FORWARDED)
    if forwarded:
        state, detail = _forwarded(forwarded)
        return make(state, detail, FORWARDED)
    mainline = value(fields, "Patch-mainline")
    if mainline:
        state, detail, commit = _mainline(mainline, fields)
        return make(state, detail, "Patch-mainline", commit)
    yocto = value(fields, "Upstream-Status")
    if yocto:
        word, detail = _bracket(yocto)
        state = _YOCTO.get(word.lower(), PENDING)
        commit = _commit_in(detail) if state == APPLIED_STATE else None
        return make(state, detail, "Upstream-Status", commit)
    origin = value(fields, "Origin")
    if origin and origin.split(",")[0].strip().lower() in ("upstream", "backport"):
        detail = origin.partition(",")[2].strip()
        return make(APPLIED_STATE, detail, "Origin", _commit_in(detail))
    return Upstream(NONE, "", None, None, updated, bug)


def _date(text: str | None) -> date | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text.strip()[:10])
    except ValueError:
        return None


def summary(states: Iterable[Upstream], today: date) -> str:
    """ "3 submitted (oldest 41 days), 2 never sent, 1 applied upstream, 1 with no status"."""
    groups: dict[str, list[Upstream]] = {}
    for u in states:
        groups.setdefault(u.state, []).append(u)
    words = {
        SUBMITTED: "submitted",
        PENDING: "never sent",
        APPLIED_STATE: "applied upstream",
        NOT_NEEDED: "not needed upstream",
        REJECTED: "rejected upstream",
        NONE: "with no status",
    }
    parts = []
    for state in STATES:
        if state not in groups:
            continue
        text = f"{len(groups[state])} {words[state]}"
        dates = [u.updated for u in groups[state] if u.updated]
        if state == SUBMITTED and dates:
            days = (today - min(dates)).days
            text += f" (oldest {days} day{'s' if days != 1 else ''})"
        parts.append(text)
    return ", ".join(parts)


# -- writing ---------------------------------------------------------------------------------


def write(message: str, changes: Sequence[tuple[str, str | None]]) -> str:
    """``message`` (a subject, a blank line, the description) with each (key, value) of
    ``changes`` set (None: removed). A key already there is replaced where it stands, its
    other occurrences removed; a new one goes at the end of the last paragraph when that is a
    field paragraph, else into a new last paragraph. Every other byte is kept."""
    lines = message.rstrip("\n").split("\n")
    for key, val in changes:
        if val is not None and ("\n" in val or not val.strip()):
            raise ValueError(f"a field value is one non-empty line: {val!r}")
        lines = _write_one(lines, key, val)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) + "\n"


def _write_one(lines: list[str], key: str, val: str | None) -> list[str]:
    spans = [(s, e) for s, e in _paragraphs(lines)[1:] if _is_field_paragraph(lines[s:e])]
    hits: list[tuple[int, int]] = []  # [start, end) of each line of key (with continuations)
    for s, e in spans:
        i = s
        while i < e:
            j = i + 1
            while j < e and lines[j][:1] in (" ", "\t"):
                j += 1
            m = _FIELD_RE.match(lines[i])
            if m and m.group(1).lower() == key.lower():
                hits.append((i, j))
            i = j
    new = [f"{key}: {val}"] if val is not None else []
    if hits:
        out = list(lines)
        for n, (i, j) in enumerate(reversed(hits)):
            put = new if n == len(hits) - 1 else []
            out[i:j] = put
            if not put and _emptied(out, i):
                del out[i - 1]  # the paragraph is gone: so is the blank line before it
        return out
    if val is None:
        return lines
    last = _paragraphs(lines)
    if len(last) > 1 and spans and spans[-1] == last[-1]:
        end = last[-1][1]
        return lines[:end] + new + lines[end:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return [*lines, "", *new]


def _emptied(out: list[str], i: int) -> bool:
    """Whether the lines removed at ``i`` were a whole paragraph."""
    before = i > 0 and not out[i - 1].strip()
    return before and (i >= len(out) or not out[i].strip())
