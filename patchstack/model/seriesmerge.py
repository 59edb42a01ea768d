"""The three-way merge of a series file, as the merge driver (``patchstack merge-driver``) makes
it when two maintainers changed the same series: each patch's line, the order, the header
comments, the ``# base:`` line and each patch's mark merged on their own, so that changes to
different patches (an append on each side, a retag here and a reorder there, a deferral here
and a rename there) merge cleanly.

A patch is followed through a rename on one side: an entry a side removed and an entry it added
in the same place (after the same surviving entry) are one patch renamed, and what the other
side changed of it (tag, labels, position, mark) applies under the new name.

What cannot merge is named, one reason a patch (`SeriesMerge.conflicts`), and the caller leaves
the file a conflict: the same patch changed differently on both sides, both sides reordering
the series differently, a patch one side deleted and the other changed, the same new name added
differently, two different bases.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from ..errors import InputError
from .marks import Deferral, Mark, Upstream, is_mark, parse_mark
from .series import Entry, Series, parse_series

T = TypeVar("T", bound=Hashable)

_BASE = "\0base\n"  # where the base line stands among the comment lines
_NAME = "\0"  # where the name stands in an entry's line


@dataclass(frozen=True)
class SeriesMerge:
    text: str | None  # the merged series file, or None when it conflicts
    conflicts: tuple[str, ...] = ()  # why, one sentence each

    @property
    def clean(self) -> bool:
        return self.text is not None


@dataclass(frozen=True)
class _Item:
    name: str
    comments: tuple[str, ...]  # the comment and blank lines right above its line
    line: str  # its line, the name replaced by `_NAME`


@dataclass(frozen=True)
class _Side:
    header: tuple[str, ...]  # comment lines above the first entry (the base line as `_BASE`)
    items: tuple[_Item, ...]
    tail: tuple[str, ...]  # comment lines below the last entry
    base: tuple[str, str | None] | None
    marks: tuple[Mark, ...]
    base_raw: str = ""  # the base line as it is written (its line ending)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.items)


def _side(series: Series) -> _Side:
    header: list[str] = []
    items: list[_Item] = []
    pending: list[str] = []
    marks: list[Mark] = []
    base_no = series.base_lineno
    base_raw = ""
    for line in series.lines:
        if isinstance(line, Entry):
            raw = line.raw or line.render()
            if not items:
                header, pending = pending, []
            items.append(_Item(line.name, tuple(pending), raw.replace(line.name, _NAME, 1)))
            pending = []
            continue
        mark = parse_mark(line.raw) if is_mark(line.raw) else None
        if mark is not None:
            marks.append(mark)
        elif base_no is not None and line.lineno == base_no:
            pending.append(_BASE)
            base_raw = line.raw
        else:
            pending.append(line.raw)
    if not items:
        header, pending = pending, []
    base = (series.base, series.base_ref) if series.base else None
    return _Side(tuple(header), tuple(items), tuple(pending), base, tuple(marks), base_raw)


def _renames(old: _Side, new: _Side) -> dict[str, str]:
    """new name -> old name, for the entries ``new`` renamed (see the module docstring): the
    one entry it removed after a surviving entry (or at the top) and the one it added there,
    with the same line but for the name."""
    kept = set(old.names) & set(new.names)

    def anchors(side: _Side, names: set[str]) -> dict[str | None, list[str]]:
        found: dict[str | None, list[str]] = {}
        anchor: str | None = None
        for name in side.names:
            if name in kept:
                anchor = name
            elif name in names:
                found.setdefault(anchor, []).append(name)
        return found

    removed = anchors(old, set(old.names) - kept)
    added = anchors(new, set(new.names) - kept)
    lines = {i.name: i.line for i in (*old.items, *new.items)}
    out = {}
    for anchor, gone in removed.items():
        came = added.get(anchor, [])
        # ``rename`` keeps the rest of the line: another tag is another patch.
        if len(gone) == 1 and len(came) == 1 and lines[gone[0]] == lines[came[0]]:
            out[came[0]] = gone[0]
    return out


def _three(base: T, ours: T, theirs: T) -> tuple[bool, T]:
    """(merged?, the value): each side's change taken when the other kept the base."""
    if ours == theirs or theirs == base:
        return True, ours
    if ours == base:
        return True, theirs
    return False, ours


