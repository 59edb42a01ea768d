"""Generate the man pages (man/man1/patchstack.1, man/man1/git-patchstack.1) from the click
commands.

`git patchstack --help` makes git run `man git-patchstack`; the wheel installs these pages
into share/man/man1, and ships them inside the package too (patchstack.man), where
`patchstack help` reads them under every installer (uv and pipx link no data files). Run this
after changing a command's help; a test fails while the committed pages differ from what this
script generates.

    python tools/gen_man.py          # rewrite man/man1/*.1
    python tools/gen_man.py --check  # exit 1 when they are out of date
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from patchstack import __version__  # noqa: E402
from patchstack.cli import cli  # noqa: E402


def _roff(text: str) -> str:
    out = []
    for line in text.replace("\\", "\\e").splitlines():
        line = line.replace("\b", "")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line.replace("-", "\\-"))
    return "\n".join(out)


def _help_parts(cmd: click.Command) -> tuple[list[list[str]], list[str]]:
    """A command's help as paragraphs (lists of lines) and its example lines."""
    lines = [ln for ln in inspect.cleandoc(cmd.help or "").splitlines() if ln.strip() != "\b"]
    examples: list[str] = []
    at = next((i for i, ln in enumerate(lines) if ln.strip() == "Example:"), None)
    if at is not None:
        examples = [ln.strip() for ln in lines[at + 1 :] if ln.strip()]
        lines = lines[:at]
    paragraphs: list[list[str]] = [[]]
    for ln in lines:
        if ln.strip():
            paragraphs[-1].append(ln.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p], examples


def _describe(cmd: click.Command) -> list[str]:
    """Paragraphs as filled text, then the examples as an indented example block."""
    paragraphs, examples = _help_parts(cmd)
    out: list[str] = []
    for i, para in enumerate(paragraphs):
        if i:
            out.append(".PP")
        out.append(_roff(" ".join(para)))
    if examples:
        out += [".PP", "Example:", ".RS 4", ".EX", *map(_roff, examples), ".EE", ".RE"]
    return out


def _options(ctx: click.Context, cmd: click.Command) -> list[str]:
    lines = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record:
            lines += [".TP", f"\\fB{_roff(record[0])}\\fR", _roff(record[1])]
    return lines


def _walk(ctx: click.Context, group: click.Group, prefix: str) -> list[str]:
    lines = []
    aliases: dict[str, list[str]] = {}  # a command's other names, listed with it once
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is not None and cmd.name and name != cmd.name:
            aliases.setdefault(cmd.name, []).append(name)
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden or name != cmd.name:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        usage = " ".join(cmd.collect_usage_pieces(sub))
        also = "".join(f" (also: \\fB{prefix} {a}\\fR)" for a in aliases.get(name, []))
        lines += [".SS", f"\\fB{prefix} {name}\\fR {_roff(usage)}{also}", *_describe(cmd)]
        lines += _options(sub, cmd)
        if isinstance(cmd, click.Group):
            lines += _walk(sub, cmd, f"{prefix} {name}")
    return lines


def _items(pairs: list[tuple[str, str]]) -> list[str]:
    out = []
    for term, text in pairs:
        out += [".TP", f"\\fB{_roff(term)}\\fR", _roff(text)]
    return out


EXIT_STATUS = [
    ("0", "Done."),
    (
        "1",
        "A conflict: a patch does not apply or merge (push changes nothing; refresh stops at"
        " a reported point), check found a conflict, or status found that the stack"
        " disagrees with the series.",
    ),
    ("2", "Bad input or usage, or refused to overwrite or lose something; nothing changed."),
    (
        "130, 143, 129",
        "Interrupted by Ctrl-C, SIGTERM or SIGHUP (a closed terminal), after finishing or"
        " rolling back the step.",
    ),
]

