"""init, new, series, status, push, pop."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..model.marks import describe, push_back_hint
from .app import Options, cli
from .output import (
    complete_applied,
    complete_patch_names,
    complete_revisions,
    complete_unapplied,
    echo,
    json_text,
    names_line,
    out,
    page,
    selector,
    style,
    tag_filter_options,
    tag_text,
)

if TYPE_CHECKING:
    from ..commands.push import MoveResult

F = TypeVar("F", bound=Callable[..., Any])

# -- init -----------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--base",
    "base",
    metavar="REV",
    shell_complete=complete_revisions,
    help="The upstream commit (default: HEAD).",
)
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
    from .statustext import standing_json, standing_lines

    listing = list_series(ctx.obj.checkout(write=False))
    series, stack, rows = listing.series, listing.stack, listing.rows
    page(ctx)
    if as_json:
        out(
            json_text(
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
                            "mark": r.mark.to_json() if r.mark else None,
                            **standing_json(r.standing),
                        }
                        for r in rows
                    ],
                }
            )
        )
        return
    for r in rows:
        mark = style("+", fg="green") if r.applied else style("-", fg="bright_black")
        labels = (", " + ", ".join(r.labels)) if r.labels else ""
        note = f"  ({describe(r.mark)})" if r.mark else ""
        echo(ctx, f"{mark} {r.name}  [{tag_text(r.tag)}{labels}]{note}")
    hint = push_back_hint([r.mark for r in rows if r.mark], listing.stopped)
    if hint:
        echo(ctx, hint)
    for line in standing_lines([r.standing for r in rows], listing.today, False):
        echo(ctx, line)


cli.add_command(series_cmd, "list")


# -- status ---------------------------------------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (complete).")
@click.option("--verbose", "-v", is_flag=True, help="List every patch and upstream commit.")
@click.pass_context
def status(ctx: click.Context, as_json: bool, verbose: bool) -> None:
    """Base, upstream drift, applied and unapplied patches, edits, and the next step.

    Exits 1 when the stack disagrees with the series: an applied commit no longer matches its
    patch file, a patch is applied that is not in the series or out of its order, commits
    that are not patches sit on top of the applied ones, or a refresh or a git operation is
    stopped in the middle, or a command was interrupted while publishing ('patchstack undo').
    A stack on another base (push --onto) is reported, not counted.

    The drift is counted against the series' upstream: the branch its '# base: ID REF' line
    names (where it exists and is not the branch HEAD is on), else @{upstream}, else the
    remote's default branch (guessed, and said). Where HEAD's @{upstream} is another branch
    (a team's branch tracking its own published branch), one line says which was taken.

    \b
    Example:
      patchstack status
      patchstack status --verbose
    """
    from ..commands.refresh.drift import drift as do_drift
    from ..commands.status import status as do_status

    ws = ctx.obj.checkout(write=False, while_stopped=True)  # (its first line says the stop)
    st = do_status(ws)
    # At a stopped refresh the text says where it stopped, not how far upstream moved.
    drift = do_drift(ws, st.real_base) if as_json or not st.refresh_stopped else None
    ws.save_caches()  # the drift walked, the proofs made: the next status reads them
    if as_json:
        from .statustext import standing_json

        by_name = {s.name: s for s in st.standings}
        out(
            json_text(
                {
                    "drift": drift.to_json() if drift else None,
                    "branch": st.branch,
                    "head": st.head,
                    "base": st.series_base,
                    "base_ref": st.base_ref,
                    "stack_base": st.stack_base,
                    "plain_series": st.plain_series,
                    "built_on": st.built_on,
                    "fold_into": st.fold_into,
                    "in_base": list(st.in_base),
                    "stopped": (
                        {
                            "patch": st.stopped.patch,
                            "files": list(st.stopped.files),
                            "conflicted": list(st.stopped.conflicted),
                            "onto": st.stopped.onto,
                        }
                        if st.stopped
                        else None
                    ),
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
                            "mark": m.to_json() if (m := st.mark_of(p.name)) else None,
                            **(standing_json(by_name[p.name]) if p.name in by_name else {}),
                        }
                        for p in st.patches
                    ],
                    "without_probe": st.without_probe,
                    "unknown_applied": list(st.unknown_applied),
                    "edits": list(st.edits),
                    "edits_in_patches": {k: list(v) for k, v in st.edits_in_patches.items()},
                    "untracked": list(st.untracked),
                    "submodules": list(st.submodules),
                    "differs": st.differs,
                    "operation": st.operation[0] if st.operation else None,
                    "on_top": list(st.on_top),
                    "out_of_order": list(st.out_of_order),
                    "disagreements": list(st.disagreements),
                    "interrupted": st.interrupted,
                    "stepping": st.stepping,
                }
            )
        )
    else:
        from .statustext import status_lines

        problem = None
        if st.operation:
            from ..journal.refusals import foreign_error

            found = foreign_error(ws)
            problem = f"{found.message}: {found.hint}" if found else None
        for line in status_lines(st, drift, verbose, problem):
            echo(ctx, line)
        if not st.series_base:
            echo(ctx, f"patchstack: warning: {NO_BASE}", err=True)
    if st.repaired:
        echo(ctx, f"patchstack: repaired: {st.repaired}", err=True)
    if st.disagreements or st.interrupted:
        ctx.exit(1)


# -- push / pop -----------------------------------------------------------------------------


def _selector_options(f: F, complete: Any = complete_patch_names) -> F:
    f = tag_filter_options(f, "Only patches with these tags (comma-separated, exact).")
    f = click.option("--all", "all_", is_flag=True, help="Every patch.")(f)
    f = click.option("--verbose", "-v", is_flag=True, help="Name every patch moved.")(f)
    return click.argument("name", required=False, shell_complete=complete)(f)


def _push_selector(f: F) -> F:
    return _selector_options(f, complete_unapplied)


def _pop_selector(f: F) -> F:
    return _selector_options(f, complete_applied)


def _discard_option(f: F) -> F:
    return click.option(
        "--discard-changes",
        "discard",
        is_flag=True,
        help="Drop what applied commits changed beyond their patch files (amend, rebase -i)"
        " instead of refusing.",
    )(f)


def _print_deps(ctx: click.Context, result: MoveResult, verb: str, verbose: bool) -> None:
    """The unselected patches --with-deps added or --keep-deps kept, each with a patch that
    leans on it."""
    deps = [f"{n} ({by} leans on it)" for n, by in result.deps]
    if not deps:
        none = "leans on no unselected patch" if verb == "push" else "lean on none of them"
        echo(ctx, f"dependencies: the {'selection' if verb == 'push' else 'patches left'} {none}")
        return
    if verb == "push":
        head = f"added {len(deps)} unselected patch(es) the selection leans on"
    else:
        head = f"kept {len(deps)} selected patch(es) applied, the patches left lean on them"
    shown = deps if verbose or len(deps) <= 10 else deps[:10]
    more = f" and {len(deps) - len(shown)} more (--verbose lists them)" if deps[10:] else ""
    echo(ctx, f"{head}: {', '.join(shown)}{more}")


def _print_move(
    ctx: click.Context, result: MoveResult, verb: str, verbose: bool, deps: bool = False
) -> None:
    """What moved, then one line of counts; long lists only with --verbose."""
    if deps:
        _print_deps(ctx, result, verb, verbose)
    if verb == "push":
        if result.added:
            echo(ctx, names_line("applied", result.added, verbose))
        if result.replaced:
            echo(
                ctx,
                f"in place of the {result.replaced} plain commit(s) that carried them (the same"
                " tree; 'patchstack undo' brings them back)",
            )
        skipped = [n for n in result.before if n in result.after]
        if skipped and not result.added:
            echo(ctx, f"already applied: {len(skipped)} patch(es); nothing to push")
    else:
        if result.removed:
            echo(ctx, names_line("popped", result.removed, verbose))
        else:
            echo(ctx, "nothing to pop")
    reapplied = [n for n in result.rebuilt if n in result.before]
    if reapplied:
        echo(ctx, names_line("re-applied", reapplied, verbose, shown=5, where=" above them"))
    if getattr(result, "deferred", ()):
        echo(ctx, names_line("deferred (not applied)", result.deferred, verbose))
        echo(ctx, "  'patchstack push NAME' brings one back (a conflict stops, as refresh does)")
    if result.upstream:
        echo(ctx, names_line("already in the tree (not applied)", result.upstream, verbose))
        echo(
            ctx,
            "  upstream has their change: 'patchstack refresh --drop-merged' takes them out of"
            " the series",
        )
    echo(ctx, f"now applied: {len(result.after)} patch(es), HEAD {result.head[:12]}")


@cli.command()
@_push_selector
@click.option(
    "--onto",
    metavar="REV",
    shell_complete=complete_revisions,
    help="Build the stack on REV instead of its base.",
)
@click.option(
    "--with-deps",
    is_flag=True,
    help="Also apply the unselected patches the selected ones lean on ('patchstack graph').",
)
@_discard_option
@click.pass_context
def push(
    ctx: click.Context,
    name: str | None,
    all_: bool,
    only: str | None,
    except_: str | None,
    verbose: bool,
    onto: str | None,
    with_deps: bool,
    discard: bool,
) -> None:
    """Apply patches in series order (NAME: up to and including it; default: the next one).

    Each patch applies exactly where it was made and is carried to its place by a three-way
    merge, never with fuzz. Nothing changes when a patch conflicts: the report names the
    patch, the file, the hunk, and the unselected patches that touch the same lines.
    --with-deps applies those too, before it comes to that: the smallest set of unselected
    patches the selection leans on (the edges of 'patchstack graph'), and says which.

    \b
    Example:
      patchstack push --only essential
      patchstack push --only essential --with-deps
      patchstack push --all
    """
    from ..commands.push import push as do_push

    ws = ctx.obj.checkout()
    try:
        sel = selector(name, all_, only, except_)
        result = do_push(ws, sel, onto, ws.progress, discard, with_deps)
    finally:
        ws.progress.close()
    from ..commands.push import MoveResult

    if not isinstance(result, MoveResult):  # a deferred patch brought back: a replay
        from .refreshtext import print_refresh

        print_refresh(ctx, result, verbose, brought_back=True)
        if result.stopped:
            ctx.exit(1)
        return
    _print_move(ctx, result, "push", verbose, with_deps)
    if ws.load_series().base is None:
        echo(ctx, f"patchstack: warning: {NO_BASE}", err=True)


NO_BASE = (
    "the series file has no '# base:' line, so the patches were applied on HEAD (below any"
    " applied patches); record that commit as the base with 'patchstack refresh', or start"
    " a series on a chosen commit with 'patchstack init --base REV'"
)


@cli.command()
@_pop_selector
@click.option("--alone", is_flag=True, help="Only NAME: the patches above it stay applied.")
@click.option(
    "--keep-deps",
    is_flag=True,
    help="Keep the selected patches that patches staying applied lean on ('patchstack graph').",
)
@_discard_option
@click.pass_context
def pop(
    ctx: click.Context,
    name: str | None,
    all_: bool,
    only: str | None,
    except_: str | None,
    verbose: bool,
    alone: bool,
    keep_deps: bool,
    discard: bool,
) -> None:
    """Unapply patches (NAME: it and every patch above it; default: the top one).

    --only/--except remove patches from anywhere in the stack and keep the rest applied;
    NAME --alone removes that one patch from the middle. --keep-deps keeps applied the
    selected patches that a patch staying applied leans on (the smallest such set, the edges
    of 'patchstack graph'), and says which, instead of stopping at the first conflict.

    \b
    Example:
      patchstack pop --only diagnostic,optimization
      patchstack pop --only diagnostic,optimization --keep-deps
      patchstack pop nccl-logging --alone
    """
    from ..commands.pop import pop as do_pop

    ws = ctx.obj.checkout()
    try:
        sel = selector(name, all_, only, except_)
        result = do_pop(ws, sel, ws.progress, discard, alone, keep_deps)
    finally:
        ws.progress.close()
    _print_move(ctx, result, "pop", verbose, keep_deps)