def merge_series(
    base_text: str, ours_text: str, theirs_text: str, path: str = "series"
) -> SeriesMerge:
    """Merge three versions of a series file (see the module docstring). A version that does
    not read as a series is a conflict naming it."""
    sides = []
    for label, text in (("base", base_text), ("ours", ours_text), ("theirs", theirs_text)):
        try:
            sides.append(_side(parse_series(text, path)))
        except InputError as exc:
            return SeriesMerge(None, (f"the {label} version does not read as a series: {exc}",))
    return _Merger(*sides).run(path)


class _Merger:
    def __init__(self, base: _Side, ours: _Side, theirs: _Side) -> None:
        self.o, self.a, self.b = base, ours, theirs
        self.problems: list[str] = []
        self._alias: dict[str, str] = {}  # a patch both sides added alike: theirs' key -> ours'
        # Each side's names to a patch's identity: its base name, or its own for a new one.
        self.ids_a = self._ids(ours, "ours")
        self.ids_b = self._ids(theirs, "theirs")

    def _ids(self, side: _Side, label: str) -> dict[str, str]:
        renamed = _renames(self.o, side)
        base = set(self.o.names)
        return {n: n if n in base else renamed.get(n, f"{label}\0{n}") for n in side.names}

    def run(self, path: str) -> SeriesMerge:
        o_items = {i.name: i for i in self.o.items}
        a_items = {self.ids_a[i.name]: i for i in self.a.items}
        b_items = {self.ids_b[i.name]: i for i in self.b.items}
        merged: dict[str, _Item] = {}
        for key, old in o_items.items():
            item = self._item(key, old, a_items.get(key), b_items.get(key))
            if item is not None:
                merged[key] = item
        added = self._added(a_items, b_items, o_items)
        merged.update(added)
        order = self._order(merged, added)
        names = [merged[k].name for k in order]
        dupes = sorted({n for n in names if names.count(n) > 1})
        for n in dupes:
            self.problems.append(f"{n}: two different patches of that name")
        ok, header = _three(self.o.header, self.a.header, self.b.header)
        if not ok:
            self.problems.append("the header comments were changed on both sides")
        ok, tail = _three(self.o.tail, self.a.tail, self.b.tail)
        if not ok:
            self.problems.append("the comments after the last patch were changed on both sides")
        ok, base = _three(self.o.base, self.a.base, self.b.base)
        if not ok:
            self.problems.append(
                "both sides moved the base (both refreshed): refresh one side's series onto"
                " the other's base"
            )
        marks = self._marks(merged)
        if self.problems:
            return SeriesMerge(None, tuple(self.problems))
        chunks = [*header]
        for key in order:
            item = merged[key]
            chunks += [*item.comments, item.line.replace(_NAME, item.name, 1)]
        chunks += tail
        base_raw = next((s.base_raw for s in (self.a, self.b) if s.base == base and s.base_raw), "")
        text = ""
        for chunk in chunks:
            if text and not text.endswith("\n"):
                text += "\n"
            text += (base_raw or _base_line(base)) if chunk == _BASE else chunk
        try:
            series = parse_series(text, path)
            if base and series.base is None:
                series = series.with_base(base[0], base[1])
            series = series.with_marks(
                [m for m in marks if isinstance(m, Deferral)],
                [m for m in marks if isinstance(m, Upstream)],
            )
            return SeriesMerge(parse_series(series.format(), path).format())
        except InputError as exc:
            return SeriesMerge(None, (f"the merged series does not read: {exc}",))

    def _item(self, key: str, old: _Item, ours: _Item | None, theirs: _Item | None) -> _Item | None:
        if ours is None and theirs is None:
            return None
        if ours is None or theirs is None:
            kept = ours or theirs
            assert kept is not None
            if kept != old:
                who = "ours" if ours is None else "theirs"
                self.problems.append(f"{old.name}: deleted on {who}, changed on the other side")
            return None
        parts = []
        for field, what in (("name", "renamed"), ("comments", "comments"), ("line", "changed")):
            ok, value = _three(getattr(old, field), getattr(ours, field), getattr(theirs, field))
            if not ok:
                self.problems.append(
                    f"{old.name}: {what} on both sides ('{_shown(ours, field)}',"
                    f" '{_shown(theirs, field)}')"
                )
            parts.append(value)
        return _Item(parts[0], parts[1], parts[2])

    def _added(
        self, a_items: dict[str, _Item], b_items: dict[str, _Item], o_items: dict[str, _Item]
    ) -> dict[str, _Item]:
        out: dict[str, _Item] = {}
        by_name: dict[str, tuple[str, _Item]] = {}
        for items in (a_items, b_items):
            for key, item in items.items():
                if key in o_items:
                    continue
                if item.name in by_name:
                    first_key, first = by_name[item.name]
                    if first.line != item.line:
                        self.problems.append(
                            f"{item.name}: added on both sides, differently"
                            f" ('{_shown(first, 'line')}', '{_shown(item, 'line')}')"
                        )
                    # Added on both sides alike: one patch, known by ours' key.
                    self._alias[key] = first_key
                    continue
                by_name[item.name] = (key, item)
                out[key] = item
        return out

    def _order(self, merged: dict[str, _Item], added: dict[str, _Item]) -> list[str]:
        kept = [k for k in self.o.names if k in merged]
        seq_a = [self.ids_a[n] for n in self.a.names]
        seq_b = [self._alias.get(self.ids_b[n], self.ids_b[n]) for n in self.b.names]
        in_a = [k for k in seq_a if k in merged and k not in added]
        in_b = [k for k in seq_b if k in merged and k not in added]
        ok, order = _three(tuple(kept), tuple(in_a), tuple(in_b))
        if not ok:
            self.problems.append(
                "both sides reordered the series differently: "
                + ", ".join(merged[k].name for k in kept)
            )
        result = list(order)
        for seq in (seq_a, seq_b):
            anchor: str | None = None
            last = max((i for i, k in enumerate(seq) if k in merged and k not in added), default=-1)
            for i, key in enumerate(seq):
                if key in added and key not in result and i > last and last >= 0:
                    result.append(key)  # an append stays one, wherever the rest moved
                elif key in added and key not in result:
                    at = 0 if anchor is None else result.index(anchor) + 1
                    while at < len(result) and result[at] in added and result[at] not in seq:
                        at += 1  # the other side's additions here come first
                    result.insert(at, key)
                if key in result:
                    anchor = key
        return result

    def _key_b(self, name: str) -> str | None:
        key = self.ids_b.get(name)
        return None if key is None else self._alias.get(key, key)

    def _marks(self, merged: dict[str, _Item]) -> list[Mark]:
        def keyed(side: _Side, ids: Callable[[str], str | None]) -> dict[tuple[str, str], Mark]:
            out = {}
            for m in side.marks:
                key = ids(m.name)
                if key is None:
                    continue
                if isinstance(m, Deferral) and m.root:
                    m = replace(m, root=ids(m.root) or m.root)
                out[(m.KIND, key)] = replace(m, name=key)
            return out

        o = keyed(self.o, lambda n: n)
        a = keyed(self.a, lambda n: self.ids_a.get(n))
        b = keyed(self.b, self._key_b)
        out = []
        for key in sorted(set(o) | set(a) | set(b)):
            ok, mark = _three(o.get(key), a.get(key), b.get(key))
            if not ok:
                self.problems.append(
                    f"{merged[key[1]].name if key[1] in merged else key[1]}:"
                    f" its {key[0]} mark changed on both sides"
                )
            if mark is None or key[1] not in merged:
                continue
            mark = replace(mark, name=merged[key[1]].name)
            if isinstance(mark, Deferral) and mark.root in merged:
                mark = replace(mark, root=merged[mark.root].name)
            out.append(mark)
        return out


def _base_line(base: tuple[str, str | None] | None) -> str:
    if base is None:
        return ""
    return f"# base: {base[0]}" + (f" {base[1]}" if base[1] else "") + "\n"


def _shown(item: _Item, field: str) -> str:
    value = getattr(item, field)
    if field == "line":
        return str(value).replace(_NAME, item.name, 1).strip()
    if isinstance(value, Sequence) and not isinstance(value, str):
        return " | ".join(v.strip() for v in value)
    return str(value)
