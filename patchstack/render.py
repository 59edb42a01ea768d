"""Render a `Review` (``review``) or one patch (``show``) as Markdown, HTML or text.

The output is made by jinja2 templates named ``review.md``, ``review.html``, ``review.txt``,
``show.md``, ``show.html`` and ``show.txt``. The package ships them in
``patchstack/templates/``; a project overrides any of them by putting a file of the same name
in ``.patchstack/templates/`` at the top of its work tree, or in the folder given with
``--templates DIR`` (searched first). An override may ``{% extends "patchstack/review.md" %}``
to reuse the shipped one. HTML templates are autoescaped, so a subject or diff line such as
``<script>`` shows as text; the Markdown templates escape with the ``md`` and ``html`` filters.

Markdown is meant for a pull request comment, which GitHub caps at 65,536 characters. When
the whole review is longer, the diffs are given out in order, within what fits: a diff that
does not fit whole is cut, the ones after it are left out, and the comment says so. This
module is the only one that imports jinja2, and only the ``review`` and ``show`` commands
import it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .review import PatchReview, Review, Version
from .safe_text import deep_visible, mark_style, warning

FORMATS = {"markdown": "md", "html": "html", "text": "txt"}
COMMENT_LIMIT = 65536
MARKER = "<!-- patchstack-review -->"


@dataclass(frozen=True)
class Shown:
    """A patch worth reading, and how much of its diff the output shows."""

    p: PatchReview
    lines: tuple[str, ...]
    cut: int = 0  # lines of the diff left out
    omitted: bool = False  # the whole diff was left out


# -- filters --------------------------------------------------------------------------------


def fence(lines: Sequence[str]) -> str:
    """A backtick fence longer than any run of backticks in ``lines`` (at least three)."""
    longest = max((len(run) for ln in lines for run in re.findall(r"`+", ln)), default=0)
    return "`" * max(3, longest + 1)


def md_inline(text: str) -> str:
    """Text safe inside a Markdown table cell or paragraph: no markup, no HTML, no '|'."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"([\\`*_\[\]|#~!])", r"\\\1", text)
    return text.replace("\n", " ")


def html_text(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def line_class(line: str) -> str:
    if line.startswith(("@@", "## ")):
        return "hunk"
    if line.startswith(("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file")):
        return "meta"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


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
        else:
            out.append(word)
    return out


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


_COLORS = {"add": "green", "del": "red", "hunk": "cyan", "meta": "yellow"}
_WORD_COLORS = {
    "added": "green",
    "dropped": "red",
    "changed": "yellow",
    "rebased": "blue",
    "unchanged": "bright_black",
}


# -- environment ----------------------------------------------------------------------------


def environment(template_dirs: Sequence[str] = (), color: bool = False):
    import click
    import jinja2

    shipped = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
    loader = jinja2.ChoiceLoader(
        [
            jinja2.FileSystemLoader([*template_dirs, shipped]),
            jinja2.PrefixLoader({"patchstack": jinja2.FileSystemLoader(shipped)}),
        ]
    )
    env = jinja2.Environment(
        loader=loader,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )

    def style(text: str, fg: str | None = None, bold: bool = False) -> str:
        return mark_style(click.style(text, fg=fg, bold=bold)) if color and (fg or bold) else text

    env.filters.update(
        fence=fence,
        md=md_inline,
        html=html_text,
        line_class=line_class,
        status_words=status_words,
        base_text=base_text,
        style=style,
        diff_style=lambda ln: style(ln, _COLORS.get(line_class(ln))),
        word_style=lambda w: style(w, _WORD_COLORS.get(w.split(" ")[0], "magenta")),
        pad=lambda text, width: text + " " * max(0, width - len(text)),
    )
    env.globals.update(marker=MARKER, limit=COMMENT_LIMIT)
    return env


# -- review ---------------------------------------------------------------------------------


def _shown(review: Review) -> list[Shown]:
    return [Shown(p, p.diff) for p in review.patches if p.worth_reading]


def _fit(items: list[Shown], budget: int) -> list[Shown]:
    """Give the diffs out in order within ``budget`` characters: cut one, leave out the rest."""
    out = []
    for item in items:
        cost = sum(len(ln) + 1 for ln in item.lines)
        if cost <= budget:
            out.append(item)
            budget -= cost
            continue
        keep: list[str] = []
        for ln in item.lines:
            if budget - (len(ln) + 1) < 0:
                break
            budget -= len(ln) + 1
            keep.append(ln)
        if len(keep) >= 10 and item.lines:
            out.append(replace(item, lines=tuple(keep), cut=len(item.lines) - len(keep)))
        else:
            out.append(replace(item, lines=(), cut=len(item.lines), omitted=bool(item.lines)))
        budget = 0
    return out


def render_review(
    review: Review,
    fmt: str,
    template_dirs: Sequence[str] = (),
    color: bool = False,
    limit: int = COMMENT_LIMIT,
) -> str:
    env = environment(template_dirs, color)
    template = env.get_template("review." + FORMATS[fmt])
    review, found = deep_visible(review)  # no control or bidirectional character gets through
    items = _shown(review)

    def render(shown: list[Shown]) -> str:
        return template.render(
            review=review,
            items=shown,
            truncated=any(s.cut or s.omitted for s in shown),
            unicode_warning=warning(found),
        )

    def size(text: str) -> int:  # in UTF-8 bytes: never over the limit however GitHub counts
        return len(text.encode("utf-8", "surrogateescape"))

    text = render(items)
    if fmt != "markdown" or size(text) < limit:
        return text
    # Over the comment limit: the skeleton (every diff left out) plus as many diff lines as fit.
    skeleton = size(render(_fit(items, 0)))
    budget = limit - skeleton - 200
    for _ in range(8):
        text = render(_fit(items, max(budget, 0)))
        if size(text) < limit:
            return text
        budget -= size(text) - limit + 500
    note = "\n\n**patchstack: the review was cut here to stay under the comment limit.**\n"
    cut = text.encode("utf-8", "surrogateescape")[: limit - len(note) - 1]
    return cut.decode("utf-8", "ignore") + note


def render_show(
    version: Version, fmt: str, template_dirs: Sequence[str] = (), color: bool = False
) -> str:
    env = environment(template_dirs, color)
    version, found = deep_visible(version)  # no control or bidirectional character gets through
    return env.get_template("show." + FORMATS[fmt]).render(
        v=version, unicode_warning=warning(found)
    )


def template_dirs(option: str | None, top: str | None) -> list[str]:
    """Where a project's overrides live: ``--templates DIR``, then ``.patchstack/templates``."""
    dirs = [option] if option else []
    if top and os.path.isdir(os.path.join(top, ".patchstack", "templates")):
        dirs.append(os.path.join(top, ".patchstack", "templates"))
    return dirs
