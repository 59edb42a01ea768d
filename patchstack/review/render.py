"""Render a `Review` (``review``) or one patch (``show``) as Markdown, HTML or text.

The output is made by jinja2 templates named ``review.md``, ``review.html``, ``review.txt``,
``show.md``, ``show.html`` and ``show.txt``. The package ships them in
``patchstack/templates/``; a project overrides any of them by putting a file of the same name
in ``.patchstack/templates/`` at the top of its work tree, or in the folder given with
``--templates DIR`` (searched first). An override may ``{% extends "patchstack/review.md" %}``
to reuse the shipped one. A pull request can bring its own templates, so they run in jinja2's
immutable sandbox (no attribute starting with ``_``, no method that changes a value) and a
template file that is a link out of its folder is refused. HTML templates are autoescaped;
the Markdown templates escape with the ``md``, ``md_html`` and ``code`` filters, which also
neutralise ``@mentions`` and issue references (see `markup`).

Markdown is meant for a pull request comment, which GitHub caps at 65,536 characters. When
the whole review is longer it is shortened from its least important end, never inside a
table row or a fenced block, each step only when the one before was not enough:

1. the rows of patches that are only ``unchanged`` or only ``rebased`` collapse into one
   counted line, and the collapsed sections of rebased patches go;
2. the largest diffs move out, largest first: first the full new versions of changed
   patches, then the code of dropped patches, then the recorded resolutions' hunks, then the
   graph, then the diffs of added patches and the interdiffs of changed ones; each such patch
   keeps its section, which says where the whole review is;
3. only then whole sections, then the lists of the marks' sections (each keeps its count),
   and last table rows, are left out from the end, counted.

This module is the only one that imports jinja2, and only the commands that render import it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError, RefusedError
from ..safe_text import deep_visible, mark_style, warning
from . import graph as graphs
from . import markup
from .compare import PatchReview, Review, Version
from .interdiff import markdown_line

FORMATS = {"markdown": "md", "html": "html", "text": "txt"}
COMMENT_LIMIT = 65536
MARKER = "<!-- patchstack-review -->"
GRAPH_MAX = 40  # nodes; a larger graph is left to 'patchstack graph'


@dataclass(frozen=True)
class Shown:
    """A patch with a section in the review, and how much of it the output shows."""

    p: PatchReview
    lines: tuple[str, ...]  # the interdiff (changed), the diff (added, dropped), the context
    # (rebased)
    anchor: str = ""
    full: tuple[str, ...] = ()  # a changed patch: its whole new version, collapsed
    cut: int = 0  # lines of the diff left out
    omitted: bool = False  # the diff was left out (moved to the full review)
    full_omitted: bool = False  # the whole new version was left out

    def cost(self, full: bool) -> int:
        lines = self.full if full else self.lines
        return sum(len(ln.encode("utf-8", "surrogateescape")) + 3 for ln in lines) + 80


@dataclass(frozen=True)
class Plan:
    """What one rendering shows."""

    rows: tuple[PatchReview, ...]
    items: tuple[Shown, ...]
    quiet: tuple[tuple[str, int], ...] = ()  # collapsed rows: (word, count)
    graph: bool = True
    rows_left: int = 0  # table rows left out from the end
    items_left: int = 0  # sections left out from the end
    states: bool = True  # the sections of the marks' changes list their patches
    resolution_diffs: bool = True  # the recorded resolutions show their hunks

    @property
    def truncated(self) -> bool:
        return bool(
            self.rows_left
            or self.items_left
            or not self.graph
            or not self.states
            or not self.resolution_diffs
            or any(s.omitted or s.full_omitted for s in self.items)
        )


# -- environment ----------------------------------------------------------------------------


def environment(
    template_dirs: Sequence[str] = (),
    color: bool = False,
    revision_templates: Mapping[str, str] | None = None,
) -> Any:
    """The sandboxed environment: ``template_dirs`` first, then the templates read from a
    revision (``--templates-from``), then the shipped ones."""
    import click
    import jinja2
    import markupsafe
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    shipped = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")

    class Loader(jinja2.FileSystemLoader):
        """A folder of templates whose files must really be in that folder."""

        def get_source(self, environment, template):  # type: ignore[no-untyped-def]
            source, filename, uptodate = super().get_source(environment, template)
            real = os.path.realpath(filename)
            roots = [os.path.realpath(d) + os.sep for d in self.searchpath]
            if not any(real.startswith(r) for r in roots):
                raise RefusedError(
                    f"{filename}: the template is a link out of its folder",
                    "templates are read from the repository; replace the link by a file",
                )
            return source, filename, uptodate

    loader = jinja2.ChoiceLoader(
        [
            Loader(list(template_dirs)),
            jinja2.DictLoader(dict(revision_templates or {})),
            Loader(shipped),
            jinja2.PrefixLoader({"patchstack": Loader(shipped)}),
        ]
    )
    env = ImmutableSandboxedEnvironment(
        loader=loader,
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default=False),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )

    def style(text: str, fg: str | None = None, bold: bool = False, dim: bool = False) -> str:
        if not (color and (fg or bold or dim)):
            return text
        return mark_style(click.style(text, fg=fg, bold=bold or None, dim=dim or None))

    def interdiff_style(line: str) -> str:
        if line.startswith("@@"):
            return style(line, "cyan")
        outer, inner, rest = line[:1], line[1:2], line[2:]
        colour = {"+": "green", "-": "red"}
        inner_fg = colour.get(inner, "cyan" if inner in "@#" else None)
        return style(outer, colour.get(outer), bold=outer != " ") + style(
            inner + rest, inner_fg, dim=outer == " "
        )

    env.filters.update(
        fence=markup.fence,
        md=markup.md_inline,
        md_html=markup.md_html,
        code=markup.md_code,
        html=markup.html_text,
        line_class=markup.line_class,
        status_words=markup.status_words,
        base_text=markup.base_text,
        state_heading=markup.state_heading,
        mark_text=markup.mark_text,
        counts=markup.counts_text,
        style=style,
        diff_style=lambda ln: style(ln, _COLORS.get(markup.line_class(ln))),
        word_style=lambda w: style(w, _WORD_COLORS.get(w.split(" ")[0], "magenta")),
        interdiff_md=markdown_line,
        interdiff_html=lambda ln: markupsafe.Markup(markup.interdiff_html(ln)),
        interdiff_style=interdiff_style,
        pad=lambda text, width: text + " " * max(0, width - len(text)),
    )
    env.globals.update(marker=MARKER, limit=COMMENT_LIMIT, hit_rows=markup.hit_rows)
    return env


_COLORS = {"add": "green", "del": "red", "hunk": "cyan", "meta": "yellow"}
_WORD_COLORS = {
    "added": "green",
    "dropped": "red",
    "deferred": "red",
    "brought": "green",
    "changed": "yellow",
    "rebased": "blue",
    "unchanged": "bright_black",
}


def _render(template: Any, **values: Any) -> str:
    import jinja2

    try:
        return str(template.render(**values))
    except jinja2.TemplateError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(template.filename or template.name, line, f"template: {exc}") from exc


def _template(env: Any, name: str) -> Any:
    import jinja2

    try:
        return env.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(exc.filename or name, exc.lineno, f"template: {exc.message}") from exc


# -- review ---------------------------------------------------------------------------------


def sections(review: Review) -> tuple[Shown, ...]:
    """Every patch that has a section, with all of it shown."""
    out = []
    for p in review.patches:
        if not p.has_section:
            continue
        lines = p.interdiff if p.change == "rebased" else p.diff
        full = p.new.diff if p.change == "changed" and p.new else ()
        out.append(Shown(p, lines, markup.anchor(review, p), full))
    return tuple(out)


def _counts(rows: Sequence[PatchReview]) -> tuple[tuple[str, int], ...]:
    words = [p.words[0] for p in rows]
    return tuple((w, words.count(w)) for w in ("unchanged", "rebased") if w in words)


def collapse(review: Review, plan: Plan) -> Plan:
    """Step 1: the rows of quiet patches as one counted line, without their sections."""
    quiet = [p for p in review.patches if p.quiet]
    if not quiet:
        return plan
    return replace(
        plan,
        rows=tuple(p for p in plan.rows if not p.quiet),
        items=tuple(s for s in plan.items if not s.p.quiet),
        quiet=_counts(quiet),
    )


def _move_out(
    plan: Plan, size: int, limit: int, render: Callable[[Plan], int], resolutions: int = 0
) -> Plan:
    """Step 2: drop the largest diffs until the estimate fits, then measure; repeat."""
    items = list(plan.items)

    def largest(found: Iterable[int], full: bool = False) -> list[int]:
        return sorted(found, key=lambda i: -items[i].cost(full))

    fulls = largest((i for i, s in enumerate(items) if s.full), full=True)
    dropped = largest(i for i, s in enumerate(items) if s.lines and s.p.change == "dropped")
    diffs = largest(i for i, s in enumerate(items) if s.lines and i not in dropped)
    steps: list[tuple[str, int]] = [("full", i) for i in fulls]
    steps += [("diff", i) for i in dropped] + (
        [("resolutions", resolutions)] if resolutions else []
    )
    steps += [("graph", -1)] + [("diff", i) for i in diffs]
    while steps and size >= limit:
        while steps and size >= limit:
            kind, i = steps.pop(0)
            if kind == "full":
                size -= items[i].cost(True)
                items[i] = replace(items[i], full_omitted=True)
            elif kind == "diff":
                size -= items[i].cost(False)
                items[i] = replace(items[i], omitted=True, cut=len(items[i].lines))
            elif kind == "resolutions":
                plan = replace(plan, resolution_diffs=False)
                size -= i
            else:
                plan = replace(plan, graph=False)
                size -= 3000
        plan = replace(plan, items=tuple(items))
        size = render(plan)
    return plan


def _fewest_left(fits: Callable[[int], bool], most: int) -> int:
    """The least n in 0..most with fits(n), by bisection (fits is monotonic); most if none."""
    lo, hi = 0, most
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def fit(review: Review, plan: Plan, limit: int, render: Callable[[Plan], str]) -> str:
    """The Markdown of the first plan in the order of the module doc that fits in ``limit``."""

    def size(text: str) -> int:  # in UTF-8 bytes: never over the limit however GitHub counts
        return len(text.encode("utf-8", "surrogateescape"))

    text = render(plan)
    if size(text) < limit:
        return text
    plan = collapse(review, plan)
    resolutions = sum(len(ln) + 1 for r in review.resolutions for ln in r.diff)
    plan = _move_out(plan, size(render(plan)), limit, lambda p: size(render(p)), resolutions)
    text = render(plan)
    if size(text) < limit:
        return text

    def without_items(n: int) -> Plan:
        return replace(plan, items=plan.items[: len(plan.items) - n], items_left=n)

    n = _fewest_left(lambda k: size(render(without_items(k))) < limit, len(plan.items))
    plan = without_items(n)
    text = render(plan)
    if size(text) < limit:
        return text

    plan = replace(plan, states=False)  # the marks' sections as counts, before any row goes
    text = render(plan)
    if size(text) < limit:
        return text

    def without_rows(n: int) -> Plan:
        return replace(plan, rows=plan.rows[: len(plan.rows) - n], rows_left=n)

    n = _fewest_left(lambda k: size(render(without_rows(k))) < limit, len(plan.rows))
    text = render(without_rows(n))
    if size(text) < limit:
        return text
    stub = (
        f"{MARKER}\n**patchstack review**: {len(review.patches)} patches; too long for a"
        " comment. Run `patchstack review` for the whole review.\n"
    )
    return stub if size(stub) < limit else ""


def render_review(
    review: Review,
    fmt: str,
    template_dirs: Sequence[str] = (),
    color: bool = False,
    limit: int = COMMENT_LIMIT,
    collapse_quiet: bool = False,
    full_url: str | None = None,
    revision_templates: Mapping[str, str] | None = None,
) -> str:
    """The review in ``fmt``; Markdown fits in ``limit`` bytes; ``collapse_quiet`` counts the
    unchanged and rebased patches in one line instead of listing them (text)."""
    review, found = deep_visible(review)  # no control or bidirectional character gets through
    env = environment(template_dirs, color, revision_templates)
    template = _template(env, "review." + FORMATS[fmt])
    shown = review.graph if 0 < len(review.graph.nodes) <= GRAPH_MAX else None

    def render(plan: Plan) -> str:
        graph_text = None
        if plan.graph and shown is not None and shown.edges:
            graph_text = graphs.svg(shown) if fmt == "html" else graphs.mermaid(shown)
            if fmt == "html":
                import markupsafe

                graph_text = markupsafe.Markup(graph_text)
        return _render(
            template,
            review=review,
            items=list(plan.items),
            rows=list(plan.rows),
            anchors={s.p.name: s.anchor for s in plan.items},
            quiet=plan.quiet,
            truncated=plan.truncated,
            plan=plan,
            graph=graph_text,
            graph_size=len(review.graph.nodes),
            full_url=full_url,
            unicode_warning=warning(found),
        )

    plan = Plan(review.patches, sections(review))
    if collapse_quiet:
        plan = collapse(review, plan)
    if fmt == "html":
        return contained(render(plan))
    if fmt != "markdown":
        return render(plan)
    return fit(review, plan, limit, render)


def render_show(
    version: Version,
    fmt: str,
    template_dirs: Sequence[str] = (),
    color: bool = False,
    revision_templates: Mapping[str, str] | None = None,
) -> str:
    version, found = deep_visible(version)  # no control or bidirectional character gets through
    env = environment(template_dirs, color, revision_templates)
    text = _render(
        _template(env, "show." + FORMATS[fmt]), v=version, unicode_warning=warning(found)
    )
    return contained(text) if fmt == "html" else text


# No script, no frame, no form, no request anywhere: styles inline, images inline (data:).
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_DOCTYPE = re.compile(r"\A\s*<!doctype[^>]*>", re.I)


def contained(page: str) -> str:
    """The HTML page behind a Content Security Policy that comes before anything a template
    writes: whatever a template puts in the page (a ``<script>``, an event handler, a
    tracking image), the browser runs and fetches nothing. A ``<meta>`` policy applies to
    what follows it, so it leads the page, right after the doctype (the template's own
    doctype is dropped: one doctype, first, keeps the page in standards mode)."""
    return (
        '<!DOCTYPE html>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        + _DOCTYPE.sub("", page, count=1).lstrip("\n")
    )


def template_dirs(option: str | None, top: str | None) -> list[str]:
    """Where a project's overrides live: ``--templates DIR``, then ``.patchstack/templates``."""
    dirs = [option] if option else []
    if top and os.path.isdir(os.path.join(top, ".patchstack", "templates")):
        dirs.append(os.path.join(top, ".patchstack", "templates"))
    return dirs
