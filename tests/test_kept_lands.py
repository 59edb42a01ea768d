"""Where each patch lands on the old base (`engine.landings.on_old_base`) and the upstream
walk the verdicts search, kept from one command of a refresh stop by stop for the next: the
stops that judge no new patch upstream took read them all the same, so the cache keeps them
(an entry no recent command read is dropped, `store`), and the next patch upstream took is
judged by replaying only the steps after those kept. Differential: the same stops and series
with nothing kept (``PATCHSTACK_NO_PROOF_CACHE=1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.engine import landings, verdicts

from .conftest import Repo, copy_repo, numbered
from .refresh_fixtures import series_fork, stop_by_stop

# A, B, C and D stop (upstream rewrote their lines; each in a file of its own, so each stop
# traces a new file and the cache's section learns something at every command); U1 and U3
# are upstream's: U1 is judged from the stop at B on, U3 at the end, after three stops that
# judge nothing new.
SERIES = [
    ("A", [("f", 5, "A f5")]),
    ("U1", [("u", 3, "U1 u3")]),
    ("B", [("g", 10, "B g10")]),
    ("C", [("h", 10, "C h10")]),
    ("D", [("k", 10, "D k10")]),
    ("U3", [("u", 20, "U3 u20")]),
    ("E", [("f", 25, "E f25")]),
]
UPSTREAM = [
    ("takes U1", [("u", 3, "U1 u3")]),
    (
        "rewrites",
        [("f", 5, "up f5"), ("g", 10, "up g10"), ("h", 10, "up h10"), ("k", 10, "up k10")],
    ),
    ("takes U3", [("u", 20, "U3 u20")]),
]


def _fork(tmp_path: Path) -> Repo:
    files = {f"{n}.py": numbered(30, n) for n in "fughk"}
    return series_fork(tmp_path / "fork", files, SERIES, UPSTREAM)


@pytest.fixture
def landed(monkeypatch) -> list[list[str]]:
    """The steps each replay on the old base placed (`landings.on_old_base`), by name."""
    made: list[list[str]] = []
    real = landings.replay

    def counted(git, steps, start, *args, **kwargs):  # type: ignore[no-untyped-def]
        made.append([s.name for s in steps[start:]])
        return real(git, steps, start, *args, **kwargs)

    monkeypatch.setattr(landings, "replay", counted)
    return made


@pytest.fixture
def walks(monkeypatch) -> list[str]:
    """The upstream walks the verdicts searched (`evidence.history`), by their start."""
    made: list[str] = []
    real = verdicts.history

    def walked(*args):  # type: ignore[no-untyped-def]
        made.append(args[1])
        return real(*args)

    monkeypatch.setattr(verdicts, "history", walked)
    return made


def test_landings_outlive_the_stops_that_judge_nothing_new(
    tmp_path, monkeypatch, landed, walks
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = _stops(repo)
    with_cache, walked = [list(x) for x in landed], len(walks)
    landed.clear()
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stops(plain) == kept
    stops, last, series = kept
    assert [s.split("conflict in patch ", 1)[1].split()[0] for s in stops] == [
        "A.patch",
        "B.patch",
        "C.patch",
        "D.patch",
    ]
    assert "# upstream: U1.patch " in series and "# upstream: U3.patch " in series
    # U1 is placed on the old base once: at the stop at B; U3's verdict, three stops on,
    # replays from B (A and U1 landed as that stop kept them).
    assert sum("U1.patch" in x for x in with_cache) == 1, with_cache
    assert with_cache[-1][:1] == ["B.patch"], with_cache
    assert sum("U1.patch" in x for x in landed) > 1, landed  # nothing kept: each time
    assert (walked, len(walks) - walked) == (1, 4), walks  # the upstream walk kept too


def _stops(repo: Repo) -> tuple[list[str], str, str]:
    return stop_by_stop(repo)
