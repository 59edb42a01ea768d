"""``tag NAME TAG[,LABEL...]``, ``--add-label``, ``--remove-label``: a patch's tag and labels.

Labels live in the series file only. The tag is also in the ``Patchstack-Tag:`` trailer of an
applied patch's commit: that commit and the applied ones above it are made again with the very
same trees. Given the tag the series already has, the command makes the commits agree with it
(``status`` points here when they disagree)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..errors import PatchstackError
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..model.series import parse_tags, validate_label
from ..transaction import FileWrite, Plan, publish
from .reword import Reword, reword
from .state import read_stack, require_movable


@dataclass(frozen=True)
class RetagResult:
    name: str
    old_tag: str
    tag: str
    labels: tuple[str, ...]
    commits_rewritten: bool
    head: Oid


def retag(
    ws: Checkout,
    name_text: str,
    spec: str | None,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
) -> RetagResult:
    if spec is None and not add and not remove:
        raise PatchstackError(
            "give a TAG[,LABEL...], --add-label or --remove-label",
            "e.g. 'patchstack tag oea-routing optimization,moe'",
        )
    series = ws.load_series()
    stack = read_stack(ws.git)
    name = resolve_name(series, name_text)
    entry = series.entry(name)
    tag, labels = parse_tags(spec, "TAG", 0) if spec else (entry.tag, entry.labels)
    for label in (*(labels if spec else ()), *add):
        problem = validate_label(label)
        if problem:
            raise PatchstackError(problem, "a label is one word: e.g. --add-label moe")
    for label in add:
        if label not in labels:
            labels = (*labels, label)
    missing = [label for label in remove if label not in labels]
    if missing:
        raise PatchstackError(
            f"patch '{name}' has no label '{missing[0]}'",
            "its labels: " + (", ".join(labels) if labels else "none"),
        )
    labels = tuple(label for label in labels if label not in remove)
    ap = stack.find(name)
    head = stack.head
    if ap is not None and ap.tag != tag:
        require_movable(stack)
        head = reword(ws.git, stack, {name: Reword(name, tag)})
    files: tuple[FileWrite, ...] = ()
    if (tag, labels) != (entry.tag, entry.labels):
        text = series.retagged(name, tag, labels).format()
        files = (FileWrite(ws.series_path, text.encode("utf-8", "surrogateescape")),)
    if files or head != stack.head:
        publish(ws, Plan("tag", stack.head, head, files))
    return RetagResult(name, entry.tag, tag, labels, head != stack.head, head)
