"""The conflict hunk as a key (`commands.refresh.hunks`), normalised as git's rerere does:
labels dropped, the two sides sorted; cut from a merged file and put back byte for byte."""

from __future__ import annotations

from patchstack.commands.refresh.hunks import Hunk, apply, decompose, key_of, split

MERGED = (
    b"a\n"
    b"<<<<<<< 1f2e3d (ours)\nup\n||||||| base label\nold\n=======\nmine\n>>>>>>> 9a8b7c\n"
    b"b\n=======\nc\n"  # a heading's underline outside a hunk is text
    b"<<<<<<< x\nup 2\n||||||| y\nold 2\n=======\nmine 2\n>>>>>>> z\n"
)


def test_the_key_ignores_labels_and_which_side_is_ours() -> None:
    parts = split(MERGED)
    assert parts is not None
    first, second = (p for p in parts if isinstance(p, Hunk))
    assert (first.ours, first.base, first.theirs, first.line) == (b"up\n", b"old\n", b"mine\n", 2)
    relabelled = MERGED.replace(b"1f2e3d (ours)", b"HEAD").replace(b"9a8b7c", b"patch")
    again = split(relabelled)
    assert again is not None and [p.key for p in again if isinstance(p, Hunk)] == [
        first.key,
        second.key,
    ]
    assert key_of(b"up\n", b"old\n", b"mine\n") == key_of(b"mine\n", b"old\n", b"up\n")
    assert key_of(b"up\n", b"old\n", b"mine\n") != key_of(b"up\n", b"older\n", b"mine\n")


def test_a_resolution_is_cut_into_hunks_and_applied_back_exactly() -> None:
    parts = split(MERGED)
    assert parts is not None
    resolved = b"a\nup and mine\nb\n=======\nc\n\nboth 2\nlines\n"
    pieces = decompose(parts, resolved)
    assert pieces is not None
    assert [r for _h, r in pieces] == [b"up and mine\n", b"\nboth 2\nlines\n"]
    applied = apply(parts, {h.key: r for h, r in pieces})
    assert applied == (resolved, [2, 6])
    assert decompose(parts, resolved.replace(b"b\n", b"b changed\n")) is None  # text edited
    assert apply(parts, {pieces[0][0].key: b"x\n"}) is None  # a hunk without a record


def test_markers_that_do_not_read_as_git_writes_them_are_not_cut() -> None:
    assert split(b"a\n<<<<<<< x\nup\n=======\nmine\n>>>>>>> z\n") is None  # no base part
    assert split(MERGED.replace(b"=======\nmine\n", b"=======\n=======\nmine\n", 1)) is None
    assert split(b"no conflict\n") is None


def _split_line_by_line(data: bytes) -> list[object] | None:
    """`split` as it was before its shortcut for lines that cannot be markers: every line
    compared with every marker (the reference the shortcut must agree with)."""
    from patchstack.commands.refresh.hunks import _BASE, _CLOSE, _OPEN, _SEP, _marker

    parts: list[object] = []
    text: list[bytes] = []
    sides: list[list[bytes]] = []
    region: list[bytes] = []
    start = 0
    for n, line in enumerate(data.splitlines(keepends=True), start=1):
        state = len(sides)
        if state or _marker(line, _OPEN):
            region.append(line)
        if _marker(line, _OPEN):
            if state:
                return None
            sides, start, region = [[]], n, [line]
        elif _marker(line, _BASE):
            if state != 1:
                return None
            sides.append([])
        elif _marker(line, _SEP) and state:
            if state != 2:
                return None
            sides.append([])
        elif _marker(line, _CLOSE):
            if state != 3:
                return None
            if text:
                parts.append(b"".join(text))
                text = []
            ours, base, theirs = (b"".join(s) for s in sides)
            parts.append(Hunk(ours, base, theirs, start, b"".join(region)))
            sides, region = [], []
        elif state:
            sides[-1].append(line)
        else:
            text.append(line)
    if sides or not any(isinstance(p, Hunk) for p in parts):
        return None
    if text:
        parts.append(b"".join(text))
    return parts


