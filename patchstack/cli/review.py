"""review, show and demo."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from .app import Options, cli
from .output import (
    color_asked,
    color_enabled,
    complete_patch_names,
    complete_rev_or_dir,
    complete_revisions,
    complete_tags,
    echo,
    selector,
    style,
)

F = TypeVar("F", bound=Callable[..., Any])

# -- review / show --------------------------------------------------------------------------


def _render_options(f: F) -> F:
    f = click.option(
        "--templates-from",
        metavar="REV",
        help="Read .patchstack/templates/ from revision REV, not from the work tree (CI:"
        " the pull request's base, so that its own templates never run).",
    )(f)
    f = click.option(
        "--templates",
        metavar="DIR",
        type=click.Path(file_okay=False),
        help="Folder of templates overriding the shipped ones (also: .patchstack/templates/).",
    )(f)
    f = click.option(
        "--output",
        "-o",
        metavar="FILE",
        type=click.Path(dir_okay=False),
        help="Write to FILE instead of standard output.",
    )(f)
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["markdown", "html", "text"]),
        default="text",
        show_default=True,
        help="markdown for a PR comment, html for a page, text for the terminal.",
    )(f)


def _emit(ctx: click.Context, text: str, output: str | None) -> None:
    if output:
        from ..files import write_atomic
        from ..safe_text import safe_terminal
        from .output import REPLACED

        safe, found = safe_terminal(text)
        REPLACED.update(dict.fromkeys(found))
        write_atomic(output, safe.encode("utf-8", "surrogateescape"))
    else:
        from .output import out, page

        page(ctx)
        out(text, nl=False, color=color_enabled(), verbatim=True)


def _templates(git: Any, templates: str | None, templates_from: str | None) -> dict[str, Any]:
    """The template options of render_review/render_show: ``--templates DIR`` first, then
    the work tree's .patchstack/templates/, or instead of it REV's (``--templates-from``)."""
    from ..errors import PatchstackError
    from ..review.render import template_dirs
    from ..review.side import templates_at

    if templates_from is None:
        return {"template_dirs": template_dirs(templates, git.top if git else None)}
    if git is None:
        raise PatchstackError(
            "--templates-from needs the repository that holds REV",
            "run inside the repository, or give --templates DIR",
        )
    return {
        "template_dirs": template_dirs(templates, None),
        "revision_templates": templates_at(git, templates_from),
    }


def _wants_color(ctx: click.Context, fmt: str, output: str | None) -> bool:
    if fmt != "text":
        return False
    if output:  # a file gets colour only when asked for
        return color_asked()
    return color_enabled()


@cli.command()
@click.argument("old", required=False, shell_complete=complete_rev_or_dir)
@click.argument("new", required=False, shell_complete=complete_rev_or_dir)
@click.option(
    "--dir",
    "review_dir",
    metavar="PATH",
    type=click.Path(file_okay=False),
    help="The series directory (its place in the work tree is its path in OLD and NEW).",
)
@_render_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (complete).")
@click.option("--verbose", "-v", is_flag=True, help="Text: list unchanged and rebased patches.")
@click.option(
    "--full-url",
    metavar="URL",
    help="Where the whole review is, named by a Markdown comment that had to be shortened.",
)
@click.option(
    "--max-size",
    type=click.IntRange(min=1024),
    default=65536,
    show_default=True,
    metavar="BYTES",
    help="Markdown: the most bytes it may take (a comment that holds more than the review).",
)
@click.pass_context
def review(
    ctx: click.Context,
    old: str | None,
    new: str | None,
    review_dir: str | None,
    fmt: str,
    output: str | None,
    templates: str | None,
    templates_from: str | None,
    as_json: bool,
    verbose: bool,
    full_url: str | None,
    max_size: int,
) -> None:
    """Review a change to the series, patch by patch: OLD and NEW are revisions or directories.

    OLD defaults to HEAD and NEW to the series folder as it is in the work tree: what a
    refresh (or an edit) changed in the series and is not committed yet.

    Every patch is classified as added, dropped, renamed, moved, retagged, rebased (only its
    context or line numbers changed), changed (with the interdiff: how its own change differs)
    or unchanged, with description changes and the move of the series base. A change of its
    series mark is shown too (deferred, upstream with its evidence, no-op, resolved to
    nothing, brought back), and so is every file of resolutions/ added, changed or removed.

    \b
    Example:
      patchstack review                # the series folder against HEAD's
      patchstack review origin/main HEAD --format markdown -o review.md
      patchstack review old-patches/ patches/
    """
    import os

    from ..errors import PatchstackError
    from ..review.render import render_review
    from ..review.side import load_review

    opts = ctx.find_object(Options)
    assert opts is not None
    git = folder = None
    try:
        ws = Options(review_dir or opts.series_dir).checkout(write=False)
        git, folder = ws.git, ws.in_tree
    except PatchstackError:
        if not (old and new and os.path.isdir(old) and os.path.isdir(new)):
            raise
    if new is None:  # the series folder as it is on disk
        if git is None:
            raise PatchstackError(
                "with no NEW, the review compares the series folder with a revision: there is"
                " no repository here",
                "run inside the repository that holds the series, or give two directories",
            )
        new = ws.display(ws.series_dir)
        old = old or "HEAD"
    assert old is not None
    if git is not None and folder is None and not (os.path.isdir(old) and os.path.isdir(new)):
        raise PatchstackError(
            "the series directory is outside the work tree, so it has no path in a revision",
            "give --dir as a folder inside the repository, or give two directories",
        )
    if git is not None:
        ws.progress.step("comparing the two series")
    result = load_review(old, new, git, folder)
    if as_json:
        import json

        from ..review.jsondoc import review_json

        _emit(ctx, json.dumps(review_json(result), indent=2) + "\n", output)
        return
    text = render_review(
        result,
        fmt,
        color=_wants_color(ctx, fmt, output),
        limit=max_size,
        collapse_quiet=fmt == "text" and not verbose,
        full_url=full_url,
        **_templates(git, templates, templates_from),
    )
    _emit(ctx, text, output)


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.option(
    "--rev",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Show the patch as it is in revision REV.",
)
@_render_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show(
    ctx: click.Context,
    name: str,
    rev: str | None,
    fmt: str,
    output: str | None,
    templates: str | None,
    templates_from: str | None,
    as_json: bool,
) -> None:
    """Show one patch: its header, tag, place, line counts and diff.

    \b
    Example:
      patchstack show kimi-k25-eagle3
      patchstack show nccl-logging --format html -o nccl-logging.html
    """
    from ..errors import PatchstackError
    from ..model.selection import resolve_name
    from ..review.compare import make_version
    from ..review.render import render_show
    from ..review.side import from_directory, from_revision

    ws = ctx.obj.checkout(write=False)
    if rev:
        if ws.in_tree is None:
            raise PatchstackError("the series directory is outside the work tree; --rev needs it")
        state = from_revision(ws.git, rev, ws.in_tree)
    else:
        ws.load_series()  # the usual messages for a missing series or patch file
        state = from_directory(ws.series_dir, ws.display(ws.series_dir))
    found = resolve_name(state.series, name)
    entry = state.series.entry(found)
    version = make_version(entry, state.series.index(found) + 1, *state.patches[found])
    if as_json:
        import json

        from ..review.jsondoc import show_json

        _emit(ctx, json.dumps(show_json(version), indent=2) + "\n", output)
        return
    options = _templates(ws.git, templates, templates_from)
    _emit(ctx, render_show(version, fmt, color=_wants_color(ctx, fmt, output), **options), output)


@cli.command()
@click.option(
    "--only",
    metavar="TAGS",
    shell_complete=complete_tags,
    help="Only patches with these tags, and the ones they lean on.",
)
@click.option(
    "--except",
    "except_",
    metavar="TAGS",
    shell_complete=complete_tags,
    help="Leave out patches with these tags (unless a shown one leans on them).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "mermaid", "dot", "json"]),
    default=None,
    help="text (the default), mermaid for GitHub Markdown, dot for Graphviz, json.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (--format json).")
@click.option(
    "--output",
    "-o",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Write to FILE instead of standard output.",
)
@click.pass_context
def graph(
    ctx: click.Context,
    only: str | None,
    except_: str | None,
    fmt: str | None,
    as_json: bool,
    output: str | None,
) -> None:
    """Which patch leans on which: an edge where a patch touches lines an earlier one wrote.

    Computed from the patches' hunks along the series (each patch is made on the base plus
    the patches before it). With --only/--except, the patches that a shown one leans on are
    drawn too, dashed: what 'push --only' would have to carry across.

    \b
    Example:
      patchstack graph --only essential
      patchstack graph --format mermaid -o graph.mmd
      patchstack graph --format dot | dot -Tsvg > graph.svg
      patchstack graph --json
    """
    from ..errors import PatchstackError
    from ..review.graph import FORMATS, build, subgraph

    if as_json and fmt not in (None, "json"):
        raise PatchstackError(
            f"--json and --format {fmt}: give one", "see 'patchstack graph --help'"
        )
    fmt = "json" if as_json else fmt or "text"
    ws = ctx.obj.checkout(write=False)
    series = ws.load_series()
    ws.progress.step("reading the patches", len(series.entries))
    patches = []
    for i, e in enumerate(series.entries, 1):
        patches.append((e, ws.read_patch(e)[1]))
        ws.progress(i, len(series.entries))
    whole = build(patches)
    sel = selector(None, False, only, except_)
    if sel.filtered:
        from ..model.selection import check_words

        check_words(series, sel)
        kept = [e.name for e in series.entries if sel.keeps_tag(e.tag, e.labels)]
        whole = subgraph(whole, kept)
    _emit(ctx, FORMATS[fmt](whole), output)


# -- demo -------------------------------------------------------------------------------------


@cli.command()
@click.argument(
    "directory",
    default="patchstack-demo",
    required=False,
    metavar="[DIR]",
    type=click.Path(file_okay=False),
)
@click.pass_context
def demo(ctx: click.Context, directory: str) -> None:
    """Build a sandbox fork from the bundled example in DIR and walk the whole story.

    Each step prints the exact command first, so you can repeat it by hand inside DIR/fork.
    Writes nothing outside DIR (default: ./patchstack-demo, which must be new or empty).

    \b
    Example:
      patchstack demo /tmp/try-patchstack
    """
    import os

    from ..demo import run_demo

    root = os.path.abspath(directory)
    from .terminal import terminal

    asked = terminal().color
    base_args = ["--no-pager", *([f"--color={asked}"] if asked else [])] + (
        ["--dir", ctx.obj.series_dir] if ctx.obj.series_dir else []
    )

    def run_cli(args: list[str]) -> int:
        old = os.getcwd()
        os.chdir(os.path.join(root, "fork"))
        try:
            cli.main(args=base_args + args, prog_name="patchstack")
        except SystemExit as exc:
            return exc.code if isinstance(exc.code, int) else 1
        finally:
            os.chdir(old)
        return 0

    def say(text: str, bold: bool = False) -> None:
        echo(ctx, style(text, bold=True) if bold else text)

    ctx.exit(run_demo(root, run_cli, say))
