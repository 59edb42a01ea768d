"""The manual page shipped inside the package, for `patchstack help [COMMAND]`.

pip installs the pages into the virtual environment's ``share/man/man1``, where ``man`` finds
them next to ``bin/``; uv and pipx link only the commands, so there ``man patchstack`` and
``git patchstack --help`` find nothing. The package carries the same pages
(``patchstack.man``, ``man/man1`` in a checkout): ``help`` reads them there, shows them with
``man`` on a terminal where it is installed, and otherwise as plain text made here from the
small part of roff that ``tools/gen_man.py`` writes. ``page_dir()`` is a folder to put on
``MANPATH``, which makes ``man`` and ``git patchstack --help`` work under every installer.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import textwrap
from dataclasses import dataclass

PAGE = "patchstack"


def page_dir() -> str:
    """The folder holding ``man1/`` (a MANPATH entry): in the installed package, else
    ``man/`` at the top of a checkout (an editable install, or none)."""
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, "man")
    if os.path.isdir(os.path.join(installed, "man1")):
        return installed
    return os.path.join(os.path.dirname(here), "man")


def read_page(name: str = PAGE) -> str:
    with open(os.path.join(page_dir(), "man1", f"{name}.1"), encoding="utf-8") as f:
        return f.read()


@dataclass(frozen=True)
class Page:
    """A page cut into its head (up to COMMANDS), one block per command, and its tail."""

    head: str
    commands: tuple[tuple[str, str], ...]  # ("pop", roff) and ("import quilt", roff)
    tail: str


_SUBSECTION = re.compile(r"^\.SS\n\\fBpatchstack ([^\\]+)\\fR", re.M)


def split(source: str) -> Page:
    start = source.index(".SH COMMANDS\n")
    end = source.index(".SH ", start + 1)
    body = source[start:end]
    marks = list(_SUBSECTION.finditer(body))
    blocks = tuple(
        (m.group(1).strip(), body[m.start() : marks[i + 1].start() if i + 1 < len(marks) else None])
        for i, m in enumerate(marks)
    )
    return Page(source[:start], blocks, source[end:])


def command_names(source: str) -> list[str]:
    return [name for name, _block in split(source).commands]


def command_page(source: str, words: tuple[str, ...]) -> str | None:
    """A page of its own for one command and its subcommands (``import`` holds
    ``import quilt``), or None when the page has no such command."""
    page = split(source)
    wanted = " ".join(words)
    blocks = [b for n, b in page.commands if n == wanted or n.startswith(wanted + " ")]
    if not blocks:
        return None
    title = page.head.splitlines()[0]
    return "\n".join([title, ".SH COMMANDS", *(b.rstrip("\n") for b in blocks)]) + "\n"


# -- roff to text -----------------------------------------------------------------------------

_INLINE = [("\\fB", ""), ("\\fI", ""), ("\\fR", ""), ("\\-", "-"), ("\\&", ""), ("\\e", "\\")]


def _inline(line: str) -> str:
    for code, text in _INLINE:
        line = line.replace(code, text)
    return line


def to_text(source: str, width: int = 80) -> str:
    """The page as plain text, laid out as man lays it out (section titles at the margin,
    subsections at 3, text at 7, an option's text at 14, examples unfilled)."""
    out: list[str] = []
    words: list[str] = []
    indent, extra = 7, 0  # extra: the .RS indents
    example = heading = False
    term = False  # the next line is a .TP term
    body = 7

    def flush() -> None:
        if words:
            pad = " " * (body + extra)
            # Never inside a word: '--require-status' stays whole, to copy and paste.
            lines = textwrap.wrap(
                " ".join(words),
                max(20, width - len(pad)),
                break_on_hyphens=False,
                break_long_words=False,
            )
            out.extend(pad + ln for ln in lines)
            words.clear()

    for raw in source.splitlines():
        if raw.startswith("."):
            macro, _, arg = raw[1:].partition(" ")
            if macro == "TH":
                name = arg.split()[0] + "(1)"
                out.append(f"{name}{'patchstack manual':^{max(1, width - 2 * len(name))}}{name}")
            elif macro == "SH":
                flush()
                out += ["", _inline(arg)]
                indent = body = 7
            elif macro == "SS":
                flush()
                out.append("")
                heading = True
            elif macro == "PP":
                flush()
                out.append("")
                body = indent
            elif macro == "TP":
                flush()
                term = True
            elif macro == "RS":
                flush()
                extra += int(arg or "7")
            elif macro == "RE":
                flush()
                extra = 0
            elif macro == "EX":
                flush()
                example = True
            elif macro == "EE":
                example = False
            continue
        text = _inline(raw)
        if heading:
            out.append("   " + text)
            heading, indent, body = False, 7, 7
        elif term:
            out.append(" " * (indent + extra) + text)
            term, body = False, indent + 7
        elif example:
            out.append(" " * (body + extra) + text if text else "")
        elif text.strip():
            words.extend(text.split())
        else:
            flush()
    flush()
    return "\n".join(out).strip("\n") + "\n"


# -- showing it -------------------------------------------------------------------------------


def man_program() -> str | None:
    from shutil import which

    return which("man")


def show_with_man(man: str, source: str) -> int:
    """Show ``source`` with ``man`` (its pager, its MANPAGER, its width): a path with a slash
    is a file to man-db and to mandoc alike."""
    with tempfile.TemporaryDirectory(prefix="patchstack-help-") as tmp:
        path = os.path.join(tmp, f"{PAGE}.1")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        return subprocess.run([man, path], check=False).returncode
