"""Line endings that differ between a patch and the file it applies to: named, not guessed."""

from __future__ import annotations

from .patchfile import FileDiff


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
