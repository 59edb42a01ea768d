"""`hunks.split` reads only the lines that may be conflict markers, the text between them
whole; differential against the line-by-line reading it replaces (`hunks._split_lines`, and
``PATCHSTACK_NO_FAST_SPLIT=1``): the same parts, hunks and line numbers, or the same None, on
generated files of well-formed hunks, lines that look like markers (a heading underlined with
``=======``, ``<<<<<<<x``, a side holding a marker), files without a final newline, and
carriage returns."""

from __future__ import annotations

import random

import pytest

from patchstack.commands.refresh import hunks

from .conftest import slow_after

TEXT = [b"x = 1\n", b"\n", b"< less\n", b"= not a marker\n", b"| pipe\n", b"> quote\n"]
NEAR = [b"<<<<<<<x\n", b"=======\n", b"======= x\n", b">>>>>>>\n", b"|||||||\n", b"<<<<<<<\n"]


def _hunk(rng: random.Random) -> list[bytes]:
    def side() -> list[bytes]:
        return [rng.choice(TEXT) for _ in range(rng.randint(0, 3))]

    return [
        b"<<<<<<< upstream\n",
        *side(),
        b"||||||| base\n",
        *side(),
        b"=======\n",
        *side(),
        b">>>>>>> patch\n",
    ]


def _file(rng: random.Random) -> bytes:
    lines: list[bytes] = []
    for _ in range(rng.randint(0, 8)):
        roll = rng.random()
        if roll < 0.4:
            lines += _hunk(rng)
        elif roll < 0.5:
            lines.append(rng.choice(NEAR))
        else:
            lines += [rng.choice(TEXT) for _ in range(rng.randint(1, 4))]
    data = b"".join(lines)
    if data and rng.random() < 0.2:
        data = data[:-1]  # no final newline
    if data and rng.random() < 0.1:
        at = rng.randrange(len(data))
        data = data[:at] + rng.choice([b"\r\n", b"\r"]) + data[at:]
    return data


@pytest.mark.parametrize("seed", slow_after(range(300), 100))
def test_split_reads_what_the_line_by_line_reading_reads(seed: int) -> None:
    data = _file(random.Random(seed))
    assert hunks.split(data) == hunks._split_lines(data)


def test_the_hunks_keep_their_raw_region_and_line() -> None:
    data = b"a\n" + b"".join(_hunk(random.Random(1))) + b"b\n" + b"".join(_hunk(random.Random(2)))
    parts = hunks.split(data)
    assert parts is not None and parts == hunks._split_lines(data)
    found = [p for p in parts if isinstance(p, hunks.Hunk)]
    assert [(h.line, h.raw) for h in found] == [
        (h.line, h.raw) for h in hunks._split_lines(data) or [] if isinstance(h, hunks.Hunk)
    ]
    assert b"".join(p if isinstance(p, bytes) else p.raw for p in parts) == data


def test_the_switch_reads_line_by_line(monkeypatch) -> None:
    seen: list[bytes] = []
    plain = hunks._split_lines

    def counted(data: bytes):  # type: ignore[no-untyped-def]
        seen.append(data)
        return plain(data)

    monkeypatch.setattr(hunks, "_split_lines", counted)
    data = b"".join(_hunk(random.Random(3)))
    hunks.split(data)
    assert seen == []
    monkeypatch.setenv("PATCHSTACK_NO_FAST_SPLIT", "1")
    hunks.split(data)
    assert seen == [data]
