"""Following the code stop by stop (issue 35, item 7): every stop of a refresh meets a file
upstream deleted, its functions dealt out among new files (some twice, some re-indented, one
copied into a file a patch adds). The stops, the last command's report and the series are
the same with the drift's candidates kept joined (`engine.lineindex.Joined`), kept file by
file (``PATCHSTACK_NO_DRIFT_LINES=1``) and read plainly (``PATCHSTACK_NO_LINE_INDEX=1``); a
``--skip`` reads the one joined entry, not an entry per file, and diffs no trees for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.engine import linehashes, lineindex
from patchstack.engine.relocate import NO_JOINED, PLAIN, Relocator
from patchstack.git.listings import Listings
from patchstack.store import Store

from .conftest import Repo, copy_repo
from .refresh_fixtures import Edit, fillers, series_fork, small_function, stop_by_stop


def _fork(tmp_path: Path) -> Repo:
    files = {f"a{k}.py": small_function(k) + small_function(10 + k) for k in range(1, 7)}
    # each patch edits one function of a file of its own (`y = x + k`, its line 2): a stop
    # each, none a knock-on of another
    series = [(f"p{k}", [(f"a{k}", 2, f"    y = x + {k} + 1")]) for k in range(1, 7)]
    # a patch between the stops adds a file holding f5 as a5.py had it: a candidate of the
    # stops after it (not of the drift's first tree), where f5's block is found twice
    series.insert(3, ("adds", [("n", 0, "# n\n\n" + small_function(5))]))
    dealt = [
        (
            "m1",
            0,
            "# m1\n\n"
            + small_function(1)
            + small_function(2)
            + small_function(3)
            + fillers("m1", 40),
        ),
        (
            "m2",
            0,
            "# m2\n\n"
            + small_function(4)
            + small_function(5)
            + small_function(6, "  ")
            + fillers("m2", 40),
        ),  # f6 re-indented
        ("m3", 0, "# m3\n\n" + small_function(2) + fillers("m3", 40)),  # f2 twice
        ("b", 0, "B = 2\r\n\n"),
    ]
    gone: list[Edit] = [(f"a{k}", 0, None) for k in range(1, 7)]
    return series_fork(
        tmp_path / "fork", {**files, "b.py": "B = 1\n"}, series, [("deal", gone + dealt)]
    )


def test_every_stop_is_the_same_joined_by_file_and_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _fork(tmp_path)
    by_file = copy_repo(repo.path, tmp_path / "by-file")
    plain = copy_repo(repo.path, tmp_path / "plain")
    read: list[str] = []
    each: list[int] = []
    diffed: list[object] = []
    real_read, real_each = lineindex.read_entry, lineindex.LineIndex._each
    real_diffs = Listings.raw_diffs

    def counted_read(blob, value):  # type: ignore[no-untyped-def]
        read.append(blob)
        return real_read(blob, value)

    def counted_each(self, blobs, lines):  # type: ignore[no-untyped-def]
        each.append(len(lines))
        return real_each(self, blobs, lines)

    def counted_diffs(self, pairs):  # type: ignore[no-untyped-def]
        diffed.extend(pairs if candidates else [])
        return real_diffs(self, pairs)

    candidates: list[bool] = []
    real_candidates = Relocator._read_candidates

    def reading(self, onto):  # type: ignore[no-untyped-def]
        candidates.append(True)
        try:
            return real_candidates(self, onto)
        finally:
            candidates.pop()

    monkeypatch.setattr(lineindex, "read_entry", counted_read)
    monkeypatch.setattr(lineindex.LineIndex, "_each", counted_each)
    monkeypatch.setattr(Listings, "raw_diffs", counted_diffs)
    monkeypatch.setattr(Relocator, "_read_candidates", reading)
    seen: list[tuple[int, int]] = []
    joined = stop_by_stop(repo, lambda n: seen.append((len(read), len(each), len(diffed))))
    stops = joined[0]
    assert len(stops) == 6, (stops, joined[1])
    assert sum(" relocated a" in s for s in stops) == 3, stops  # p1, p3, p4
    assert any("occur 2 times" in s for s in stops), stops  # f2, and f5 after `adds`
    # the skips: no entry read file by file but the files a patch before the stop added,
    # no pass over every file's hashes, and the candidates of a tree diffed once
    first = seen[0]
    assert len(set(read[first[0] :])) == 1 and len(each) == first[1], (read, each)  # n.py
    assert len(diffed) == 2 and len(set(diffed)) == 2, (diffed, seen)  # the first and `adds`
    store = Store(str(repo.path / ".git" / "patchstack" / "cache"))
    assert store.sizes()[lineindex.JOINED] == 2  # the hashes and one tree's candidates, kept
    monkeypatch.setenv(NO_JOINED, "1")
    assert stop_by_stop(by_file) == joined
    monkeypatch.delenv(NO_JOINED)
    monkeypatch.setenv(PLAIN, "1")
    assert stop_by_stop(plain) == joined


def test_a_skip_looks_lines_up_in_the_kept_hashes_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skip searches the drift's hashes kept joined as the entry holds them (`LineIndex._one`)
    instead of copying each candidate's out of it to join them again: only the files a
    block's longest line names are taken one by one (to look its other lines up). The stops,
    the report and the series are the same with ``PATCHSTACK_NO_WHOLE_JOINED=1`` (each
    candidate's hashes copied as the skip reads the entry)."""
    repo = _fork(tmp_path)
    each = copy_repo(repo.path, tmp_path / "each")
    copied: list[bool] = []  # (copied as the candidates are read?)
    reading: list[bool] = []
    real_packed, real_searched = linehashes.Joined.packed, lineindex.LineIndex.searched

    def counted(self, blob):  # type: ignore[no-untyped-def]
        copied.append(bool(reading))
        return real_packed(self, blob)

    def searched(self, blobs):  # type: ignore[no-untyped-def]
        reading.append(True)
        try:
            return real_searched(self, blobs)
        finally:
            reading.pop()

    monkeypatch.setattr(linehashes.Joined, "packed", counted)
    monkeypatch.setattr(lineindex.LineIndex, "searched", searched)
    whole = stop_by_stop(repo, lambda n: copied.clear() if n == 1 else None)
    by_whole = list(copied)
    monkeypatch.setenv(lineindex.NO_WHOLE, "1")
    assert stop_by_stop(each, lambda n: copied.clear() if n == 1 else None) == whole
    assert by_whole and not any(by_whole), by_whole  # (the blocks' files only)
    assert sum(copied) >= 4 * 5, copied  # m1, m2, m3, b at each of the five skips
