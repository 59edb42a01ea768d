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

    def workspace(self, write: bool = True, while_stopped: bool = False):
        """Open the repository and take its lock: exclusive for a command that changes state.

        A command that changes state is refused while the operation log shows an interrupted
        command (``undo`` is what restores it) or while a refresh is stopped at a conflict
        (``refresh --continue`` or ``--abort``); one that only reads warns.
        """
        import shlex

        from . import journal
        from .errors import PatchstackError
        from .lock import acquire
        from .workspace import open_workspace, refresh_guard

        ctx = click.get_current_context()
        ws = open_workspace(self.series_dir)
        ctx.call_on_close(ws.git.close)
        ws.command = "patchstack " + (shlex.join(_ARGV) if _ARGV else ctx.info_name)
        held = acquire(ws.git.common_dir, ws.command, exclusive=write)
        ctx.call_on_close(held.release)
        problems = []
        if not while_stopped:
            try:
                refresh_guard(ws.git)
            except PatchstackError as exc:
                problems.append(exc)
        pending = journal.interrupted(ws.git)
        if pending and ctx.info_name not in ("undo", "log"):
            problems.append(journal.interrupted_error(pending))
        for error in problems:
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


def complete_patch_names(ctx: click.Context, param: click.Parameter, incomplete: str):
    """Shell completion of patch names from the series file (silent on any error)."""
    from click.shell_completion import CompletionItem

    try:
        root = ctx.find_root()
        series_dir = root.params.get("series_dir") if root else None
        from .workspace import open_workspace

        ws = open_workspace(series_dir)
        try:
            series = ws.load_series()
        finally:
            ws.git.close()
    except Exception:
        return []
    return [
        CompletionItem(e.name, help=e.tag) for e in series.entries if e.name.startswith(incomplete)
    ]


