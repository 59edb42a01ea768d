"""Terminal output: colour, styles, progress, completion, and the one conflict renderer."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Any)


def color_enabled(ctx: click.Context | None = None, err: bool = False) -> bool:
    """Whether this command's output (standard error with ``err``) is coloured
    (`terminal.Terminal.wants_color`)."""
    from .terminal import terminal

    return terminal().wants_color(err)


def color_asked() -> bool:
    """``--color=always`` on the command line (what a file written with -o gets colour by)."""
    from .terminal import terminal

    return terminal().color == "always"


# The characters made visible in this command's output, for one warning at its end.
REPLACED: dict[str, None] = {}

_OUR_COMMAND = re.compile(r"(['`]|&& )patchstack(?= )")


def as_invoked(text: str) -> str:
    """A hint's ``'patchstack ...'`` as the user ran it: ``'git patchstack ...'`` under git."""
    from .app import program

    name = program()
    return text if name == "patchstack" else _OUR_COMMAND.sub(rf"\1{name}", text)


def out(
    text: str = "",
    err: bool = False,
    color: bool | None = None,
    nl: bool = True,
    verbatim: bool = False,
) -> None:
    """Write to the terminal: every control and invisible character that came from a patch,
    a commit or a file is made visible (`safe_text`); patchstack's own colour is kept where
    colour is wanted (decided only for a line that has some). The commands named in a hint
    are named as the user ran patchstack, unless ``verbatim`` (rendered patches, reviews)."""
    from ..safe_text import safe_terminal
    from .progress import pause

    pause()  # a progress line on the terminal ends first
    safe, found = safe_terminal(text if verbatim else as_invoked(text))
    REPLACED.update(dict.fromkeys(found))
    if color is None:
        color = "\x1b[" in safe and color_enabled(err=err)
    click.echo(safe, err=err, color=color, nl=nl)


JSON_VERSION = 1  # counts incompatible changes of a --json shape; keys are only ever added


def json_text(doc: Any, version: int = JSON_VERSION) -> str:
    """A ``--json`` document: an object carries ``version`` first; a list (``log``,
    ``worktree --list``) carries it in each entry, so the list keeps its shape."""
    import json

    if isinstance(doc, list):
        doc = [{"version": version, **entry} for entry in doc]
    elif "version" not in doc:
        doc = {"version": version, **doc}
    return json.dumps(doc, indent=2)


def echo(ctx: click.Context, text: str = "", err: bool = False) -> None:
    out(text, err)


def page(ctx: click.Context) -> None:
    """From here on, the command's output goes to the pager, if it pages (`terminal`)."""
    from .terminal import terminal

    terminal().page(ctx.info_name)


def style(text: str, **kw: Any) -> str:
    from ..safe_text import mark_style

    return mark_style(click.style(text, **kw))


def _completion_place(ctx: click.Context) -> str | None:
    """Completion runs without the group's callback: go where ``-C`` says, and return the
    series directory ``--dir`` names."""
    import os

    root = ctx.find_root()
    if not root.meta.get("patchstack.moved"):
        root.meta["patchstack.moved"] = True
        for folder in root.params.get("chdir") or ():
            if folder:
                try:
                    os.chdir(folder)
                except OSError:
                    break
    found = root.params.get("series_dir")
    return found if isinstance(found, str) else None


def _series_for_completion(ctx: click.Context) -> Any:
    """The series file of the checkout, or None (completion is silent on any error)."""
    try:
        from ..checkout import open_checkout

        ws = open_checkout(_completion_place(ctx))
        try:
            return ws.load_series()
        finally:
            ws.git.close()
    except Exception:
        return None


def _patch_items(ctx: click.Context, incomplete: str, applied: bool | None) -> list[Any]:
    from click.shell_completion import CompletionItem

    from ..commands.terminal import completion_patches

    found = completion_patches(_completion_place(ctx), applied)
    return [CompletionItem(name, help=tag) for name, tag in found if name.startswith(incomplete)]


