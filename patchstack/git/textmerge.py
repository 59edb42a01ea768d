"""Three-way merges of one file's text (``git merge-file``), for the series merge driver: no
repository, no object database; the three versions are written to a temporary folder."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

from .process import failure, run_git


def merge_text(
    ours: bytes,
    base: bytes,
    theirs: bytes,
    labels: Sequence[str] = ("ours", "base", "theirs"),
    marker_size: int = 7,
) -> tuple[bytes, int]:
    """(the merged bytes, the number of conflict regions: diff3-style markers labelled
    ``labels``, ``|||||||`` with the base)."""
    with tempfile.TemporaryDirectory(prefix="patchstack-merge-") as folder:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(folder, name)
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        ours_label, base_label, theirs_label = labels
        args = ["merge-file", "-p", "--diff3", f"--marker-size={marker_size}"]
        args += ["-L", ours_label, "-L", base_label, "-L", theirs_label, *paths]
        proc = run_git(args, cwd=folder, check=False)
    if proc.returncode < 0 or proc.returncode > 127:
        raise failure(args, proc.returncode, proc.stderr)
    return proc.stdout, proc.returncode
