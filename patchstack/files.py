"""Writing files atomically: a temporary file in the same folder, flushed, fsynced and renamed
into place, so a reader (or a crash) sees the old bytes or the new ones, never a mix."""

from __future__ import annotations

import contextlib
import os
import tempfile

TEMP_SUFFIX_LEN = 8  # tempfile's random part


def write_atomic(path: str, data: bytes, sync: bool = True, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` atomically; ``sync=False`` skips the fsync (a restore of many
    work-tree files, which the operation log also holds). The file keeps its permission bits
    (``mode`` sets them; a new file gets 0644)."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        if mode is None:
            try:
                mode = os.stat(path).st_mode & 0o777
            except FileNotFoundError:
                mode = 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def is_temp_name(name: str) -> bool:
    """`write_atomic`'s temporary files: '.<name>.<8 random characters>'."""
    return (
        name.startswith(".")
        and len(name.rpartition(".")[2]) == TEMP_SUFFIX_LEN
        and name.count(".") >= 2
    )


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None
