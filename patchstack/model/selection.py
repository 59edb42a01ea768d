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


@dataclass(frozen=True)
class Selector:
    name: str | None = None
    all: bool = False
    only: tuple[str, ...] | None = None
    except_: tuple[str, ...] | None = None

    @property
    def filtered(self) -> bool:
        return self.only is not None or self.except_ is not None

    def keeps_tag(self, tag: str, labels: Sequence[str] = ()) -> bool:
        """Does a patch with this tag and labels pass --only/--except? (A word matches the
        tag or a label, exactly.)"""
        words = {tag, *labels}
        if self.only is not None and not words & set(self.only):
            return False
        return not (self.except_ is not None and words & set(self.except_))


def parse_tag_list(text: str, option: str) -> tuple[str, ...]:
    """The comma-separated words of --only/--except (`check_words` checks them against the
    series)."""
    tags = tuple(t.strip() for t in text.split(",") if t.strip())
    if not tags:
        raise PatchstackError(f"{option} needs at least one tag", "tags: " + ", ".join(TAGS))
    return tags


def check_words(series: Series, sel: Selector) -> None:
    """Every word of --only/--except is a tag or a label of the series (exact match)."""
    labels = sorted({label for e in series.entries for label in e.labels})
    for option, words in (("--only", sel.only), ("--except", sel.except_)):
        for word in words or ():
            if word in TAGS or word in labels:
                continue
            known = "tags are exact: " + ", ".join(TAGS)
            if labels:
                known += "; labels: " + ", ".join(labels)
            from .suggest import did_you_mean

            close = did_you_mean(word, [*TAGS, *labels])
            raise PatchstackError(
                f"unknown tag '{word}' in {option} (no patch has that label either)",
                f"{close} ({known})" if close else known,
            )


def resolve_name(series: Series, name: str) -> str:
    """Accept a patch by its file name or without the ``.patch`` suffix."""
    names = series.names
    for candidate in (name, name + ".patch"):
        if candidate in names:
            return candidate
    from .suggest import did_you_mean

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
    check_words(series, sel)
    chosen = {n for n in candidates if _keeps(series, sel, n)}
    return [n for n in names if n in have or n in chosen]


def pop_target(
    series: Series, applied: Sequence[str], sel: Selector, alone: bool = False
) -> list[str]:
    """The patches to keep applied after a pop, in series order.

    ``pop NAME`` unapplies NAME and every applied patch above it, so that ``push NAME`` and
    ``pop NAME`` undo each other; ``pop NAME --alone`` only NAME, the patches above it stay;
    without a name or --all/--only/--except, the top patch goes.
    """
    check_words(series, sel)
    applied = list(applied)
    if alone and (sel.name is None or sel.all or sel.filtered):
        raise PatchstackError(
            "--alone takes one patch NAME (and no --all, --only or --except)",
            "e.g. 'patchstack pop nccl-logging --alone'",
        )
    if sel.name is not None:
        name = resolve_name(series, sel.name)
        if name not in applied:
            raise PatchstackError(f"patch '{name}' is not applied", "see 'patchstack series'")
        candidates = [name] if alone else applied[applied.index(name) :]
    elif sel.all or sel.filtered:
        candidates = applied
    else:
        candidates = applied[-1:]
    dropped = {n for n in candidates if _keeps(series, sel, n)}
    return [n for n in applied if n not in dropped]


def _keeps(series: Series, sel: Selector, name: str) -> bool:
    if name not in series:
        return sel.keeps_tag("")
    entry = series.entry(name)
    return sel.keeps_tag(entry.tag, entry.labels)