ENVIRONMENT = [
    ("PATCHSTACK_DIR", "The series directory, when --dir is not given."),
    (
        "NO_COLOR, FORCE_COLOR, CLICOLOR_FORCE, TERM",
        "Colour (when neither --color nor git config color.patchstack or color.ui says"
        " always or never): NO_COLOR set, no colour; FORCE_COLOR or CLICOLOR_FORCE set (not"
        " 0), colour even in a pipe; else colour on a terminal, unless TERM=dumb.",
    ),
    (
        "GIT_PAGER, PAGER, LESS",
        "The pager, as git chooses it: GIT_PAGER, git config core.pager, PAGER, else less;"
        " LESS=FRX unless LESS is set. 'cat' or an empty value pages nothing.",
    ),
    (
        "PATCHSTACK_NO_SCRATCH",
        "When set, a replay writes the objects it may throw away into the repository, not"
        " into a scratch store in /dev/shm (for a /dev/shm that is full).",
    ),
    (
        "GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE",
        "As for git: patchstack runs git and finds the repository as git does.",
    ),
    (
        "PATCHSTACK_PROGRESS_DELAY",
        "Seconds a command runs before its progress shows on a terminal (default 1).",
    ),
    ("_PATCHSTACK_COMPLETE", "Set by the shell completion scripts (patchstack completion)."),
]

FILES = [
    (
        "patches/series",
        "The series file: one patch a line, 'name.patch [-pN] # tag[, label...]', and the"
        " '# base:' header. The folder is patches/ at the top of the work tree, or --dir,"
        " PATCHSTACK_DIR, or git config patchstack.dir.",
    ),
    ("patches/*.patch", "The patch files, in git format-patch form."),
    (
        ".patchstack/templates/",
        "Templates (review.md, review.html, review.txt, show.*) that replace the shipped"
        " ones for review and show.",
    ),
    (
        "$GIT_COMMON_DIR/patchstack/lock",
        "The lock every command takes; a second command is refused at once.",
    ),
    (
        "refs/patchstack/oplog",
        "The operation log (one commit per command) that log, undo and redo walk.",
    ),
    (
        "git config patchstack.dir, patchstack.snapshotMaxSize",
        "The series directory; the largest untracked file the operation log keeps.",
    ),
]

EXAMPLES = [
    "# upstream moved: fetch it, see what collides, then rebase the series onto it",
    "git fetch",
    "patchstack status",
    "patchstack check --onto origin/main",
    "patchstack refresh --onto origin/main",
    "# a baseline without the diagnostics and optimizations, then everything back",
    "patchstack pop --only diagnostic,optimization",
    "patchstack push --all",
    "# review a pull request that changes the series",
    "patchstack review origin/main HEAD --format markdown -o review.md",
]


def render(name: str) -> str:
    ctx = click.Context(cli, info_name="patchstack")
    lines = [
        f'.TH {name.upper()} 1 "" "patchstack {__version__}" "patchstack manual"',
        ".SH NAME",
        f"{name} \\- keep a fork's local modifications as a tagged patch series",
        ".SH SYNOPSIS",
        f"\\fB{name}\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        *_describe(cli),
        ".SH OPTIONS",
        *_options(ctx, cli),
        ".SH COMMANDS",
        *_walk(ctx, cli, "patchstack"),
        ".SH EXIT STATUS",
        *_items(EXIT_STATUS),
        ".SH ENVIRONMENT",
        *_items(ENVIRONMENT),
        ".SH FILES",
        *_items(FILES),
        ".SH EXAMPLES",
        ".RS 4",
        ".EX",
        *map(_roff, EXAMPLES),
        ".EE",
        ".RE",
        ".SH SEE ALSO",
        "\\fBquilt\\fR(1), \\fBgit-am\\fR(1), \\fBgit-rebase\\fR(1), \\fBgit-range-diff\\fR(1)",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    # The pages lived in man/ itself before they moved to man/man1/ (a MANPATH folder).
    stale += [str(p.relative_to(ROOT)) + " (moved to man/man1/)" for p in ROOT.glob("man/*.1")]
    for name in ("patchstack", "git-patchstack"):
        path = ROOT / "man" / "man1" / f"{name}.1"
        text = render(name)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text)
    if stale:
        print("out of date: " + ", ".join(stale) + " (run python tools/gen_man.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
