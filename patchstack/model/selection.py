"""Selectors: which patches a command acts on (names, --all, --only TAGS, --except TAGS).

Pure functions over the series order and the set of applied patches. The stack is always kept
in series order, so a command's outcome is fully described by the set of patches that should be
applied afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PatchstackError
from .series import TAGS, Series
from .suggest import did_you_mean


@dataclass(frozen=True)
class Selector:
    name: str | None = None
    all: bool = False
    only: tuple[str, ...] | None = None
    except_: tuple[str, ...] | None = None

    @property
    def filtered(self) -> bool:
        return self.only is not None or self.except_ is not None

    def keeps_tag(self, tag: str) -> bool:
        if self.only is not None and tag not in self.only:
            return False
        return not (self.except_ is not None and tag in self.except_)


def parse_tag_list(text: str, option: str) -> tuple[str, ...]:
    tags = tuple(t.strip() for t in text.split(",") if t.strip())
    if not tags:
        raise PatchstackError(f"{option} needs at least one tag", "tags: " + ", ".join(TAGS))
    for tag in tags:
        if tag not in TAGS:
            exact = "tags are exact: " + ", ".join(TAGS)
            close = did_you_mean(tag, TAGS)
            raise PatchstackError(
                f"unknown tag '{tag}' in {option}", f"{close} ({exact})" if close else exact
            )
    return tags


def resolve_name(series: Series, name: str) -> str:
    """Accept a patch by its file name or without the ``.patch`` suffix."""
    names = series.names
    for candidate in (name, name + ".patch"):
        if candidate in names:
            return candidate
    close = did_you_mean(name.removesuffix(".patch"), [n.removesuffix(".patch") for n in names])
    hint = f"{close} (see 'patchstack series')" if close else "see 'patchstack series'"
    raise PatchstackError(f"no patch named '{name}' in the series", hint)


def push_target(series: Series, applied: Sequence[str], sel: Selector) -> list[str]:
    """The patches to have applied after a push, in series order."""
    names = list(series.names)
    have = set(applied)
    if sel.name is not None:
        upto = names.index(resolve_name(series, sel.name))
        candidates = names[: upto + 1]
    elif sel.all or sel.filtered:
        candidates = names
    else:  # the next unapplied patch
        nxt = next((n for n in names if n not in have), None)
        candidates = [nxt] if nxt else []
    tags = {e.name: e.tag for e in series.entries}
    chosen = {n for n in candidates if sel.keeps_tag(tags[n])}
    return [n for n in names if n in have or n in chosen]


def pop_target(series: Series, applied: Sequence[str], sel: Selector) -> list[str]:
    """The patches to keep applied after a pop, in series order.

    ``pop NAME`` unapplies NAME and every applied patch above it, so that ``push NAME`` and
    ``pop NAME`` undo each other; without a name or --all/--only/--except, the top patch goes.
    """
    tags = {e.name: e.tag for e in series.entries}
    applied = list(applied)
    if sel.name is not None:
        name = resolve_name(series, sel.name)
        if name not in applied:
            raise PatchstackError(f"patch '{name}' is not applied", "see 'patchstack series'")
        candidates = applied[applied.index(name) :]
    elif sel.all or sel.filtered:
        candidates = applied
    else:
        candidates = applied[-1:]
    dropped = {n for n in candidates if sel.keeps_tag(tags.get(n, ""))}
    return [n for n in applied if n not in dropped]
