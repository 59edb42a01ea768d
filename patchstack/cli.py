"""The command-line interface: parse arguments, call the service layer, print, exit.

Exit statuses: 0 done; 1 conflict (a patch does not apply or merge; `check` found one);
2 bad input, usage, or a refusal that changed nothing. Domain errors become exit statuses in one
place, `main`. Heavy modules are imported inside the commands, so `--help` and `--version`
start fast, and the repository is opened only by a command that needs it (never in the group
callback, which also runs before a subcommand's ``--help``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import click

from . import __version__

EPILOG_EXIT = "Exit status: 0 done, 1 conflict, 2 bad input or refused (nothing changed)."


_ARGV: list[str] = []  # the command line, for the lock holder's note and the operation log


@dataclass
class Options:
    series_dir: str | None
    color: str

    def workspace(self, write: bool = True):
        """Open the repository and take its lock: exclusive for a command that changes state.

        A command that changes state is refused while the operation log shows an interrupted
        command (``undo`` is what restores it); one that only reads warns.
        """
        import shlex

        from . import journal
        from .lock import acquire
        from .workspace import open_workspace

        ctx = click.get_current_context()
        ws = open_workspace(self.series_dir)
        ctx.call_on_close(ws.git.close)
        ws.command = "patchstack " + (shlex.join(_ARGV) if _ARGV else ctx.info_name)
        held = acquire(ws.git.common_dir, ws.command, exclusive=write)
        ctx.call_on_close(held.release)
        pending = journal.interrupted(ws.git)
        if pending and ctx.info_name not in ("undo", "log"):
            error = journal.interrupted_error(pending)
            if write:
                raise error
            click.echo(f"patchstack: warning: {error.message}", err=True)
            click.echo(f"hint: {error.hint}", err=True)
        return ws


def _color(ctx: click.Context) -> bool | None:
    import os

    mode = ctx.find_object(Options).color if ctx.find_object(Options) else "auto"
    if mode == "always":
        return True
    if mode == "never" or os.environ.get("NO_COLOR"):
        return False
    return None  # click decides: colour on a TTY only


def echo(ctx: click.Context, text: str = "", err: bool = False) -> None:
    click.echo(text, err=err, color=_color(ctx))


def style(text: str, **kw) -> str:
    return click.style(text, **kw)


class PatchstackGroup(click.Group):
    """A click group whose ``main`` turns domain errors into messages and exit statuses."""

    def main(self, *args, **kwargs):  # type: ignore[override]
        from .lock import signals_handled

        kwargs["standalone_mode"] = False
        kwargs.setdefault("prog_name", "patchstack")
        given = kwargs.get("args", args[0] if args else None)
        _ARGV[:] = list(sys.argv[1:] if given is None else given)
        with signals_handled():
            code = _run(lambda: super(PatchstackGroup, self).main(*args, **kwargs))
        sys.exit(code)


@click.group(
    cls=PatchstackGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=EPILOG_EXIT,
)
@click.version_option(__version__, "--version", prog_name="patchstack")
@click.option(
    "--dir",
    "series_dir",
    metavar="DIR",
    help="Series directory (default: $PATCHSTACK_DIR, git config patchstack.dir,"
    " or patches/ at the top of the work tree).",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour output; NO_COLOR is honoured.",
)
@click.pass_context
def cli(ctx: click.Context, series_dir: str | None, color: str) -> None:
    """Keep a fork's local modifications as an ordered, named, tagged patch series.

    \b
    Example:
      patchstack new kimi-fix --tag essential models/kimi_k25.py
      patchstack pop --only diagnostic,optimization
      patchstack push --all
    """
    ctx.obj = Options(series_dir, color)


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
    from .service import init as do_init

    ws = opts.workspace()
    result = do_init(ws, base)
    click.echo(f"created {ws.display(result.series_path)} (base {result.base[:12]})")


# -- new ------------------------------------------------------------------------------------


@cli.command()
@click.argument("name")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
@click.option(
    "--tag",
    "-t",
    required=True,
    metavar="TAG[,LABEL...]",
    help="essential, diagnostic or optimization; free labels may follow.",
)
@click.option("-m", "--message", help="Subject (first line) and description of the patch.")
@click.pass_obj
def new(opts: Options, name: str, paths: tuple[str, ...], tag: str, message: str | None) -> None:
    """Capture uncommitted edits (all, or those PATHs) as a new patch on top.

    The new patch goes right after the topmost applied patch in the series, and is applied
    as a commit. Edits outside PATHs stay uncommitted and untouched. New (untracked) files are
    captured only when named as PATHs.

    \b
    Example:
      patchstack new kimi-k25-eagle3 --tag essential -m "Delegate EAGLE-3 hooks" models/kimi_k25.py
    """
    from .service import new as do_new

    ws = opts.workspace()
    result = do_new(ws, name, tag, message, paths)
    click.echo(
        f"new patch {result.name} [{result.tag}]: {len(result.paths)} file(s),"
        f" commit {result.commit[:12]}"
    )
    if result.untracked_left:
        click.echo(
            "untracked files left out (name them to capture): "
            + ", ".join(result.untracked_left[:10]),
            err=True,
        )


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
    from .service import list_series

    series, stack, rows = list_series(ctx.obj.workspace(write=False))
    if as_json:
        click.echo(
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
        echo(ctx, f"{mark} {r.name}  [{_tag(r.tag)}{labels}]")


cli.add_command(series_cmd, "list")


def _tag(tag: str | None) -> str:
    colours = {"essential": "green", "diagnostic": "cyan", "optimization": "magenta"}
    return style(tag or "?", fg=colours.get(tag or "", "red"))


# -- status ---------------------------------------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Base, applied and unapplied patches, uncommitted edits, and mismatches.

    Exits 1 when an applied commit no longer matches its patch file.

    \b
    Example:
      patchstack status
    """
    from .service import status as do_status

    st = do_status(ctx.obj.workspace(write=False))
    if as_json:
        click.echo(
            json.dumps(
                {
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
                        }
                        for p in st.patches
                    ],
                    "unknown_applied": list(st.unknown_applied),
                    "edits": list(st.edits),
                    "edits_in_patches": {k: list(v) for k, v in st.edits_in_patches.items()},
                    "untracked": list(st.untracked),
                    "differs": st.differs,
                },
                indent=2,
            )
        )
    else:
        branch = st.branch.removeprefix("refs/heads/") if st.branch else "(detached HEAD)"
        echo(ctx, f"branch: {branch} at {st.head[:12]}")
        base = (st.series_base or "?")[:12] + (f" ({st.base_ref})" if st.base_ref else "")
        echo(ctx, f"series base: {base}")
        if st.series_base and st.stack_base != st.series_base:
            echo(
                ctx,
                style(
                    f"stack base:  {st.stack_base[:12]} differs from the series base"
                    " (run 'patchstack refresh')",
                    fg="yellow",
                ),
            )
        applied = [p for p in st.patches if p.applied]
        echo(ctx, f"applied ({len(applied)}):")
        for p in applied:
            note = ""
            if p.matches == "differs":
                note = style("  commit differs from its patch file", fg="red")
            elif p.matches == "carried":
                note = "  (carried by a merge)"
            echo(ctx, f"  + {p.name} [{_tag(p.tag)}]{note}")
        unapplied = [p for p in st.patches if not p.applied]
        echo(ctx, f"unapplied ({len(unapplied)}):")
        for p in unapplied:
            echo(ctx, f"  - {p.name} [{_tag(p.tag)}]")
        for name in st.unknown_applied:
            echo(ctx, style(f"  ! {name} is applied but not in the series", fg="red"))
        if st.edits_in_patches:
            echo(ctx, "uncommitted edits in files of applied patches (refresh folds them):")
            for path, names in st.edits_in_patches.items():
                echo(ctx, f"  {path}  ({', '.join(names)})")
        if st.edits:
            echo(ctx, "uncommitted edits in no patch:")
            for path in st.edits:
                echo(ctx, f"  {path}")
        if st.untracked:
            echo(ctx, f"untracked files: {len(st.untracked)}")
    if st.differs:
        ctx.exit(1)