def test_split_skips_lines_that_cannot_be_markers_with_the_same_parts() -> None:
    """(issue 35: a stop's files split without comparing every line with every marker)"""
    import random

    pieces = [
        b"<<<<<<< up\n",
        b"||||||| base\n",
        b"=======\n",
        b">>>>>>> mine\n",
        b"<<<<<<<\n",
        b"=======\r\n",
        b"|x\n",
        b"<p>\n",
        b"==\n",
        b">>> x\n",
        b"code\n",
        b"\n",
        b"\r\n",
        b"",
        b"a\rb\n",
        b"<",
        b"=",
        b"tail",
    ]
    for seed in range(400):
        rng = random.Random(seed)
        conflict = [b"<<<<<<< up\n", b"u\n", b"||||||| base\n", b"b\n", b"=======\n", b"m\n"]
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(30)))
        if seed % 2:
            data += b"".join(conflict) + b">>>>>>> mine\n" + data
        got, want = split(data), _split_line_by_line(data)
        assert got == want, seed
        raws = [p.raw for p in got or [] if isinstance(p, Hunk)]
        assert raws == [p.raw for p in want or [] if isinstance(p, Hunk)], seed


def _relabel_line_by_line(data: bytes, names: dict[str, str], base_label: str) -> bytes:
    """`relabel` as it read every line (the reference its one search must agree with)."""
    import re

    out = []
    for line in data.split(b"\n"):
        for marker in (b"<<<<<<< ", b">>>>>>> "):
            if line.startswith(marker):
                label = line[len(marker) :].decode("ascii", "replace").strip()
                line = marker + names.get(label, label).encode("utf-8", "surrogateescape")
        if line.startswith(b"||||||| ") and re.fullmatch(rb"[0-9a-f]{4,64}", line[8:]):
            line = b"||||||| " + base_label.encode("utf-8", "surrogateescape")
        out.append(line)
    return b"\n".join(out)


def test_relabel_in_one_search_writes_what_the_line_by_line_reading_wrote() -> None:
    """(issue 35: a stop's 91 conflicted files relabelled without a loop over their lines)"""
    import random

    from patchstack.model.conflict import relabel

    names = {"abc1234": "upstream (new base)", "def5678": "patch x.patch", "é": "\udcff"}
    pieces = [
        b"<<<<<<< abc1234\n",
        b">>>>>>> def5678\n",
        b"||||||| 0123abcd\n",
        b"=======\n",
        b"<<<<<<< abc1234\r\n",
        b">>>>>>>  def5678 \n",
        b"||||||| 0123ABCD\n",
        b"||||||| 012\n",
        b"||||||| 0123abcd\r\n",
        b"<<<<<<< \xc3\xa9\n",
        b"<<<<<<< other\n",
        b"<<<<<<<\n",
        b"code\n",
        b"\n",
        b"x <<<<<<< abc1234\n",
        b">>>>>>> \xff\n",
        b"||||||| " + b"a" * 65,
        b"<<<<<<< abc1234",
        b"\r",
    ]
    for seed in range(500):
        rng = random.Random(seed)
        data = b"".join(rng.choice(pieces) for _ in range(rng.randrange(12)))
        want = _relabel_line_by_line(data, names, "base \xe9")
        assert relabel(data, names, "base \xe9") == want, (seed, data)


def _regions_line_by_line(path: str, text: str) -> list[object]:
    """`marked_regions` as it split the whole file (the reference)."""
    from patchstack.model.conflict import ConflictHunk, _openings

    hunks: list[object] = []
    lines = text.split("\n")
    i = 0
    for at, _offset in _openings(text):
        if at < i:
            continue
        start = i = at + 1
        now: list[str] = []
        expected: list[str] = []
        wanted: list[str] = []
        part = now
        while i < len(lines) and not lines[i].startswith(">>>>>>>"):
            if lines[i].startswith("|||||||"):
                part = expected
            elif lines[i] == "=======":
                part = wanted
            else:
                part.append(lines[i])
            i += 1
        i += 1
        hunks.append((ConflictHunk(path, start, tuple(expected), tuple(now), tuple(wanted)), i))
    return hunks


def test_marked_regions_read_from_the_openings_are_the_whole_file_reading() -> None:
    """(issue 35: only the regions of a stop's conflicted files are split into lines)"""
    import random

    from patchstack.model.conflict import marked_regions

    pieces = [
        "<<<<<<< up\n",
        "||||||| base\n",
        "=======\n",
        ">>>>>>> mine\n",
        "<<<<<<<\n",
        ">>>>>>>",
        "<<<<<<< x",
        "=======\r\n",
        "code\n",
        "\n",
        "x <<<<<<< y\n",
        ">>>>>>>>\n",
        "|||||||\n",
        "a\rb\n",
        "tail",
        "<<<<<<<<\n",
    ]
    for seed in range(600):
        rng = random.Random(seed)
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(16)))
        assert marked_regions("f", text) == _regions_line_by_line("f", text), (seed, text)
