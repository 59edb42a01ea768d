"""``upstream NAME STATE [DETAIL]``: where a patch stands upstream, kept in its header; and
what every patch's header says, for ``status``, ``series`` and ``check --require-status``.

The command writes DEP-3's fields (`model.fields`): ``submitted URL`` sets ``Forwarded: URL``,
``applied COMMIT`` sets ``Applied-Upstream: commit:<id>``, ``not-needed REASON`` sets
``Forwarded: not-needed (REASON)``, ``pending`` sets ``Forwarded: no``; each also sets
``Last-Update:`` to today, and a Yocto ``Upstream-Status:`` or SUSE ``Patch-mainline:`` the
patch already carries is made to say the same, so no field contradicts another. It is an edit
of the patch's message (`edit.rewrite_message`): one journalled, undoable change.

``Applied-Upstream: COMMIT`` is checked against the series base: is that commit in the base's
history (so the patch is there already), or not yet, or unknown to this repository?

`applied_upstream` is the message change that records an upstream commit: ``refresh``, once
it has the evidence that a patch went upstream, can put it in the plan of the files it writes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from typing import TYPE_CHECKING

from ..checkout import Checkout, PatchSummary
from ..errors import PatchstackError
from ..git import Git
from ..model import fields
from ..model.fields import Upstream
from ..model.series import Series

if TYPE_CHECKING:
    from ..model.patchfile import Patch
    from .edit import EditResult

SETTABLE = ("submitted", "applied", "not-needed", "pending")
IN_BASE, NOT_IN_BASE, UNKNOWN = "in-base", "not-in-base", "unknown"
# The base contains the commit the header names, but no refresh proved that the base holds the
# patch's change (no '# upstream:' mark): upstream may have reverted or changed it since.
IN_BASE_UNPROVEN = "in-base-unproven"


@dataclass(frozen=True)
class Standing:
    """What a patch's header says: its upstream status and its probe."""

    name: str
    tag: str
    upstream: Upstream
    probe: str | None
    applied_check: str | None = None  # IN_BASE(_UNPROVEN), NOT_IN_BASE, UNKNOWN; None: none named


def day_of(git_date: str) -> date:
    """The calendar day of a git date ("<epoch> <+hhmm>") in its own time zone."""
    epoch, _, tz = git_date.partition(" ")
    sign = -1 if tz.startswith("-") else 1
    minutes = int(tz[1:3] or 0) * 60 + int(tz[3:5] or 0)
    zone = timezone(sign * timedelta(minutes=minutes))
    return datetime.fromtimestamp(int(epoch), zone).date()


def changes_for(
    state: str, detail: str, found: Sequence[fields.Field], today: date
) -> list[tuple[str, str | None]]:
    """The field changes that say ``state`` (``detail``: the URL, commit or reason)."""
    has = {f.key.lower() for f in found}
    out: list[tuple[str, str | None]] = []
    yocto = mainline = None
    if state == "submitted":
        out = [(fields.FORWARDED, detail), (fields.APPLIED, None)]
        yocto, mainline = f"Submitted [{detail}]", f"Submitted, {detail}"
    elif state == "applied":
        out = [(fields.APPLIED, detail)]
        yocto = f"Backport [{detail}]"
    elif state == "not-needed":
        out = [(fields.FORWARDED, f"not-needed ({detail})"), (fields.APPLIED, None)]
        yocto, mainline = f"Inappropriate [{detail}]", f"Never, {detail}"
    elif state == "pending":
        out = [(fields.FORWARDED, "no"), (fields.APPLIED, None)]
        yocto, mainline = "Pending", "No"
    if yocto and "upstream-status" in has:
        out.append(("Upstream-Status", yocto))
    if mainline and "patch-mainline" in has:
        out.append(("Patch-mainline", mainline))
    out.append((fields.LAST_UPDATE, today.isoformat()))
    return out


