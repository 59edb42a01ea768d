"""init, new, series, status, push, pop."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .app import Options, cli
from .output import (
    ProgressBar,
    complete_patch_names,
    complete_tags,
    echo,
    out,
    selector,
    style,
    tag_text,
)

if TYPE_CHECKING:
    from ..commands.drift import Drift
    from ..commands.push import MoveResult
    from ..commands.status import StatusResult

F = TypeVar("F", bound=Callable[..., Any])

# -- init -----------------------------------------------------------------------------------


@cli.command()
@click.option("--base", "base", metavar="REV", help="The upstream commit (default: HEAD).")
@click.pass_obj
def init(opts: Options, base: str | None) -> None:
    """Create the series directory and its series file.

    \b
    Example:
      patchstack init --base origin/main
    """
    from ..commands.init import init as do_init

    ws = opts.checkout()
    result = do_init(ws, base)
    out(f"created {ws.display(result.series_path)} (base {result.base[:12]})")


# -- series ---------------------------------------------------------------------------------


@cli.command("series")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def series_cmd(ctx: click.Context, as_json: bool) -> None:
    """List the patches in order with their tags and whether each is applied.

    \b
    Example:
      patchstack series --json | jq '.patches[] | select(.applied) | .name'
    """
    from ..commands.listing import list_series

    series, stack, rows = list_series(ctx.obj.checkout(write=False))
    if as_json:
        out(
            json.dumps(
                {
                    "base": series.base,
                    "base_ref": series.base_ref,
                    "head": stack.head,
                    "patches": [
                        {
                            "name": r.name,
                            "tag": r.tag,
                            "labels": list(r.labels),
                            "applied": r.applied,
                            "commit": r.commit,
                        }
                        for r in rows
                    ],
                },
                indent=2,
            )
        )
        return
    for r in rows:
        mark = style("+", fg="green") if r.applied else style("-", fg="bright_black")
        labels = (", " + ", ".join(r.labels)) if r.labels else ""
        echo(ctx, f"{mark} {r.name}  [{tag_text(r.tag)}{labels}]")


cli.add_command(series_cmd, "list")


# -- status ---------------------------------------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Base, applied and unapplied patches, uncommitted edits, and mismatches.

    Exits 1 when an applied commit no longer matches its patch file, when commits that are not
    patches sit on top of the applied ones, or when a git operation is in progress.

    \b
    Example:
      patchstack status
    """
    from ..commands.drift import drift as do_drift
    from ..commands.status import status as do_status

    ws = ctx.obj.checkout(write=False)
    st = do_status(ws)
    drift = do_drift(ws)
    if as_json:
        out(
            json.dumps(
                {
                    "drift": drift.to_json() if drift else None,
                    "branch": st.branch,
                    "head": st.head,
                    "base": st.series_base,
                    "base_ref": st.base_ref,
                    "stack_base": st.stack_base,
                    "applied": [p.name for p in st.patches if p.applied],
                    "unapplied": [p.name for p in st.patches if not p.applied],
                    "patches": [
                        {
                            "name": p.name,
                            "tag": p.tag,
                            "applied": p.applied,
                            "commit": p.commit,
                            "matches": p.matches,
                            "labels": list(p.labels),
                            "commit_tag": p.commit_tag,
                        }
                        for p in st.patches
                    ],
                    "unknown_applied": list(st.unknown_applied),
                    "edits": list(st.edits),
                    "edits_in_patches": {k: list(v) for k, v in st.edits_in_patches.items()},
                    "untracked": list(st.untracked),
                    "differs": st.differs,
                    "operation": st.operation[0] if st.operation else None,
                    "on_top": list(st.on_top),
                    "stack_order": list(st.stack_order),
                    "order_differs": st.order_differs,
                    "tags_differ": [p.name for p in st.tags_differ],
                },
                indent=2,
            )
        )
    else:
        if st.operation:
            from ..transaction import foreign_error

            problem = foreign_error(ws)
            if problem:
                echo(ctx, style(f"{problem.message}: {problem.hint}", fg="red"))
        branch = st.branch.removeprefix("refs/heads/") if st.branch else "(detached HEAD)"
        echo(ctx, f"branch: {branch} at {st.head[:12]}")
        base = (st.series_base or "?")[:12] + (f" ({st.base_ref})" if st.base_ref else "")
        echo(ctx, f"series base: {base}")
        if not st.series_base:
            echo(ctx, f"patchstack: warning: {NO_BASE}", err=True)
        if st.series_base and st.stack_base != st.series_base:
            echo(
                ctx,
                style(
                    f"stack base:  {st.stack_base[:12]} differs from the series base"
                    " (run 'patchstack refresh')",
                    fg="yellow",
                ),
            )
        if drift and drift.commits:
            _print_drift(ctx, drift)
        applied = [p for p in st.patches if p.applied]
        echo(ctx, f"applied ({len(applied)}):")
        for p in applied:
            note = ""
            if p.matches == "differs":
                note = style(
                    "  commit differs from its patch file (adopt: 'patchstack refresh --patch"
                    f" {p.name}'; drop: '--discard-changes')",
                    fg="red",
                )
            elif p.matches == "edited":
                note = style(
                    "  patch file edited since it was applied (push, pop and refresh apply"
                    " the new version)",
                    fg="yellow",
                )
            elif p.matches == "carried":
                note = "  (carried by a merge)"
            echo(ctx, f"  + {p.name} [{_tags(p.tag, p.labels)}]{note}")
        if st.on_top_problem:
            what, todo = st.on_top_problem
            echo(ctx, style(f"{what}: {todo}", fg="red"))
        unapplied = [p for p in st.patches if not p.applied]
        echo(ctx, f"unapplied ({len(unapplied)}):")
        for p in unapplied:
            echo(ctx, f"  - {p.name} [{_tags(p.tag, p.labels)}]")
        for line in _disagreements(st):
            echo(ctx, style(line, fg="yellow"))
        for name in st.unknown_applied:
            echo(ctx, style(f"  ! {name} is applied but not in the series", fg="red"))
        if st.edits_in_patches:
            echo(ctx, "uncommitted edits in files of applied patches (refresh folds them):")
            for path, names in st.edits_in_patches.items():
                echo(ctx, f"  {path}  ({', '.join(names)})")
        if st.edits and st.operation:
            echo(ctx, f"uncommitted edits: {len(st.edits)} file(s), the {st.operation[0]}'s")
        elif st.edits:
            echo(ctx, "uncommitted edits in no patch:")
            for path in st.edits:
                echo(ctx, f"  {path}")
        if st.untracked:
            echo(ctx, f"untracked files: {len(st.untracked)}")
    if st.differs or st.on_top or st.operation or st.order_differs or st.tags_differ:
        ctx.exit(1)


