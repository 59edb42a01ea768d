"""Text helpers for the review and show templates: escaping, neutralising, markers, words.

Markdown is made for a GitHub comment, where text outside code is post-processed: ``@name``
notifies a user or team, and ``#123``, ``GH-123`` and ``owner/repo#123`` link to issues of
the repository the comment is posted in (a fork's own #123, not upstream's). Subjects and
descriptions come from upstream commits and other people's patches, so every such reference
outside a code block is *neutralised*: put in a code span (Markdown) or ``<code>`` (HTML in
Markdown), which GitHub leaves alone and a reader still reads as it was written.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ..model.marks import UPSTREAM
from .compare import PatchReview, Review
from .interdiff import effect

_REFERENCE = re.compile(
    r"(?<![\w@])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?"  # @user, @org/team
    r"|(?<![\w/])(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#[0-9]+\b"  # #123, owner/repo#123
    r"|\bGH-[0-9]+\b",
    re.IGNORECASE,
)


def fence(lines: Sequence[str]) -> str:
    """A backtick fence longer than any run of backticks in ``lines`` (at least three)."""
    longest = max((len(run) for ln in lines for run in re.findall(r"`+", ln)), default=0)
    return "`" * max(3, longest + 1)


def html_text(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def _md_escape(text: str) -> str:
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"([\\`*_\[\]|#~!])", r"\\\1", text)
    return text.replace("\n", " ")


def _split(text: str) -> Iterator[tuple[bool, str]]:
    """The text in pieces: (is a reference, piece)."""
    at = 0
    for m in _REFERENCE.finditer(text):
        if m.start() > at:
            yield False, text[at : m.start()]
        yield True, m.group(0)
        at = m.end()
    if at < len(text):
        yield False, text[at:]


def md_inline(text: str) -> str:
    """Text safe in a Markdown table cell or paragraph: no markup, no HTML, no '|', and every
    mention or issue reference in a code span."""
    return "".join(f"`{p}`" if ref else _md_escape(p) for ref, p in _split(text))


def md_html(text: str) -> str:
    """Text safe in HTML inside Markdown (``<summary>``): escaped, references in ``<code>``."""
    return "".join(
        f"<code>{html_text(p)}</code>" if ref else html_text(p) for ref, p in _split(text)
    )


def md_code(text: str) -> str:
    """A code span in a Markdown table cell holding ``text``, whatever backticks it has."""
    ticks = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text.replace('|', chr(92) + '|')}{pad}{ticks}"


def anchor(review: Review, p: PatchReview) -> str:
    """A stable, unique id for the section of ``p``: its place in the review and its name."""
    index = next(i for i, q in enumerate(review.patches, 1) if q is p)
    return f"ps-{index}-" + re.sub(r"[^a-z0-9]+", "-", p.name.lower()).strip("-")


def line_class(line: str) -> str:
    if line.startswith(("@@", "## ")):
        return "hunk"
    if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file")):
        return "meta"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


_MARK_CLASS = {"+": "add", "-": "del"}


def interdiff_html(line: str) -> str:
    """One interdiff line as escaped HTML: the outer and the inner marker each in the colour
    of what it says, the line's background the colour of its net effect."""
    if line.startswith("@@"):
        return f'<span class="hunk">{html_text(line)}</span>'
    outer, inner, rest = line[:1], line[1:2], line[2:]
    net = _MARK_CLASS.get(effect(line), "ctx")
    outer_cls = _MARK_CLASS.get(outer, "ctx")
    inner_cls = _MARK_CLASS.get(inner, "hunk" if inner in "@#" else "ctx")
    return (
        f'<span class="net-{net}"><span class="m-{outer_cls}">{html_text(outer)}</span>'
        f'<span class="m-{inner_cls}">{html_text(inner + rest)}</span></span>'
    )


