"""The verdict of each replayed patch, and the new bytes of the patch files that change.

``unchanged``: the change ``T[k-1] -> T[k]`` has the very blobs and modes of ``C[k-1] -> C[k]``,
so its diff is the same text and the file keeps its bytes (it is not even rewritten).
``upstream``: ``T[k] == T[k-1]``, the new base already contains the change. Otherwise the file
is regenerated with ``format-patch`` from a commit with the patch's own author, date and message,
so only the diff part changes: ``offset`` when every hunk has the same lines as before (only
line numbers and blob ids moved), ``merged`` when the hunks' lines changed. ``conflict``: the
merge did not resolve. ``deferred``: left out, its file kept as it was (``refresh --skip``,
``--defer-conflicts``), until ``push NAME`` brings it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..git import Git
from ..model import message, trailers
from ..model.ids import Oid
from ..model.patchfile import Patch, parse_patch
from .chain import Engine
from .replay import Done, Step


def same_hunks(a: Patch, b: Patch) -> bool:
    def key(p: Patch) -> list[tuple[str, bool, tuple[tuple[str, ...], ...]]]:
        return [(f.path, f.binary, tuple(h.lines for h in f.hunks)) for f in p.files]

    return key(a) == key(b)


@dataclass(frozen=True)
class Classified:
    verdicts: dict[str, str]
    data: dict[str, bytes]  # new bytes of the patch files that change


def classify(
    git: Git,
    engine: Engine,
    steps: Sequence[Step],
    done: Sequence[Done],
    commits: dict[str, Oid],
) -> Classified:
    by_name = {s.name: s for s in steps}
    carried = [d for d in done if not d.upstream]
    raws = git.raw_diffs(
        [(by_name[d.name].before, by_name[d.name].after) for d in carried]
        + [(d.parent, d.tree) for d in carried]
    )
    old_raw, new_raw = raws[: len(carried)], raws[len(carried) :]
    verdicts: dict[str, str] = {}
    data: dict[str, bytes] = {}
    for d in done:
        if d.upstream:
            verdicts[d.name] = "upstream"
    moved = [
        d
        for d, old, new in zip(carried, old_raw, new_raw, strict=True)
        if sorted(old) != sorted(new)
    ]
    texts = format_chain(git, commits, [d.name for d in moved])
    for d, old, new in zip(carried, old_raw, new_raw, strict=True):
        lp = engine.patch(d.name)
        if sorted(old) == sorted(new):
            verdicts[d.name] = "unchanged"
            continue
        text = trailers.strip_from_mail(texts[d.name])
        text = message.keep_head(lp.data, message.line_offset(lp.data, lp.patch.diff_lineno), text)
        if text == lp.data:
            verdicts[d.name] = "unchanged"
            continue
        fresh = parse_patch(text, d.name, lp.entry.strip_level)
        data[d.name] = text
        verdicts[d.name] = "offset" if same_hunks(lp.patch, fresh) else "merged"
    return Classified(verdicts, data)


def format_chain(git: Git, commits: dict[str, Oid], wanted: Sequence[str]) -> dict[str, bytes]:
    """format-patch output of the commits of ``wanted`` (of ``commits``): one process for
    them all when several are wanted."""
    if len(wanted) < 2:
        return {n: git.format_patch(commits[n]) for n in wanted}
    texts = git.format_commits([commits[n] for n in wanted])
    return dict(zip(wanted, texts, strict=True))