def complete_tags(ctx: click.Context, param: click.Parameter, incomplete: str):
    """Shell completion of comma-separated tag lists: the last item is completed."""
    from click.shell_completion import CompletionItem

    from .series import TAGS

    head, _, last = incomplete.rpartition(",")
    prefix = head + "," if head else ""
    done = set(head.split(","))
    return [CompletionItem(prefix + t) for t in TAGS if t.startswith(last) and t not in done]


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
    shell_complete=complete_tags,
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
    from .refresh import drift as do_drift
    from .service import status as do_status

    ws = ctx.obj.workspace(write=False)
    st = do_status(ws)
    drift = do_drift(ws)
    if as_json:
        click.echo(
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
        if drift and drift.commits:
            _print_drift(ctx, drift)
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


def _print_drift(ctx: click.Context, drift) -> None:
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


def _selector_options(f):
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


class ProgressBar:
    """A progress bar on stderr, only on a terminal and only once work lasts over a second."""

    def __init__(self, label: str) -> None:
        import time

        self.label = label
        self.start = time.monotonic()
        self.bar = None
        self.enabled = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        import time

        if self.bar is None:
            if time.monotonic() - self.start < 1.0 or done >= total:
                return
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            self.bar.__enter__()
        self.bar.update(done - self.bar.pos)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


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

    bar = ProgressBar("pushing")
    try:
        result = do_push(ctx.obj.workspace(), _selector(name, all_, only, except_), onto, bar)
    finally:
        bar.close()
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

    bar = ProgressBar("popping")
    try:
        result = do_pop(ctx.obj.workspace(), _selector(name, all_, only, except_), bar)
    finally:
        bar.close()
    _print_move(ctx, result, "pop")


# -- refresh / check --------------------------------------------------------------------------


@cli.command()
@click.option("--onto", metavar="REV", help="Replay the series onto REV (e.g. origin/main).")
@click.option(
    "--patch", "patch_name", metavar="NAME", help="Fold edits into NAME (default: the top one)."
)
@click.option(
    "--drop-merged", is_flag=True, help="Remove patches already contained in the new base."
)
@click.option("--continue", "continue_", is_flag=True, help="Go on after resolving a conflict.")
@click.option("--abort", "abort_", is_flag=True, help="Restore the state before the refresh.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def refresh(ctx, onto, patch_name, drop_merged, continue_, abort_, as_json) -> None:
    """Make the patch files match reality after upstream moved, or fold edits into a patch.

    After 'git pull' (series popped, or a merge, or --rebase) or with --onto REV, every patch
    is replayed onto the new base by three-way merge; each gets a verdict: unchanged (file
    keeps its bytes), offset, merged, conflict, or upstream (already in the new base). With no
    move, uncommitted edits in files of the top applied patch (or --patch NAME) are folded
    into it. A conflict stops with markers in the work tree and exit status 1.

    \b
    Example:
      git fetch && patchstack refresh --onto origin/main
      patchstack refresh --continue     # after editing the conflict markers away
      patchstack refresh --abort        # back to exactly the state before
    """
    from .errors import PatchstackError
    from .refresh import abort
    from .refresh import continue_ as do_continue
    from .refresh import refresh as do_refresh

    if sum(map(bool, (continue_, abort_, onto or patch_name or drop_merged))) > 1:
        raise PatchstackError(
            "--continue and --abort take no other option", "see 'patchstack refresh --help'"
        )
    ws = ctx.obj.workspace(while_stopped=continue_ or abort_)
    if abort_:
        result = abort(ws)
    elif continue_:
        result = do_continue(ws)
    else:
        result = do_refresh(ws, onto, drop_merged, patch_name)
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        _print_refresh(ctx, result)
    if result.stopped:
        ctx.exit(1)


_VERDICT_COLOURS = {
    "unchanged": "bright_black",
    "offset": "cyan",
    "merged": "yellow",
    "conflict": "red",
    "upstream": "magenta",
}


def _verdict(v) -> str:
    return style(f"{v.verdict:<9}", fg=_VERDICT_COLOURS.get(v.verdict))


def _print_refresh(ctx: click.Context, result) -> None:
    if result.aborted:
        echo(ctx, f"refresh aborted: HEAD {result.head[:12]}, everything as before")
        return
    old = (result.old_base or "?")[:12]
    new = result.new_base[:12] + (f" ({result.new_ref})" if result.new_ref else "")
    if result.old_base != result.new_base:
        echo(ctx, f"base {old} -> {new}")
    if result.fold_into:
        echo(ctx, f"folded {', '.join(result.folded)} into {result.fold_into}")
    for v in result.verdicts:
        notes = []
        if v.resolved:
            notes.append("resolved")
        if v.verdict == "upstream":
            notes.append(
                "dropped from the series (file kept)"
                if v.dropped
                else "already in the new base; not applied ('--drop-merged' removes it)"
            )
        echo(ctx, f"  {_verdict(v)} {v.name}" + (f"  ({'; '.join(notes)})" if notes else ""))
    if result.stopped:
        for line in render_refresh_conflict(result.stopped):
            echo(ctx, line, err=True)
        echo(
            ctx,
            "hint: edit the files to resolve the conflict markers, then run"
            " 'patchstack refresh --continue' (no git add needed),"
            " or 'patchstack refresh --abort' to go back",
            err=True,
        )
        return
    rewritten = sum(v.rewritten for v in result.verdicts)
    echo(
        ctx,
        f"rewrote {rewritten} patch file(s); applied: {len(result.applied)} patch(es),"
        f" HEAD {result.head[:12]}",
    )


def render_refresh_conflict(c) -> list[str]:
    lines = [f"conflict in patch {c.patch}"]
    for path in c.files:
        lines.append(f"  file {path}")
    for b in c.hunks:
        lines += hunk_lines(b.hunk)
        if b.commits:
            what = "changed these lines" if b.traced else "touched this file"
            lines.append(f"    upstream commits that {what}:")
            lines += [f"      {u.oid[:10]} {u.subject}" for u in b.commits]
    if c.detail and not c.hunks:
        lines += ["  " + ln for ln in c.detail.splitlines()]
    return lines


@cli.command()
@click.option("--onto", metavar="REV", help="Target (default: @{upstream}, else HEAD).")
@click.option("--only", metavar="TAGS", help="Only patches with these tags.")
@click.option("--except", "except_", metavar="TAGS", help="Leave out patches with these tags.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def check(ctx, onto, only, except_, as_json) -> None:
    """Dry run: would the series apply on REV? Per-patch verdicts; nothing is touched.

    Exits 1 when any patch conflicts (for a nightly CI job against upstream's main).

    \b
    Example:
      git fetch && patchstack check --onto origin/main --except diagnostic
    """
    from .refresh import check as do_check

    result = do_check(ctx.obj.workspace(write=False), onto, _selector(None, False, only, except_))
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        echo(ctx, f"check against {result.target_name} ({result.target[:12]}):")
        for v in result.verdicts:
            echo(ctx, f"  {_verdict(v)} {v.name}")
        for c in result.conflicts:
            for line in render_refresh_conflict(c):
                echo(ctx, line)
        echo(ctx, "all patches apply" if result.ok else f"{len(result.conflicts)} conflict(s)")
    if not result.ok:
        ctx.exit(1)


# -- import / export --------------------------------------------------------------------------


def _import_options(f):
    f = click.option(
        "--base",
        metavar="REV",
        help="Base of a new series (default: HEAD below any applied patches; for commits, the"
        " parent of the first one).",
    )(f)
    f = click.option(
        "--append", is_flag=True, help="Add the patches after those already in the series."
    )(f)
    return click.option(
        "--tag",
        "-t",
        metavar="TAG[,LABEL...]",
        help="Tag for every imported patch that does not carry one.",
    )(f)


def _print_import(ctx: click.Context, result) -> None:
    ws_dir = result.series_path.rsplit("/", 1)[0]
    for p in result.patches:
        labels = (", " + ", ".join(p.labels)) if p.labels else ""
        how = "" if p.method == "exact" else style(f"  ({p.method})", fg="yellow")
        echo(ctx, f"imported {p.name} [{_tag(p.tag)}{labels}] from {p.origin}{how}")
    for what, why in result.skipped:
        echo(ctx, f"skipped {what}: {why}")
    if result.merged:
        echo(
            ctx,
            style(
                f"{len(result.merged)} patch(es) did not apply exactly (quilt would need fuzz);"
                " each was merged three-way and written in exact form:",
                fg="yellow",
            ),
        )
        for p in result.merged:
            echo(ctx, f"  {p.name}")
            for note in p.notes:
                echo(ctx, f"    {note}")
    verb = "created" if result.created else "updated"
    echo(
        ctx,
        f"{len(result.patches)} patch(es) written to {ws_dir}; {verb} the series"
        f" (base {result.base[:12]}). Apply them with 'patchstack push --all'.",
    )


@cli.group("import")
def import_cmd() -> None:
    """Import patches from a quilt series, a range of commits or an mbox.

    Only the series directory is written: the work tree and the branch are not touched
    ('patchstack push --all' applies the patches). A series that already has patches is
    extended only with --append.

    \b
    Example:
      patchstack import quilt debian/patches --tag essential
      patchstack import commits origin/main..my-fixes --tag optimization
    """


@import_cmd.command("quilt")
@click.argument("directory", metavar="DIR")
@_import_options
@click.pass_context
def import_quilt_cmd(ctx, directory, tag, append, base) -> None:
    """Import the quilt series in DIR (its 'series' file and patches).

    Guards ('#+essential') and patchstack tag comments set tags. A patch quilt would apply
    only with fuzz is merged three-way and reported.

    \b
    Example:
      patchstack import quilt debian/patches --tag essential
    """
    from .interop import import_quilt

    _print_import(ctx, import_quilt(ctx.obj.workspace(), directory, tag, append, base))


@import_cmd.command("commits")
@click.argument("rng", metavar="RANGE")
@_import_options
@click.pass_context
def import_commits_cmd(ctx, rng, tag, append, base) -> None:
    """Import each commit of RANGE (A..B) as a patch: message, author and date kept.

    A 'Patchstack-Tag:' trailer sets a commit's tag. The branch is not moved: to apply
    the series instead of the commits, 'git reset --keep BASE' then 'patchstack push --all'.

    \b
    Example:
      patchstack import commits origin/main..my-fork --tag essential
    """
    from .interop import import_commits

    _print_import(ctx, import_commits(ctx.obj.workspace(), rng, tag, append, base))


@import_cmd.command("mbox")
@click.argument("file", metavar="FILE")
@_import_options
@click.pass_context
def import_mbox_cmd(ctx, file, tag, append, base) -> None:
    """Import the mails of FILE as 'git am' reads them (git mailsplit, git mailinfo).

    \b
    Example:
      patchstack import mbox fixes.mbox --tag diagnostic
    """
    from .interop import import_mbox

    _print_import(ctx, import_mbox(ctx.obj.workspace(), file, tag, append, base))


@cli.group("export")
def export_cmd() -> None:
    """Export the series as a quilt tree or an mbox.

    \b
    Example:
      patchstack export quilt ../for-quilt && patchstack export mbox - | git am
    """


@export_cmd.command("quilt")
@click.argument("directory", metavar="DIR")
@click.pass_context
def export_quilt_cmd(ctx, directory) -> None:
    """Write the series and its patch files to DIR (new or empty) for 'quilt push -a'.

    Every patch is first proven to apply exactly (no fuzz) on the base plus the patches
    before it; tags stay in the series comments, which quilt ignores.

    \b
    Example:
      patchstack export quilt debian/patches
    """
    from .interop import export_quilt

    ws = ctx.obj.workspace()
    result = export_quilt(ws, directory)
    echo(ctx, f"exported {len(result.names)} patch(es) to {ws.display(result.path)}")


@export_cmd.command("mbox")
@click.argument("file", metavar="FILE")
@click.pass_context
def export_mbox_cmd(ctx, file) -> None:
    """Write the series as one mail per patch to FILE ('-': standard output) for 'git am'.

    The mails carry the Patchstack-Patch and Patchstack-Tag trailers, so importing them
    again (or the commits 'git am' makes) keeps names and tags.

    \b
    Example:
      patchstack export mbox series.mbox && git am series.mbox
    """
    from .interop import export_mbox

    ws = ctx.obj.workspace()
    result, data = export_mbox(ws, file)
    if file == "-":
        click.get_binary_stream("stdout").write(data)
    else:
        echo(ctx, f"exported {len(result.names)} patch(es) to {ws.display(result.path)}")


# -- review / show --------------------------------------------------------------------------


def _render_options(f):
    f = click.option(
        "--templates",
        metavar="DIR",
        help="Folder of templates overriding the shipped ones (also: .patchstack/templates/).",
    )(f)
    f = click.option(
        "--output", "-o", metavar="FILE", help="Write to FILE instead of standard output."
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
        from .workspace import write_atomic

        write_atomic(output, text.encode("utf-8", "surrogateescape"))
    else:
        click.echo(text, nl=False, color=_color(ctx))


def _wants_color(ctx: click.Context, fmt: str, output: str | None) -> bool:
    if fmt != "text":
        return False
    if output:  # a file gets colour only when asked for
        return ctx.find_object(Options).color == "always"
    return _color(ctx) is not False  # on stdout, click.echo strips it when not a TTY


@cli.command()
@click.argument("old")
@click.argument("new")
@click.option(
    "--dir",
    "review_dir",
    metavar="PATH",
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
@click.pass_context
def review(ctx, old, new, review_dir, fmt, output, templates, as_json, verbose, full_url) -> None:
    """Review a change to the series, patch by patch: OLD and NEW are revisions or directories.

    Every patch is classified as added, dropped, renamed, moved, retagged, rebased (only its
    context or line numbers changed), changed (with the interdiff: how its own change differs)
    or unchanged, with description changes and the move of the series base.

    \b
    Example:
      patchstack review origin/main HEAD --format markdown -o review.md
      patchstack review old-patches/ patches/
    """
    import os

    from .errors import PatchstackError
    from .render import render_review, template_dirs
    from .snapshot import load_review

    opts = ctx.find_object(Options)
    git = folder = None
    try:
        ws = Options(review_dir or opts.series_dir, opts.color).workspace(write=False)
        git, folder = ws.git, ws.in_tree
    except PatchstackError:
        if not (os.path.isdir(old) and os.path.isdir(new)):
            raise
    if git is not None and folder is None and not (os.path.isdir(old) and os.path.isdir(new)):
        raise PatchstackError(
            "the series directory is outside the work tree, so it has no path in a revision",
            "give --dir as a folder inside the repository, or give two directories",
        )
    result = load_review(old, new, git, folder)
    if as_json:
        from .reviewjson import review_json

        _emit(ctx, json.dumps(review_json(result), indent=2) + "\n", output)
        return
    dirs = template_dirs(templates, git.top if git else None)
    color = _wants_color(ctx, fmt, output)
    text = render_review(
        result, fmt, dirs, color, collapse_quiet=fmt == "text" and not verbose, full_url=full_url
    )
    _emit(ctx, text, output)


@cli.command()
@click.argument("name", shell_complete=complete_patch_names)
@click.option("--rev", metavar="REV", help="Show the patch as it is in revision REV.")
@_render_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def show(ctx, name, rev, fmt, output, templates, as_json) -> None:
    """Show one patch: its header, tag, place, line counts and diff.

    \b
    Example:
      patchstack show kimi-k25-eagle3
      patchstack show nccl-logging --format html -o nccl-logging.html
    """
    from .errors import PatchstackError
    from .render import render_show, template_dirs
    from .review import make_version
    from .selection import resolve_name
    from .snapshot import from_directory, from_revision

    ws = ctx.obj.workspace(write=False)
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
        from .reviewjson import show_json

        _emit(ctx, json.dumps(show_json(version), indent=2) + "\n", output)
        return
    dirs = template_dirs(templates, ws.git.top)
    _emit(ctx, render_show(version, fmt, dirs, _wants_color(ctx, fmt, output)), output)


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
    default="text",
    show_default=True,
    help="mermaid for GitHub Markdown, dot for Graphviz.",
)
@click.option("--output", "-o", metavar="FILE", help="Write to FILE instead of standard output.")
@click.pass_context
def graph(ctx, only, except_, fmt, output) -> None:
    """Which patch leans on which: an edge where a patch touches lines an earlier one wrote.

    Computed from the patches' hunks along the series (each patch is made on the base plus
    the patches before it). With --only/--except, the patches that a shown one leans on are
    drawn too, dashed: what 'push --only' would have to carry across.

    \b
    Example:
      patchstack graph --only essential
      patchstack graph --format mermaid -o graph.mmd
      patchstack graph --format dot | dot -Tsvg > graph.svg
    """
    from .graph import FORMATS, build, subgraph

    ws = ctx.obj.workspace(write=False)
    series = ws.load_series()
    whole = build([(e, ws.read_patch(e)[1]) for e in series.entries])
    sel = _selector(None, False, only, except_)
    if sel.filtered:
        keep = [e.name for e in series.entries if sel.keeps_tag(e.tag)]
        whole = subgraph(whole, keep)
    _emit(ctx, FORMATS[fmt](whole), output)


# -- demo -------------------------------------------------------------------------------------


@cli.command()
@click.argument("directory", default="patchstack-demo", required=False, metavar="[DIR]")
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

    from .demo import run_demo

    root = os.path.abspath(directory)
    base_args = ["--color", ctx.obj.color] + (
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


def hunk_lines(h) -> list[str]:
    """One conflicting hunk: where, what the patch expected, what is there, what it wants."""
    lines = [f"  {h.path}:{h.line}:"]
    for title, body in (
        ("the patch expected", h.expected),
        ("there now", h.now),
        ("the patch wants", h.wanted),
    ):
        lines.append(f"    {title}:")
        lines += [f"      | {ln}" for ln in body] or ["      (nothing)"]
    return lines


def render_conflict(report) -> list[str]:
    lines = [f"conflict in patch {report.patch}"]
    for path in report.files:
        lines.append(f"  file {path}")
    for h in report.hunks:
        lines += hunk_lines(h)
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
