"""Why a file diff does not fit the file it applies to, named for the user instead of guessed:
line endings that differ, a hunk written as creating a file that exists."""

from __future__ import annotations

from collections.abc import Sequence

from .diff import FileDiff


def crlf_mismatch(fd: FileDiff, old: bytes) -> str | None:
    """Why ``fd`` cannot match ``old`` when the only difference is CR LF against LF."""
    pre = [ln[1:] for h in fd.hunks for ln in h.lines if ln[:1] in (" ", "-")]
    if not pre:
        return None
    patch_cr = sum(ln.endswith("\r") for ln in pre)
    lines = old.split(b"\n")[:-1] if old.endswith(b"\n") else old.split(b"\n")
    file_cr = sum(ln.endswith(b"\r") for ln in lines)
    if patch_cr == len(pre) and lines and file_cr == 0:
        return (
            f"{fd.old_path}: the patch's lines end in CR LF (bytes 0d 0a, shown as <U+000D>)"
            " but the file's lines end in LF (0a)"
        )
    if patch_cr == 0 and lines and file_cr == len(lines):
        return (
            f"{fd.old_path}: the file's lines end in CR LF (bytes 0d 0a) but the patch's"
            " lines end in LF (0a)"
        )
    return None


def notes_for(fd: FileDiff, old: bytes | None) -> list[str]:
    """What ``fd`` cannot match in ``old`` (the file's bytes, None when it does not exist)."""
    if old is None:
        return []
    found = [crlf_mismatch(fd, old) or mixed_line_endings(fd, old), creates_an_existing_file(fd)]
    return [note for note in found if note]


def mixed_line_endings(fd: FileDiff, old: bytes) -> str | None:
    """A hunk that matches the file where it applies except for CRs at the ends of some
    lines (the patch's lines, or the file's, mix CR LF and LF): the line endings are why."""
    lines = old.split(b"\n")
    for h in fd.hunks:
        pre = [ln[1:].encode("utf-8", "surrogateescape") for ln in h.lines if ln[:1] in (" ", "-")]
        if not pre:
            continue
        at = _where_it_matches(pre, lines, max(0, h.old_start - 1))
        if at is None:
            continue
        pairs = list(zip(pre, lines[at : at + len(pre)], strict=True))
        crlf = sum(p.endswith(b"\r") and not f.endswith(b"\r") for p, f in pairs)
        lf = sum(f.endswith(b"\r") and not p.endswith(b"\r") for p, f in pairs)
        if not (crlf or lf):
            continue
        what = []
        if crlf:
            what.append(f"{crlf} end in CR LF (0d 0a) where the file's end in LF (0a)")
        if lf:
            what.append(f"{lf} end in LF (0a) where the file's end in CR LF (0d 0a)")
        return (
            f"{fd.old_path}: the hunk on line {h.lineno} of the patch matches the file at"
            f" line {at + 1} but for line endings: of its {len(pre)} lines there,"
            f" {' and '.join(what)}"
        )
    return None


def _where_it_matches(pre: list[bytes], lines: list[bytes], hint: int) -> int | None:
    """Where ``pre`` is in ``lines`` when CRs at line ends are ignored (nearest ``hint``)."""
    bare = [p.rstrip(b"\r") for p in pre]
    found = [
        k
        for k in range(len(lines) - len(pre) + 1)
        if lines[k].rstrip(b"\r") == bare[0]
        and [ln.rstrip(b"\r") for ln in lines[k : k + len(pre)]] == bare
    ]
    return min(found, key=lambda k: abs(k - hint)) if found else None


def creates_an_existing_file(fd: FileDiff) -> str | None:
    """A hunk ``@@ -0,0 +1,N @@`` under ``--- a/x`` (not ``/dev/null``) on a file that exists:
    GNU patch inserts the lines at the top of the file (zsh 5.9's ``completion-dscverify.diff``,
    already upstream, defines its function twice under quilt); git refuses, and so do we."""
    if fd.old_path is None or not fd.hunks:
        return None
    first = fd.hunks[0]
    if first.old_start != 0 or first.old_len != 0:
        return None
    return (
        f"{fd.old_path}: the hunk on line {first.lineno} of the patch is written as creating"
        " the file (@@ -0,0 @@) but the file exists; GNU patch (quilt) would put its lines"
        " at the top of the file. If the file already has the change (upstream took it), drop"
        " the patch; else regenerate it against the file"
    )


def created_but_there(made: Sequence[str], there: Sequence[str]) -> str:
    """Of the files a patch creates (``made``), those the tree has already (``there``), named:
    a patch whose new files all exist is most likely in the tree already (a Debian source
    tree kept with its patches applied: the series' base is the upstream tree without them);
    empty when there are none."""
    if not there:
        return ""
    names = ", ".join(there[:3]) + (f" and {len(there) - 3} more" if len(there) > 3 else "")
    if len(there) == len(made):
        return (
            f"every file the patch creates exists already ({names}): the base may hold the"
            " patch already (a tree kept with its patches applied: --base the tree without"
            " them)"
        )
    return f"{len(there)} of the {len(made)} files the patch creates exist already: {names}"