# -- push / pop -----------------------------------------------------------------------------


def _selector_options(f):
    f = click.option(
        "--except",
        "except_",
        metavar="TAGS",
        help="Leave out patches with these tags (comma-separated).",
    )(f)
    f = click.option(
        "--only", metavar="TAGS", help="Only patches with these tags (comma-separated, exact)."
    )(f)
    f = click.option("--all", "all_", is_flag=True, help="Every patch.")(f)
    return click.argument("name", required=False)(f)


def _selector(name, all_, only, except_):
    from .errors import PatchstackError
    from .selection import Selector, parse_tag_list

    if name and all_:
        raise PatchstackError("give a patch NAME or --all, not both")
    return Selector(
        name,
        all_,
        parse_tag_list(only, "--only") if only is not None else None,
        parse_tag_list(except_, "--except") if except_ is not None else None,
    )


def _print_move(ctx: click.Context, result, verb: str) -> None:
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
@click.pass_context
def push(ctx: click.Context, name, all_, only, except_, onto) -> None:
    """Apply patches in series order (NAME: up to and including it; default: the next one).

    Each patch applies exactly where it was made and is carried to its place by a three-way
    merge, never with fuzz. Nothing changes when a patch conflicts: the report names the
    patch, the file, the hunk, and the unselected patches that touch the same lines.

    \b
    Example:
      patchstack push --only essential
      patchstack push --all
    """
    from .service import push as do_push

    result = do_push(ctx.obj.workspace(), _selector(name, all_, only, except_), onto)
    _print_move(ctx, result, "push")


