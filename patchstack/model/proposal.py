"""The resolver protocol: what ``refresh --resolver CMD`` hands a command about a conflict, what
it takes back, and when a proposal is refused. Pure: values in, values out.

The command runs with its working folder a scratch folder (`SCRATCH` below) holding:

- ``packet.json``: the packet (schema ``patchstack/schemas/resolver.json``), also on the
  command's standard input and the path given as its last argument;
- ``base/PATH``, ``ours/PATH``, ``theirs/PATH``: the three versions of each conflicted file
  (the patch's base, what the new base and the patches before it hold, what the patch wants),
  where that side has the file (a structured merger such as Mergiraf takes these three);
- ``result/PATH``: every file the proposal may change (the patch's files and the files its
  merge wrote), as the merge left them, conflict markers included.

It answers by editing ``result/`` in place (a file removed from there: resolved by deleting
it), or by printing a JSON answer on standard output, ``{"version": 1, "files": {PATH: TEXT or
null}}`` (null: deleted; a file it does not name keeps the merge's version). Exit status 0
is a proposal; any other status, a refusal to propose. A proposal is refused (`refusal`) when
it changes a file it may not, leaves a conflict marker, or changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .conflict import marker_lines

VERSION = 1
CONFIG = "patchstack.resolver"  # the user's or the repository's git configuration only
CONFIG_SECONDS = "patchstack.resolverTimeout"
DEFAULT_SECONDS = 300.0
PACKET = "packet.json"
SIDES = ("base", "ours", "theirs")
RESULT = "result"
ANSWER_LIMIT = 64 << 20  # bytes of standard output read as an answer
CULPRITS_SHOWN = 5  # upstream commits whose diff a packet holds, per file


@dataclass(frozen=True)
class Proposal:
    """What became of one proposal: accepted (recorded as ``resolved by COMMAND``) or
    refused, and why."""

    patch: str
    command: str
    accepted: bool
    why: str = ""  # refused: why; accepted: what verified it

    def to_json(self) -> dict[str, Any]:
        return {
            "patch": self.patch,
            "command": self.command,
            "accepted": self.accepted,
            "why": self.why,
        }


def text_of(data: bytes | None) -> str | None:
    """A file's bytes as packet text, or None (absent, or not UTF-8: the folders hold it)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def answer(stdout: bytes) -> dict[str, bytes | None] | None:
    """The files a JSON answer on standard output names (None for a deleted one), or None
    when the command printed no answer (then ``result/`` holds the proposal). `ValueError`
    says why printed bytes are not an answer."""
    text = stdout.strip()
    if not text.startswith(b"{"):
        return None
    try:
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"its answer on standard output is not JSON ({exc})") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if doc.get("version") != VERSION or not isinstance(files, dict):
        raise ValueError(f'its answer is not {{"version": {VERSION}, "files": {{...}}}}')
    found: dict[str, bytes | None] = {}
    for path, value in files.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"its answer for {path} is neither text nor null")
        found[path] = value.encode("utf-8", "surrogateescape") if value is not None else None
    return found


def refusal(
    proposed: Mapping[str, bytes | None],
    merged: Mapping[str, bytes | None],
    allowed: Collection[str],
) -> str | None:
    """Why a proposal (path -> bytes, None: deleted) is refused, or None: it changes only
    ``allowed`` files, leaves no conflict marker in them (a file it does not name keeps what
    the merge left there, ``merged``), and changes something."""
    foreign = sorted(p for p in proposed if p not in allowed)
    if foreign:
        return (
            f"it changes {', '.join(foreign[:5])}, not one of the patch's files"
            f" ({', '.join(sorted(allowed)[:5])})"
        )
    final = {**merged, **proposed}
    left = [
        f"{path}:{line}"
        for path, data in sorted(final.items())
        if data is not None
        for line in marker_lines(data.decode("utf-8", "surrogateescape"))[:3]
    ]
    if left:
        return "it left conflict markers in " + ", ".join(left[:5])
    if all(merged.get(p) == data for p, data in proposed.items()):
        return "it proposed nothing (every file as the merge left it)"
    return None


def packet(
    patch: Mapping[str, Any],
    files: Sequence[Mapping[str, Any]],
    hunks: Sequence[Mapping[str, Any]],
    culprits: Sequence[Mapping[str, Any]],
    limits: Mapping[str, Any],
    scratch: str,
) -> dict[str, Any]:
    """The packet a resolver reads (see ``patchstack/schemas/resolver.json``)."""
    return {
        "version": VERSION,
        "patch": dict(patch),
        "files": [dict(f) for f in files],
        "hunks": [dict(h) for h in hunks],
        "culprits": [dict(c) for c in culprits],
        "limits": dict(limits),
        "scratch": scratch,
        "answer": {
            "folder": RESULT,
            "json": {"version": VERSION, "files": "{PATH: TEXT or null}"},
        },
    }
