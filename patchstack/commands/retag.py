"""``tag NAME TAG[,LABEL...]``, ``--add-label``, ``--remove-label``: a patch's tag and labels;
``--names A,B,C`` or ``--only``/``--except`` do it for several patches in one transaction.

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
from ..model.selection import Selector, check_words, resolve_name
from ..model.series import parse_tags, validate_label
from ..transaction import FileWrite, Plan, publish
from .reword import Reword, reword
from .state import read_stack, require_movable


@dataclass(frozen=True)
class Retagged:
    name: str
    old_tag: str
    tag: str
    labels: tuple[str, ...]
    changed: bool  # its series line or its commit changed
    rewritten: bool  # its applied commit was made again (same tree, the new tag's trailer)


@dataclass(frozen=True)
class RetagResult:
    patches: tuple[Retagged, ...]
    commits_rewritten: bool
    head: Oid


def retag(
    ws: Checkout,
    names: Sequence[str] | Selector,
    spec: str | None,
    add: Sequence[str] = (),
    remove: Sequence[str] = (),
) -> RetagResult:
    """Set ``spec`` (a tag and labels), add and remove labels, on the patches ``names`` (as
    the user wrote them) or of a --only/--except selection: one series write, the applied
    commits made again once, one entry of the operation log."""
    if spec is None and not add and not remove:
        raise PatchstackError(
            "give a TAG[,LABEL...], --add-label or --remove-label",
            "e.g. 'patchstack tag oea-routing optimization,moe'",
        )
    series = ws.load_series()
    stack = read_stack(ws.git)
    if isinstance(names, Selector):
        check_words(series, names)
        entries = [e for e in series.entries if names.keeps_tag(e.tag, e.labels)]
    else:  # in the order given, each once
        chosen = dict.fromkeys(resolve_name(series, text) for text in names)
        entries = [series.entry(name) for name in chosen]
    if not entries:
        raise PatchstackError("the selection holds no patch", "see 'patchstack series'")
    parsed = parse_tags(spec, "TAG", 0) if spec else None
    for label in (*(parsed[1] if parsed else ()), *add):
        problem = validate_label(label)
        if problem:
            raise PatchstackError(problem, "a label is one word: e.g. --add-label moe")
    done, rewords, text = [], {}, series
    for entry in entries:
        tag, labels = parsed if parsed else (entry.tag, entry.labels)
        labels = (*labels, *(label for label in dict.fromkeys(add) if label not in labels))
        missing = [label for label in remove if label not in labels]
        if missing:
            raise PatchstackError(
                f"patch '{entry.name}' has no label '{missing[0]}'",
                "its labels: " + (", ".join(labels) if labels else "none"),
            )
        labels = tuple(label for label in labels if label not in remove)
        ap = stack.find(entry.name)
        if ap is not None and ap.tag != tag:
            rewords[entry.name] = Reword(entry.name, tag)
        if (tag, labels) != (entry.tag, entry.labels):
            text = text.retagged(entry.name, tag, labels)
        changed = entry.name in rewords or (tag, labels) != (entry.tag, entry.labels)
        rewritten = entry.name in rewords
        done.append(Retagged(entry.name, entry.tag, tag, labels, changed, rewritten))
    head = stack.head
    if rewords:
        require_movable(stack)
        head = reword(ws.git, stack, rewords)
    files: tuple[FileWrite, ...] = ()
    if text is not series:
        files = (FileWrite(ws.series_path, text.format().encode("utf-8", "surrogateescape")),)
    if files or head != stack.head:
        publish(ws, Plan("tag", stack.head, head, files))
    return RetagResult(tuple(done), head != stack.head, head)
