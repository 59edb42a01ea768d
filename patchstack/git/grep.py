"""Which files of a tree hold a line as a whole line: ``git grep`` of the tree, in git's
threads, instead of every blob read into Python and searched there."""

from __future__ import annotations

from collections.abc import Sequence

from .base import GitBase, decode_path
from .process import failure


def holding_lines(git: GitBase, tree: str, lines: Sequence[str]) -> dict[str, set[str]]:
    """line -> the paths of ``tree`` that have it as one whole line (the last one may lack
    its newline), for each of ``lines`` (none empty, none with a newline or a NUL in it).
    Every file is searched as text (``-a``), no text conversion, no pathspec: git's
    fixed-string search finds the lines holding each, and only those equal to it are kept."""
    wanted = {ln.encode("utf-8", "surrogateescape"): ln for ln in dict.fromkeys(lines)}
    found: dict[str, set[str]] = {ln: set() for ln in wanted.values()}
    if not wanted:
        return found
    assert all(w and b"\n" not in w and b"\0" not in w for w in wanted)
    args = ["grep", "--no-color", "--no-column", "-a", "-F", "-n", "-z", "--no-textconv"]
    for w in wanted:
        args += ["-e", w.decode("utf-8", "surrogateescape")]
    proc = git.run(*args, tree, check=False)  # a tree id: never taken for an option
    if proc.returncode not in (0, 1):  # 1: no line found
        raise failure(args, proc.returncode, proc.stderr)
    out, at, prefix = proc.stdout, 0, tree.encode() + b":"
    while at < len(out):
        name_end = out.index(b"\0", at)  # "<tree>:<path>" NUL "<line number>" NUL line LF
        number_end = out.index(b"\0", name_end + 1)
        line_end = out.find(b"\n", number_end + 1)
        line_end = len(out) if line_end < 0 else line_end
        name, line = out[at:name_end], out[number_end + 1 : line_end]
        at = line_end + 1
        if line in wanted and name.startswith(prefix):
            found[wanted[line]].add(decode_path(name[len(prefix) :]))
    return found
