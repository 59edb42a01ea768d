"""Generate the man pages (man/patchstack.1, man/git-patchstack.1) from the click commands.

`git patchstack --help` makes git run `man git-patchstack`; the wheel installs these pages
into share/man/man1. Run this after changing a command's help; a test fails while the
committed pages differ from what this script generates.

    python tools/gen_man.py          # rewrite man/*.1
    python tools/gen_man.py --check  # exit 1 when they are out of date
"""

from __future__ import annotations

import argparse
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


def _help_text(cmd: click.Command) -> str:
    text = (cmd.help or "").replace("\b\n", "")
    return "\n".join(ln[2:] if ln.startswith("  ") else ln for ln in text.splitlines())


def _options(ctx: click.Context, cmd: click.Command) -> list[str]:
    lines = []
    for param in cmd.get_params(ctx):
        record = param.get_help_record(ctx)
        if record:
            lines += [".TP", f"\\fB{_roff(record[0])}\\fR", _roff(record[1])]
    return lines


def _walk(ctx: click.Context, group: click.Group, prefix: str) -> list[str]:
    lines = []
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        sub = click.Context(cmd, info_name=name, parent=ctx)
        usage = " ".join(cmd.collect_usage_pieces(sub))
        lines += [
            ".SS",
            f"\\fB{prefix} {name}\\fR {_roff(usage)}",
            ".nf",
            _roff(_help_text(cmd)),
            ".fi",
        ]
        lines += _options(sub, cmd)
        if isinstance(cmd, click.Group):
            lines += _walk(sub, cmd, f"{prefix} {name}")
    return lines


def render(name: str) -> str:
    ctx = click.Context(cli, info_name="patchstack")
    lines = [
        f'.TH {name.upper()} 1 "" "patchstack {__version__}" "patchstack manual"',
        ".SH NAME",
        f"{name} \\- keep a fork's local modifications as a tagged patch series",
        ".SH SYNOPSIS",
        f"\\fB{name}\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]...",
        ".SH DESCRIPTION",
        ".nf",
        _roff(_help_text(cli)),
        ".fi",
        ".SH OPTIONS",
        *_options(ctx, cli),
        ".SH COMMANDS",
        *_walk(ctx, cli, "patchstack"),
        ".SH EXIT STATUS",
        "0 done; 1 conflict (a patch does not apply or merge, or a check found one);",
        "2 bad input, usage, or a refusal that changed nothing; 130 interrupted.",
        ".SH SEE ALSO",
        "\\fBquilt\\fR(1), \\fBgit-am\\fR(1), \\fBgit-rebase\\fR(1)",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    stale = []
    for name in ("patchstack", "git-patchstack"):
        path = ROOT / "man" / f"{name}.1"
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