def _tags(tag: str | None, labels: tuple[str, ...]) -> str:
    return tag_text(tag) + "".join(f", {label}" for label in labels)


def _disagreements(st: StatusResult) -> list[str]:
    """Where the applied commits disagree with the series, and the command that reconciles."""
    lines = []
    if st.order_differs:
        lines.append(
            "the applied commits are in another order than the series ("
            + ", ".join(st.stack_order)
            + "): run 'patchstack refresh' to rebuild them in the series order"
        )
    for p in st.tags_differ:
        lines.append(
            f"the commit of {p.name} says tag {p.commit_tag or '(none)'}, the series {p.tag}:"
            f" run 'patchstack tag {p.name} {p.tag}'"
        )
    return lines


def _print_drift(ctx: click.Context, drift: Drift) -> None:
    echo(
        ctx,
        style(
            f"upstream moved: {drift.commits} commit(s) from the series base to"
            f" {drift.target_name} ({drift.target[:12]})",
            fg="yellow",
        ),
    )
    if drift.touching:
        echo(ctx, f"  {len(drift.touching)} touch files of the series:")
        for c in drift.touching:
            echo(ctx, f"  {c.oid[:10]} {c.subject}")
            echo(ctx, f"    files: {', '.join(c.files)}; patches: {', '.join(c.patches)}")
    else:
        echo(ctx, "  none of them touches a file of the series")