def set_upstream(ws: Checkout, name_text: str, state: str, detail: str | None) -> EditResult:
    if state not in SETTABLE:
        raise PatchstackError(
            f"unknown upstream state '{state}'", "give one of: " + ", ".join(SETTABLE)
        )
    needs = {"submitted": "URL", "applied": "COMMIT", "not-needed": "REASON"}
    if state in needs and not (detail or "").strip():
        raise PatchstackError(
            f"'{state}' needs a {needs[state]}",
            f"e.g. patchstack upstream {name_text} {state} {_EXAMPLES[state]}",
        )
    if state == "pending" and detail:
        raise PatchstackError("'pending' takes nothing after it", "drop the extra argument")
    text = _checked_detail(state, detail or "")
    if state == "applied":
        text = _applied_value(ws.git, text)
    today = day_of(ws.git.now())

    def compose(current: str, patch: Patch) -> str:
        found = fields.read(current.partition("\n\n")[2])
        return fields.write(current, changes_for(state, text, found, today))

    from .edit import rewrite_message  # (a publish: not loaded for a status)

    return rewrite_message(ws, name_text, compose, None, "upstream")


_EXAMPLES = {
    "submitted": "https://github.com/ORG/REPO/pull/123",
    "applied": "0be30d4",
    "not-needed": "'fork-only branding'",
}


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_URL = re.compile(r"https?://[^\s<>\"]+", re.IGNORECASE)
_MAIL = re.compile(r"<?[^\s@<>]+@[^\s@<>]+>?")


def _checked_detail(state: str, detail: str) -> str:
    """The detail as one line, refused when a header must not hold it: a control character
    (it would reach every terminal that shows the header), or a link other than http(s)
    (``javascript:``, ``data:``: a review renders the field)."""
    bad = next((c for c in detail if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise PatchstackError(
            f"the {state} detail holds a control character ({bad!r})",
            "give it as one line of plain text",
        )
    text = " ".join(detail.split())
    scheme = _SCHEME.match(text)
    if state == "submitted" and not (_URL.fullmatch(text) or _MAIL.fullmatch(text)):
        raise PatchstackError(
            f"'submitted' takes an http(s) URL or a mail address, not {text!r}",
            f"e.g. patchstack upstream NAME submitted {_EXAMPLES['submitted']}",
        )
    if (
        state == "applied"
        and scheme
        and scheme.group(1).lower() not in ("http", "https", "commit")
        and not _URL.fullmatch(text)
    ):
        raise PatchstackError(
            f"'applied' takes a commit, an http(s) URL or a version, not {text!r}",
            f"e.g. patchstack upstream NAME applied {_EXAMPLES['applied']}",
        )
    return text


def _applied_value(git: Git, text: str) -> str:
    """``commit:<full id>`` for a commit of this repository; a URL or a version as given; a
    commit id that is not here is refused (fetch it first, or give its URL)."""
    found = git.rev_parse(text)
    if found is not None:
        return f"commit:{found}"
    if re.fullmatch(r"[0-9a-fA-F]{7,64}", text):
        raise PatchstackError(
            f"unknown commit '{text}'",
            "fetch the upstream that has it first (git fetch), or give its URL",
        )
    return text


def applied_upstream(text: str, commit: str, today: date) -> str:
    """The message ``text`` recording that the patch went upstream as ``commit`` (the hook
    for ``refresh``'s evidence that a patch is upstream)."""
    found = fields.read(text.partition("\n\n")[2])
    return fields.write(text, changes_for("applied", f"commit:{commit}", found, today))


def standings(
    ws: Checkout,
    series: Series,
    base: str | None,
    summaries: Mapping[str, PatchSummary] | None = None,
) -> list[Standing]:
    """What each patch's header says, with ``Applied-Upstream`` checked against ``base``;
    ``summaries``: the patch files' as the caller read them (`Checkout.proven_bytes`), by
    name, so that a command reads each file once."""
    out = []
    git = ws.git
    for entry in series.entries:
        summary = summaries[entry.name] if summaries is not None else ws.proven_bytes(entry)[1]
        found = fields.read(summary.description, summary.fields)
        up = fields.upstream_of(found)
        check = None
        if up.commit is not None:
            commit = git.rev_parse(up.commit)
            if commit is None:
                check = UNKNOWN
            elif base and not git.is_ancestor(commit, base):
                check = NOT_IN_BASE
            elif base:  # "upstream already" only where a refresh proved the base holds it
                check = IN_BASE if entry.name in series.upstream else IN_BASE_UNPROVEN
        out.append(Standing(entry.name, entry.tag, up, fields.probe_of(found), check))
    return out


def today(ws: Checkout) -> date:
    return day_of(ws.git.now())
