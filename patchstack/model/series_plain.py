"""A parsed series as plain values (tuples, strings, numbers) and back: what the cache keeps of
a series file, so that a command on a series of 5,000 patches does not parse it again
(0.1-0.2 s) while its bytes are the same (`checkout.Checkout.load_series`)."""

from __future__ import annotations

from typing import Any

from .series import Entry, Other, Series

PlainSeries = tuple[str, tuple[tuple[Any, ...], ...]]


def to_plain(series: Series) -> PlainSeries:
    return (
        series.path,
        tuple(
            (ln.raw, ln.lineno, ln.name, ln.tag, ln.labels, ln.strip)
            if isinstance(ln, Entry)
            else (ln.raw, ln.lineno)
            for ln in series.lines
        ),
    )


def from_plain(value: Any) -> Series | None:
    """The series ``to_plain`` gave, or None when ``value`` is not one (a damaged cache)."""
    try:
        path, lines = value
        out: list[Entry | Other] = []
        for line in lines:
            if len(line) == 2:
                out.append(Other(str(line[0]), int(line[1])))
            else:
                raw, lineno, name, tag, labels, strip = line
                labels = tuple(str(label) for label in labels)
                strip = None if strip is None else int(strip)
                out.append(Entry(str(name), str(tag), labels, strip, int(lineno), str(raw)))
        return Series(tuple(out), str(path))
    except (TypeError, ValueError):
        return None