@cli.command()
@_selector_options
@click.pass_context
def pop(ctx: click.Context, name, all_, only, except_) -> None:
    """Unapply patches (NAME: it and every patch above it; default: the top one).

    --only/--except remove patches from anywhere in the stack and keep the rest applied.

    \b
    Example:
      patchstack pop --only diagnostic,optimization
    """
    from .service import pop as do_pop

    result = do_pop(ctx.obj.workspace(), _selector(name, all_, only, except_))
    _print_move(ctx, result, "pop")


# -- the operation log ---------------------------------------------------------------------


@cli.command("log")
@click.option(
    "-n",
    "limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="How many entries to show.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def log_cmd(ctx: click.Context, limit: int, as_json: bool) -> None:
    """The operation log: every command that changed state, newest first.

    Each entry records the state before and after (branch, HEAD, applied patches, the series
    files, uncommitted edits and untracked files), kept under refs/patchstack/ so that
    'git gc' keeps it. 'undo' and 'redo' walk it.

    \b
    Example:
      patchstack log -n 5
    """
    from . import journal

    ws = ctx.obj.workspace(write=False)
    full = journal.entries(ws.git)
    shown = full[:limit]
    live = {e.seq for e in journal.effective(full)}
    if as_json:
        click.echo(json.dumps([_entry_json(e, e.seq in live) for e in shown], indent=2))
        return
    if not shown:
        echo(ctx, "the operation log is empty")
    for e in shown:
        echo(ctx, _entry_line(e, e.seq in live))


def _entry_state(e, live: bool) -> str:
    if e.status == "running":
        return "interrupted (run 'patchstack undo')"
    if e.status != "done":
        return e.status
    if e.kind == "undo":
        return "undoes " + ", ".join(f"#{s}" for s in e.undoes)
    if e.kind == "redo":
        return f"redoes #{e.redoes}"
    return "done" if live else "undone"


def _entry_line(e, live: bool) -> str:
    import time

    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.time))
    line = f"#{e.seq:<4} {when}  {e.command}  [{_entry_state(e, live)}]"
    after = e.after
    if after is not None:
        b = e.before
        if b.head != after.head:
            line += f"\n      HEAD {b.head[:12]} -> {after.head[:12]}"
        if b.stack != after.stack:
            line += f"\n      applied {len(b.stack)} -> {len(after.stack)}"
            gone = [n for n in b.stack if n not in after.stack]
            came = [n for n in after.stack if n not in b.stack]
            if came:
                line += " +" + " +".join(came[:5]) + (" ..." if len(came) > 5 else "")
            if gone:
                line += " -" + " -".join(gone[:5]) + (" ..." if len(gone) > 5 else "")
    return line