def status_words(p: PatchReview) -> list[str]:
    """The status words with their details: ``moved (3 → 5)``, ``retagged (a → b)``."""
    out = []
    for word in p.words:
        if word == "renamed" and p.old:
            out.append(f"renamed (from {p.old.name})")
        elif word == "moved" and p.old and p.new:
            out.append(f"moved ({p.old.position} → {p.new.position})")
        elif word == "retagged" and p.old and p.new:
            out.append(f"retagged ({p.old.tags} → {p.new.tags})")
        elif word == "description":
            out.append("description changed")
        elif word == "probe" and p.probe_change:
            old, new = p.probe_change
            what = "set" if old is None else "removed" if new is None else "changed"
            out.append(f"probe {what}")
        elif word == p.state:
            out.append(_state_text(p))
        elif word in ("added", "dropped") and (p.new_mark or p.old_mark):
            mark = p.new_mark or p.old_mark
            assert mark is not None
            out.append(f"{word} ({'marked' if p.new_mark else 'was'} {mark.kind}: {mark.text})")
        else:
            out.append(word)
    return out


def _state_text(p: PatchReview) -> str:
    old, new = p.old_mark, p.new_mark
    if old and new and old.kind == new.kind:
        return f"{p.state} (mark changed: {old.text} → {new.text})"
    if new is None:
        return f"{p.state} (was {old.kind})" if old else str(p.state)
    if new.kind == UPSTREAM and p.state == UPSTREAM:
        return f"{p.state} ({f'in {new.evidence[:12]}' if new.evidence else 'commit unknown'})"
    if new.root:
        return f"{p.state} ({new.text})"
    return str(p.state)


STATE_HEADINGS = {
    "deferred": "Left out of the stack: they conflict on the base (a knock-on waits for the"
    " patch it names); 'patchstack push NAME' brings one back",
    "upstream": "The base holds their change: left unapplied, kept until '--drop-merged'",
    "no-op": "They change nothing while the patch they name is missing",
    "resolved to nothing": "A conflict resolved by taking upstream's side: nothing of the patch"
    " is left, the base holds it (see the recorded resolutions)",
    "brought back": "A mark removed: applied again",
}


def state_heading(word: str) -> str:
    """What a state's section says of its patches."""
    return STATE_HEADINGS.get(word, "")


def mark_text(p: PatchReview) -> str:
    """The mark a state's section shows: the new one, or the one removed."""
    mark = p.new_mark or p.old_mark
    if mark is None:
        return ""
    text = f"commit {mark.commit[:12]}"
    if mark.kind == UPSTREAM:
        text = mark.text + f"; its change: {text}"
    elif mark.root:
        text += f", {mark.text}"
    if p.old_mark and p.new_mark and p.old_mark != p.new_mark:
        text = f"{text} (was {p.old_mark.kind}: {p.old_mark.text})"
    elif p.new_mark is None:
        text = f"was {mark.kind}: {text}"
    return text


def base_text(review: Review) -> str:
    b = review.base
    short = (b.new or b.old or "none")[:12]
    if not b.moved:
        return f"unchanged, {short}" + (f" ({b.new_ref})" if b.new_ref else "")
    if not (b.old and b.new):
        return f"set to {b.new[:12]}" if b.new else f"none (was {(b.old or '')[:12]})"
    text = f"moved from {b.old[:12]} to {b.new[:12]}"
    counts = []
    if b.ahead is not None:
        counts.append(f"{b.ahead} upstream commit{'s' if b.ahead != 1 else ''}")
    if b.behind:
        counts.append(f"{b.behind} no longer in the base")
    return text + (f" ({', '.join(counts)})" if counts else "")


def counts_text(counts: Sequence[tuple[str, int]]) -> str:
    """``585 unchanged, 14 rebased`` from (word, count) pairs."""
    return ", ".join(f"{n} {word}" for word, n in counts)


HITS_SHOWN = 20  # the rows of the picture of the base's move


def hit_rows(review: Review) -> tuple[list[tuple[str, str, list[tuple[str, str]]]], int]:
    """Which upstream commits of the base's move changed which patches' files, the commits
    touching most patches first (at most `HITS_SHOWN`), each patch with its first status word
    in this review; and how many commits were left out."""
    words = {p.name: p.words[0] if p.words else "" for p in review.patches}
    ranked = sorted(review.base.hits, key=lambda h: -len(h.patches))
    rows = [
        (h.oid[:12], h.subject, [(n, words.get(n, "")) for n in h.patches])
        for h in ranked[:HITS_SHOWN]
    ]
    return rows, max(0, len(ranked) - HITS_SHOWN)
