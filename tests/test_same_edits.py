"""A folder edited the same way again is the tree made before (`git.trees.Trees._edit`): a
check's proofs that a later patch is its own change without a left-out one (`engine.needs`)
edit each patch's tree at the left-out patch's paths, and the folders the patch left alone
are the same edits of the same trees. The outputs of ``check`` (``--json`` too) and of
``refresh`` are the same with those trees written again (``PATCHSTACK_NO_SAME_EDITS=1``),
and fewer trees are written."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.git.objects import Objects
from patchstack.git.trees import EDITS_OFF

from .conftest import Repo, copy_repo
from .refresh_fixtures import Edit, series_fork

FOLDERS = [f"pkg/sub{i}/deep" for i in range(4)]


def _fork(tmp_path: Path) -> Repo:
    text = "".join(f"x{i} = {i}\n" for i in range(60))
    files = {f"{d}/mod.py": text for d in FOLDERS} | {"top.py": text}
    # A changes line 1 of every folder's file, as upstream does: a conflict, left out; each
    # later patch changes other lines of one of those files (its own change without A)
    series: list[tuple[str, list[Edit]]] = [("A", [(f"{d}/mod", 1, "x0 = -1") for d in FOLDERS])]
    for k in range(8):
        d = FOLDERS[k % len(FOLDERS)]
        series.append((f"p{k}", [(f"{d}/mod", 10 + 5 * k, f"x{9 + 5 * k} = {k}")]))
    series.insert(3, ("t", [("top", 30, "x29 = 0")]))
    upstream: list[tuple[str, list[Edit]]] = [
        ("up", [(f"{d}/mod", 1, "x0 = 100") for d in FOLDERS])
    ]
    return series_fork(tmp_path / "fork", files, series, upstream)


def _outputs(repo: Repo) -> tuple[str, ...]:
    short = repo.ps("check", "--onto", "up", code=1).stdout
    whole = repo.ps("check", "--onto", "up", "--json", code=1).stdout
    refreshed = repo.ps("refresh", "--onto", "up", "--defer-conflicts", code=None).stdout
    return short, whole, refreshed, repo.tree(), repo.read("patches/series")


def test_the_same_edits_give_the_same_outputs_and_write_fewer_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _fork(tmp_path)
    again = copy_repo(repo.path, tmp_path / "again")
    written: list[str] = []
    real = Objects.write_loose

    def counted(self, kind, data, kept=False):  # type: ignore[no-untyped-def]
        written.append(kind)
        return real(self, kind, data, kept)

    monkeypatch.setattr(Objects, "write_loose", counted)
    kept = _outputs(repo)
    assert "conflict  A.patch  pkg/sub0/deep/mod.py (+3 more)" in kept[0], kept[0]
    trees = written.count("tree")
    written.clear()
    monkeypatch.setenv(EDITS_OFF, "1")
    assert _outputs(again) == kept
    assert trees < written.count("tree"), (trees, written.count("tree"))