def complete_patch_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of patch names from the series file (silent on any error)."""
    return _patch_items(ctx, incomplete, None)


def complete_applied(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """The applied patches (what ``pop NAME`` can take)."""
    return _patch_items(ctx, incomplete, True)


def complete_unapplied(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """The patches not applied (what ``push NAME`` can take)."""
    return _patch_items(ctx, incomplete, False)


def complete_revisions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Branches, remote branches, tags and HEAD-like revisions; after ``A..`` (a range), the
    revision after it."""
    from click.shell_completion import CompletionItem

    from ..commands.terminal import completion_revisions

    _completion_place(ctx)
    head, dots, last = incomplete.rpartition("..")
    prefix = head + dots
    return [CompletionItem(prefix + rev) for rev in completion_revisions() if rev.startswith(last)]


def complete_rev_or_dir(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """A revision, or a folder (the shell completes folder names when no revision matches)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="dir"), *complete_revisions(ctx, param, incomplete)]


def complete_tags(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """Shell completion of comma-separated tag lists: the last item is completed."""
    from click.shell_completion import CompletionItem

    from ..model.series import TAGS

    head, _, last = incomplete.rpartition(",")
    prefix = head + "," if head else ""
    done = set(head.split(","))
    words = list(TAGS)
    if param.name in ("only", "except_"):  # selectors take the series' labels too
        series = _series_for_completion(ctx)
        labels = {label for e in series.entries for label in e.labels} if series else set()
        words += sorted(labels)
    return [CompletionItem(prefix + t) for t in words if t.startswith(last) and t not in done]


def tag_filter_options(f: F, only_help: str) -> F:
    """``--only TAGS`` and ``--except TAGS``, the selectors every command spells the same."""
    f = click.option(
        "--except",
        "except_",
        metavar="TAGS",
        shell_complete=complete_tags,
        help="Leave out patches with these tags (comma-separated).",
    )(f)
    return click.option("--only", metavar="TAGS", shell_complete=complete_tags, help=only_help)(f)


def tag_text(tag: str | None) -> str:
    colours = {"essential": "green", "diagnostic": "cyan", "optimization": "magenta"}
    return style(tag or "?", fg=colours.get(tag or "", "red"))


_VERDICT_COLOURS = {
    "unchanged": "bright_black",
    "offset": "cyan",
    "merged": "yellow",
    "conflict": "red",
    "relocated": "red",
    "deferred": "red",
    "upstream": "magenta",
    "no-op": "bright_black",
    "unknown": "yellow",
}


CONFLICTING = ("conflict", "relocated")  # a relocation is a proposal: still a conflict


def verdict(v: Any) -> str:
    return verdict_word(v.verdict)


def verdict_word(word: str) -> str:
    return style(f"{word:<9}", fg=_VERDICT_COLOURS.get(word))


OFFSETS_SHOWN = 10  # "offset" lines listed without --verbose: only line numbers moved
DEFERRED_SHOWN = 5  # "deferred" lines listed at a stop without --verbose: the latest ones


def listed_verdicts(
    verdicts: Any, verbose: bool, summarized: bool = False
) -> tuple[list[Any], str | None]:
    """The verdicts worth a line each: not ``unchanged`` (unless resolved), and of the
    ``offset`` ones (only line numbers moved) the first `OFFSETS_SHOWN`, so that the merged,
    conflicting and upstream patches of a long series stay in sight (all with ``verbose``);
    and the line that stands for the offset ones left out, if any."""
    shown: list[Any] = []
    offsets = 0
    for v in verdicts:
        if v.verdict == "unchanged" and not (verbose or getattr(v, "resolved", False)):
            continue
        if v.verdict in CONFLICTING and summarized and not verbose:
            continue  # the conflict summary lists them, with their upstream commit
        if v.verdict == "offset" and not verbose:
            offsets += 1
            if offsets > OFFSETS_SHOWN:
                continue
        shown.append(v)
    left_out = offsets - OFFSETS_SHOWN
    more = f"  {verdict_word('offset')} ... and {left_out} more (--verbose lists them)"
    return shown, more if left_out > 0 else None


def earlier_deferred(verdicts: Any, elsewhere: Any) -> tuple[list[Any], str | None]:
    """At a stop: the verdicts without the ``deferred`` ones before the latest
    `DEFERRED_SHOWN` (a refresh stopping at every conflict of a long series listed each
    earlier stop's patch again), and the line that counts them; those ``elsewhere`` (named
    by the deferred summary) are neither listed nor counted here."""
    deferred = [v for v in verdicts if v.verdict == "deferred" and v.name not in elsewhere]
    hidden = {id(v) for v in deferred[:-DEFERRED_SHOWN]}
    if not hidden:
        return list(verdicts), None
    line = (
        f"  {verdict_word('deferred')} {len(hidden)} earlier patch(es)"
        " (--verbose lists them; 'patchstack status' marks each)"
    )
    return [v for v in verdicts if id(v) not in hidden], line


def verdict_counts(verdicts: Any) -> str:
    """``7 patches: 4 unchanged, 2 offset, 1 merged`` (in the order of the verdicts' words)."""
    words = [v.verdict for v in verdicts]
    parts = [f"{words.count(w)} {w}" for w in _VERDICT_COLOURS if w in words]
    n = len(words)
    return f"{n} patch{'es' if n != 1 else ''}" + (": " + ", ".join(parts) if parts else "")


LINE_WIDTH = 100  # characters of patch names one summary line lists without --verbose
SUBJECT_SHOWN = 50  # characters of an upstream subject on a summary line without --verbose


def some_names(
    names: Any,
    verbose: bool,
    most: int = 3,
    width: int = LINE_WIDTH,
    noun: tuple[str, str] | None = None,
) -> str:
    """``a.patch, b.patch and 5 more``: the one rule for a summary line that names patches,
    files or hunks (a root's knock-ons, the unselected patches a conflict needs, the files and
    patches an upstream commit touches, the hunks a record settled). Without ``verbose`` the
    first names, at most ``most`` of them, while they fit in ``width`` characters, and never
    fewer than one; how many more, counted (``noun``: what they are, one and many: ``and 1
    more file``). With ``verbose`` (and in ``--json``) every name."""
    names = list(names)
    listed = names[:1]
    if verbose:
        listed = names
    else:
        for name in names[1:most]:
            if len(", ".join([*listed, name])) > width:
                break
            listed.append(name)
    rest = len(names) - len(listed)
    what = f" {noun[0] if rest == 1 else noun[1]}" if noun else ""
    more = f" and {rest} more{what}" if rest else ""
    return ", ".join(listed) + more


def fitted(text: str, most: int, verbose: bool) -> str:
    """``text`` cut to ``most`` characters (its last three ``...``) without ``verbose``; whole
    with it. Only prose, such as an upstream commit's subject whose commit id the line keeps:
    never a name (a patch, a path), which `some_names` leaves whole or counts."""
    if verbose or len(text) <= most:
        return text
    return text[: most - 3].rstrip() + "..."


def names_line(verb: str, names: Any, verbose: bool, shown: int = 10, where: str = "") -> str:
    """``popped 200 patch(es): a, b, c and 197 more (--verbose lists them)``: `some_names`, at
    most ``shown`` (all of them with --verbose)."""
    names = list(names)
    listed = some_names(names, verbose, shown)
    hint = " (--verbose lists them)" if listed != ", ".join(names) else ""
    return f"{verb} {len(names)} patch(es){where}: {listed}{hint}"


def selector(name: str | None, all_: bool, only: str | None, except_: str | None) -> Any:
    from ..errors import PatchstackError
    from ..model.selection import Selector, parse_tag_list

    if name and all_:
        raise PatchstackError("give a patch NAME or --all, not both")
    return Selector(
        name,
        all_,
        parse_tag_list(only, "--only") if only is not None else None,
        parse_tag_list(except_, "--except") if except_ is not None else None,
    )
