"""The states of a replay's `engine.needs.Needs`, kept from one command of a refresh stop by
stop for the next (`commands.refresh.kept.KeptNeeds`): each ``--skip`` judged every step
before its resume point again. Differential: the same stops and the same series with them
kept and without (``PATCHSTACK_NO_PROOF_CACHE=1``), also when the kept states are forged."""

from __future__ import annotations

import os

import pytest

from patchstack.commands.refresh.kept import SECTION
from patchstack.engine.needs import Needs
from patchstack.store import Store

from .conftest import Repo, copy_repo
from .refresh_fixtures import stop_by_stop
from .test_kept_verdicts import _fork, _stop_by_stop


@pytest.fixture
def caught_up(monkeypatch) -> list[int]:
    """The steps a replay judged again before its resume point (``hold=False``)."""
    made: list[int] = []
    real = Needs._judge

    def counted(self, i, hold):  # type: ignore[no-untyped-def]
        if not hold and self.entries:
            made.append(i)
        return real(self, i, hold)

    monkeypatch.setattr(Needs, "_judge", counted)
    return made


def test_a_skip_starts_from_the_state_the_stop_before_reached(
    tmp_path, monkeypatch, caught_up
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = _stop_by_stop(repo)
    assert caught_up == []  # every step judged once, by the command that reached it
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain) == kept
    assert caught_up  # B's and the steps after it judged again by each later command


def _forge(repo: Repo) -> None:
    """Every kept state made wrong: its blobs ones this repository lacks, or not a state."""
    store = Store(os.path.join(repo.path, ".git", "patchstack", "cache"))
    keys = [k for k in sorted(store._section(SECTION)) if k.startswith("needs ")]
    assert keys  # the states the first stop reached, at least
    for key in keys:
        found = store.get(SECTION, key)
        forged = {}
        for n, (digest, (at, entries, missing)) in enumerate(sorted(found.items())):
            if n % 3 == 0:
                entries = [(p, "100644", "1" * 40) for p, _m, _o in entries] or [("f.py", "1", "2")]
                forged[digest] = (at, entries, missing)
            elif n % 3 == 1:
                forged[digest] = (at + 1, entries, missing)
            else:
                forged[digest] = (at, entries, [("no such patch", ["f.py"])])
        store.put(SECTION, key, forged)
    store.save()


def test_a_forged_kept_state_is_none(tmp_path, monkeypatch) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    forged = stop_by_stop(repo, lambda _stops: _forge(repo))
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain) == forged


def test_a_refresh_made_again_asks_git_none_of_the_merges_it_judged_by(
    tmp_path, monkeypatch
) -> None:
    """`engine.needs`' merges are kept with the replay's proofs (`triage.Proofs`): after an
    ``undo``, ``refresh --defer-conflicts`` again asks git none of them and prints the same,
    as it does with nothing kept (``PATCHSTACK_NO_PROOF_CACHE=1``: each asked again)."""
    from patchstack.git import Git

    asked: list[tuple[str, ...]] = []
    real = Git.merge_trees

    def counted(self, base, ours, theirs, labels):  # type: ignore[no-untyped-def]
        if labels[0] in ("without", "placed"):  # (`Needs._merge`'s)
            asked.append((base, ours, theirs, *labels))
        return real(self, base, ours, theirs, labels)

    monkeypatch.setattr(Git, "merge_trees", counted)
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    first = repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout
    made = list(asked)
    assert made  # B, C and D touch f.py, which A (left out) changes
    repo.ps("undo")
    asked.clear()
    assert repo.ps("refresh", "--onto", "up", "--defer-conflicts").stdout == first
    assert asked == []
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    plain.ps("refresh", "--onto", "up", "--defer-conflicts")
    plain.ps("undo")
    asked.clear()
    assert plain.ps("refresh", "--onto", "up", "--defer-conflicts").stdout == first
    assert asked == made
