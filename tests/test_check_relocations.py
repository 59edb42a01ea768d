"""``check --onto`` with many patches whose files upstream deleted (issue 35, round twelve):
every conflict's proposal (`engine.relocate`) is asked for together, `Relocator.propose_all`,
so the lines of all their blocks are looked up in one pass over each candidate's hashes
(`LineIndex._each`), whichever tree (the new base with the patches before) a conflict is
placed on. The output, ``--json`` included, is byte for byte what one proposal at a time
(``PATCHSTACK_NO_SHARED_LINES=1``) and the plain reading (``PATCHSTACK_NO_LINE_INDEX=1``)
give."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patchstack.engine import lineindex
from patchstack.engine.relocate import PLAIN
from patchstack.git.deletions import Deletions

from .conftest import Repo, copy_repo
from .refresh_fixtures import Edit, fillers, series_fork, small_function

K = 12  # patches, each editing two functions of a file of its own: 24 blocks (> EACH_FROM)


def _fork(tmp_path: Path) -> Repo:
    # a{k}.py: f{k} (its `y = x + k` at line 2), three fillers, f{50+k} (its line 21)
    files = {
        f"a{k}.py": small_function(k) + fillers(f"a{k}", 3) + small_function(50 + k)
        for k in range(1, K + 1)
    }
    series: list[tuple[str, list[Edit]]] = [
        (f"p{k}", [(f"a{k}", 2, f"    y = x + {k} + 1"), (f"a{k}", 21, f"    y = x + {k} - 1")])
        for k in range(1, K + 1)
    ]
    # clean patches between the conflicts: the later ones are placed on other trees (each
    # with its candidates), one adding a second copy of f10 (its block then found twice)
    series.insert(4, ("b1", [("b", 1, "B = 2")]))
    series.insert(9, ("adds", [("n", 0, "# n\n\n" + small_function(10))]))
    funcs = {k: small_function(k) for k in [*range(1, K + 1), *range(51, 51 + K)]}
    funcs[5] = small_function(5, "  ")  # re-indented: not found
    del funcs[7]  # dropped
    dealt: list[Edit] = [
        (f"m{j}", 0, f"# m{j}\n\n" + "".join(t for k, t in funcs.items() if k % 4 == j))
        for j in range(4)
    ]
    dealt = [(m, 0, f"{t}{fillers(m, 30)}") for m, _n, t in dealt]  # (no rename of a file)
    gone: list[Edit] = [(f"a{k}", 0, None) for k in range(1, K + 1)]
    return series_fork(
        tmp_path / "fork", {**files, "b.py": "B = 1\n"}, series, [("deal", gone + dealt)]
    )


def _outputs(repo: Repo) -> tuple[str, str]:
    short = repo.ps("check", "--onto", "up", code=1).stdout
    whole = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    return short, whole


def test_check_proposes_the_same_together_one_at_a_time_and_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _fork(tmp_path)
    alone = copy_repo(repo.path, tmp_path / "alone")
    plain = copy_repo(repo.path, tmp_path / "plain")
    together = _outputs(repo)
    notes = {p["name"]: p["note"] for p in json.loads(together[1])["patches"]}
    assert "12 relocated" in together[0], together[0]
    assert notes["p2.patch"].startswith("relocated a2.py -> m2.py, m0.py by"), notes
    assert notes["p5.patch"].startswith("relocated a5.py -> m3.py by"), notes  # f5 re-indented
    assert notes["p7.patch"].endswith("(1 of 2 hunks)"), notes  # f7 dropped
    assert notes["p10.patch"].startswith("relocated a10.py -> m0.py by"), notes  # f10 twice
    assert "occur 2 times" in together[1]
    monkeypatch.setenv(lineindex.NO_SHARED, "1")
    assert _outputs(alone) == together
    monkeypatch.delenv(lineindex.NO_SHARED)
    monkeypatch.setenv(PLAIN, "1")
    assert _outputs(plain) == together


def test_check_searches_each_files_hashes_once_for_every_proposal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twelve proposals on three trees: no candidate's hashes are unpacked and searched more
    than once (one at a time, each proposal's new lines cost a pass over every file's)."""
    repo = _fork(tmp_path)
    unpacked: list[bytes] = []
    real = lineindex.values
    monkeypatch.setattr(lineindex, "values", lambda p: unpacked.append(p) or real(p))
    repo.ps("check", "--onto", "up", code=1)
    candidates = repo.git("diff", "--name-only", "main~14", "up").split()  # (a superset)
    assert len(unpacked) <= len(candidates), (len(unpacked), len(candidates))


def test_check_walks_upstream_once_for_the_files_every_proposal_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit that deleted each file (`engine.deleters`): one walk of the drift for the
    twelve proposals' files, not one a proposal."""
    repo = _fork(tmp_path)
    walked: list[list[str]] = []
    real = Deletions.start_deleted_by_each

    def counted(self, rng, paths):  # type: ignore[no-untyped-def]
        walked.append(list(paths))
        return real(self, rng, paths)

    monkeypatch.setattr(Deletions, "start_deleted_by_each", counted)
    repo.ps("check", "--onto", "up", code=1)
    # (one walk: begun with the prefetch, in its sorted order, with the file a patch made)
    lost = [f"a{k}.py" for k in range(1, K + 1)]
    assert [sorted(w) for w in walked] == [sorted([*lost, "n.py"])], walked