# -- push / pop -----------------------------------------------------------------------------


def _selector_options(f: F) -> F:
    f = click.option(
        "--except",
        "except_",
        metavar="TAGS",
        shell_complete=complete_tags,
        help="Leave out patches with these tags (comma-separated).",
    )(f)
    f = click.option(
        "--only",
        metavar="TAGS",
        shell_complete=complete_tags,
        help="Only patches with these tags (comma-separated, exact).",
    )(f)
    f = click.option("--all", "all_", is_flag=True, help="Every patch.")(f)
    return click.argument("name", required=False, shell_complete=complete_patch_names)(f)


def _discard_option(f: F) -> F:
    return click.option(
        "--discard-changes",
        "discard",
        is_flag=True,
        help="Drop what applied commits changed beyond their patch files (amend, rebase -i)"
        " instead of refusing.",
    )(f)


def _print_move(ctx: click.Context, result: MoveResult, verb: str) -> None:
    if verb == "push":
        for name in result.added:
            echo(ctx, f"applied {name}")
        skipped = [n for n in result.before if n in result.after]
        if skipped and not result.added:
            echo(ctx, f"already applied: {len(skipped)} patch(es); nothing to push")
    else:
        for name in result.removed:
            echo(ctx, f"popped {name}")
        if not result.removed:
            echo(ctx, "nothing to pop")
    reapplied = [n for n in result.rebuilt if n in result.before]
    if reapplied:
        echo(ctx, f"re-applied above: {', '.join(reapplied)}")
    echo(ctx, f"now applied: {len(result.after)} patch(es), HEAD {result.head[:12]}")


@cli.command()
@_selector_options
@click.option("--onto", metavar="REV", help="Build the stack on REV instead of its base.")
@_discard_option
@click.pass_context
def push(
    ctx: click.Context,
    name: str | None,
    all_: bool,
    only: str | None,
    except_: str | None,
    onto: str | None,
    discard: bool,
) -> None:
    """Apply patches in series order (NAME: up to and including it; default: the next one).

    Each patch applies exactly where it was made and is carried to its place by a three-way
    merge, never with fuzz. Nothing changes when a patch conflicts: the report names the
    patch, the file, the hunk, and the unselected patches that touch the same lines.

    \b
    Example:
      patchstack push --only essential
      patchstack push --all
    """
    from ..commands.push import push as do_push

    ws = ctx.obj.checkout()
    bar = ProgressBar("pushing")
    try:
        sel = selector(name, all_, only, except_)
        result = do_push(ws, sel, onto, bar, discard)
    finally:
        bar.close()
    _print_move(ctx, result, "push")
    if ws.load_series().base is None:
        echo(ctx, f"patchstack: warning: {NO_BASE}", err=True)


NO_BASE = (
    "the series file has no '# base:' line, so the patches were applied on HEAD (below any"
    " applied patches); record that commit as the base with 'patchstack refresh', or start"
    " a series on a chosen commit with 'patchstack init --base REV'"
)


@cli.command()
@_selector_options
@_discard_option
@click.pass_context
def pop(
    ctx: click.Context,
    name: str | None,
    all_: bool,
    only: str | None,
    except_: str | None,
    discard: bool,
) -> None:
    """Unapply patches (NAME: it and every patch above it; default: the top one).

    --only/--except remove patches from anywhere in the stack and keep the rest applied.

    \b
    Example:
      patchstack pop --only diagnostic,optimization
    """
    from ..commands.pop import pop as do_pop

    bar = ProgressBar("popping")
    try:
        result = do_pop(ctx.obj.checkout(), selector(name, all_, only, except_), bar, discard)
    finally:
        bar.close()
    _print_move(ctx, result, "pop")