def _entry_json(e, live: bool) -> dict:
    from dataclasses import asdict

    return {
        "seq": e.seq,
        "command": e.command,
        "kind": e.kind,
        "status": e.status,
        "state": _entry_state(e, live),
        "time": e.time,
        "entry": e.oid,
        "before": asdict(e.before),
        "after": asdict(e.after) if e.after else None,
    }


def _print_restore(ctx: click.Context, verb: str, result) -> None:
    for e in result.undone:
        echo(ctx, f"{verb} #{e.seq} {e.command}")
    before, target = result.before, result.target
    if before.head != target.head:
        echo(ctx, f"HEAD {before.head[:12]} -> {target.head[:12]}")
    echo(ctx, f"now applied: {len(target.stack)} patch(es); {len(result.files)} file(s) restored")


@cli.command()
@click.argument("steps", type=click.IntRange(min=1), default=1, required=False)
@click.option(
    "--force",
    is_flag=True,
    help="Restore even over commits or edits made since (they stay in the log).",
)
@click.pass_context
def undo(ctx: click.Context, steps: int, force: bool) -> None:
    """Restore the state before the last command (STEPS: before the last STEPS commands).

    Restores HEAD, the applied patches, the series files, the index, and the uncommitted
    edits and untracked files exactly. Refuses, naming them, when commits or edits were made
    since, unless --force; what a restore replaces stays in the log ('redo' brings it back).
    After an interrupted command, 'undo' restores the state before it.

    \b
    Example:
      patchstack undo
      patchstack undo 3
    """
    from .journal import undo as do_undo

    _print_restore(ctx, "undid", do_undo(ctx.obj.workspace(), steps, force))


@cli.command()
@click.option("--force", is_flag=True, help="Redo even over commits or edits made since.")
@click.pass_context
def redo(ctx: click.Context, force: bool) -> None:
    """Revert the last undo (repeat to revert earlier undos).

    \b
    Example:
      patchstack redo
    """
    from .journal import redo as do_redo

    _print_restore(ctx, "redid", do_redo(ctx.obj.workspace(), force))


# -- errors and exit statuses -----------------------------------------------------------------


def render_conflict(report) -> list[str]:
    lines = [f"conflict in patch {report.patch}"]
    for path in report.files:
        lines.append(f"  file {path}")
    for h in report.hunks:
        lines.append(f"  {h.path}:{h.line}:")
        lines.append("    the patch expected:")
        lines += [f"      | {ln}" for ln in h.expected] or ["      (nothing)"]
        lines.append("    there now:")
        lines += [f"      | {ln}" for ln in h.now] or ["      (nothing)"]
        lines.append("    the patch wants:")
        lines += [f"      | {ln}" for ln in h.wanted] or ["      (nothing)"]
    if report.culprits:
        lines.append("  unselected patches touching these lines: " + ", ".join(report.culprits))
    if report.detail and not report.hunks:
        lines += ["  " + ln for ln in report.detail.splitlines()]
    return lines


def _run(invoke) -> int:
    from .errors import ConflictError, PatchstackError
    from .lock import Interrupted

    try:
        code = invoke()
    except Interrupted as exc:
        click.echo(f"patchstack: interrupted ({exc}); the state is consistent", err=True)
        return exc.exit_code
    except ConflictError as exc:
        click.echo(f"patchstack: {exc.message}", err=True)
        for line in render_conflict(exc.report):
            click.echo(line, err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        return exc.exit_code
    except PatchstackError as exc:
        click.echo(f"patchstack: error: {exc.message}", err=True)
        if exc.hint:
            click.echo(f"hint: {exc.hint}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return 2
    except (KeyboardInterrupt, click.exceptions.Abort):
        click.echo("patchstack: interrupted", err=True)
        return 130
    return code if isinstance(code, int) else 0


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv)
