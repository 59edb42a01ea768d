"""The verdicts of the patches the new base holds, kept from one command of a refresh stop by
stop for the next (`commands.refresh.taken.KeptVerdicts`): each stop judged every patch
upstream took again (the upstream walk, `evidence.first_holding`'s merges), with the same
inputs. Differential: moving a series stop by stop prints the same stops and leaves the same
series with the verdicts kept and without (``PATCHSTACK_NO_PROOF_CACHE=1``), also when the
user adds a ``.gitattributes`` at a stop, and when the kept entries are damaged or foreign."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from patchstack.engine import verdicts
from patchstack.git.history import History
from patchstack.store import Store

from .conftest import Repo, copy_repo, numbered
from .refresh_fixtures import series_fork, stop_by_stop

# (patch, edits: (file, line, text); None deletes the file), in series order. Upstream takes
# U1, U2 and U3 as they are, and rewrites f.py's lines 5, 10 and 15 and g.py's 10 in one
# commit: A, B (in f.py and g.py) and C stop (and are skipped); P deletes the file A creates,
# a no-op once A is left out; D applies.
SERIES: list[tuple[str, list[tuple[str, int, str | None]]]] = [
    ("U1", [("u", 3, "U1 u3")]),
    ("A", [("f", 5, "A f5"), ("new", 0, "new 1\n")]),
    ("U2", [("u", 10, "U2 u10")]),
    ("B", [("f", 10, "B f10"), ("g", 10, "B g10")]),
    ("P", [("new", 0, None)]),
    ("U3", [("u", 20, "U3 u20")]),
    ("C", [("f", 15, "C f15")]),
    ("D", [("f", 25, "D f25")]),
]
UPSTREAM = [
    ("takes U1", [("u", 3, "U1 u3")]),
    (
        "rewrites f",
        [("f", 5, "up f5"), ("f", 10, "up f10"), ("f", 15, "up f15"), ("g", 10, "up g10")],
    ),
    ("takes U2", [("u", 10, "U2 u10")]),
    ("edits g", [("g", 2, "up g2")]),
    ("takes U3", [("u", 20, "U3 u20")]),
]


def _fork(tmp_path: Path) -> Repo:
    files = {f"{n}.py": numbered(30, n) for n in "fug"}
    return series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)


def _stop_by_stop(
    repo: Repo, attributes_after: int | None = None, damage: bool = False
) -> tuple[list[str], str, str]:
    """`stop_by_stop`; ``attributes_after``: a ``.gitattributes`` unsetting u.py's merge
    written after that many stops; ``damage``: every kept verdict replaced with a wrong one
    before each command."""

    def before_skip(stops: int) -> None:
        if stops == attributes_after:
            (repo.path / ".gitattributes").write_text("u.py -merge\n")
        if damage:
            _damage(repo)

    return stop_by_stop(repo, before_skip)


def _damage(repo: Repo) -> None:
    """Each kept verdict made wrong: another patch's, naming a commit this repository lacks,
    or no verdict at all; the upstream walk and the culprits kept, forged."""
    from patchstack.commands.refresh.kept import SECTION

    store = Store(os.path.join(repo.path, ".git", "patchstack", "cache"))
    wrong = [
        ("D.patch", "upstream", "", "", False, ()),
        ("U1.patch", "upstream", "1" * 40, "forged", True, ()),
        ("U1.patch", "no-op", "", "", False, (7,)),
        42,
    ]
    keys = sorted(store._section(SECTION))
    assert keys  # U1's verdict at least, kept by the first stop
    for i, key in enumerate(keys):
        if key.startswith("lines "):  # f.py's culprits: a commit this repository lacks
            forged = ("1" * 40, "forged", False, False, ((1, 1, 1, 1),), "", "")
            store.put(SECTION, key, {"f.py": [forged]})
        elif key.startswith("walk "):  # a walk of the range that does not end at its end
            base = key.split()[1].split("..")[0]
            store.put(SECTION, key, (base, ("1" * 40,), ("2" * 40,), ("forged",)))
        else:
            store.put(SECTION, key, wrong[i % len(wrong)])
    store.save()


@pytest.fixture
def traced(monkeypatch) -> list[str]:
    """The files whose upstream lines were walked (`Git.line_changes`, or begun early:
    `start_line_changes`), one entry a walk."""
    made: list[str] = []
    real, early = History.line_changes, History.start_line_changes

    def counted(self, rng, paths, trailer=None):  # type: ignore[no-untyped-def]
        made.extend(paths)
        return real(self, rng, paths, trailer)

    def started(self, rng, paths, trailer=None):  # type: ignore[no-untyped-def]
        made.extend(paths)
        return early(self, rng, paths, trailer)

    monkeypatch.setattr(History, "line_changes", counted)
    monkeypatch.setattr(History, "start_line_changes", started)
    return made


@pytest.fixture
def judged(monkeypatch) -> list[tuple[str, str]]:
    """The changes (before, after) whose upstream commit was searched for."""
    made: list[tuple[str, str]] = []
    real = verdicts.first_holding

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append((args[1], args[2]))
        return real(*args, **kwargs)

    monkeypatch.setattr(verdicts, "first_holding", counted)
    return made


def test_a_skip_takes_the_verdicts_the_stop_before_made(
    tmp_path, monkeypatch, judged, traced
) -> None:
    walks: list[str] = []
    real = verdicts.history

    def walked(*args):  # type: ignore[no-untyped-def]
        walks.append(args[1])
        return real(*args)

    monkeypatch.setattr(verdicts, "history", walked)
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = _stop_by_stop(repo)
    with_cache, walked_with, traced_with = list(judged), len(walks), list(traced)
    judged.clear()
    traced.clear()
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain) == kept
    stops, last, series = kept
    assert [s.split("conflict in patch ", 1)[1].split()[0] for s in stops] == [
        "A.patch",
        "B.patch",
        "C.patch",
    ]
    for name in ("U1", "U2", "U3"):
        assert f"# upstream: {name}.patch " in series
    assert "# deferred: P.patch " in series and "after A.patch" in series
    assert "upstream" in last and "no-op" in last
    # Each stop and the finish judge U1 again (U2 from the second stop on, ...): searched
    # once each with the verdicts kept.
    assert len(set(with_cache)) == len(with_cache) == 4, with_cache
    assert len(judged) > len(set(judged)) == 4, judged
    assert (walked_with, len(walks) - walked_with) == (1, 4), walks  # the upstream walk: once
    # Each stop prints a conflict in f.py, B's in g.py too (the same upstream commit changed
    # both): each file's culprits walked once.
    assert (traced_with, traced) == (["f.py", "g.py"], ["f.py", "f.py", "g.py", "f.py"])


def test_a_gitattributes_added_at_a_stop_is_a_verdict_made_again(
    tmp_path, monkeypatch, judged
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = _stop_by_stop(repo, attributes_after=2)
    assert len(judged) > len(set(judged))  # the verdicts of the first stops, made again
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain, attributes_after=2) == kept


def test_a_damaged_or_foreign_kept_verdict_is_none(tmp_path, monkeypatch) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    damaged = _stop_by_stop(repo, damage=True)
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain) == damaged
