"""A region ours leaves as the base has it (`contract.place_region`): every path the patch
changes is in ours what it is in the base, so merge-ort's tree there is the patch's, taken
without asking git. Differential: on random changes (the patch modifies, adds, deletes,
renames files and changes modes; ours changes, adds, deletes and renames other files, in the
same folders too), the result is the merge's, byte for byte, with the shortcut on and off
(``PATCHSTACK_NO_REGION_CARRY=1``), and its tree is the whole merge's (`contract.place`);
and a refresh stop by stop prints the same stops and leaves the same series either way."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from patchstack.engine import contract
from patchstack.git.merge import Merges
from patchstack.git.repo import find_repo

from .conftest import Repo, copy_repo, make_repo, numbered
from .refresh_fixtures import stop_by_stop
from .test_kept_lands import _fork

FILES = ["a.py", "d/b.py", "d/c.py", "d/e/f.py", "g/h.py", "g/i.py", "j.py"]


@pytest.fixture
def merges(monkeypatch) -> list[tuple[str, str, str]]:
    """The merges git was asked for (base, ours, theirs)."""
    made: list[tuple[str, str, str]] = []
    real = Merges.merge_trees

    def counted(self, base, ours, theirs, labels):  # type: ignore[no-untyped-def]
        made.append((base, ours, theirs))
        return real(self, base, ours, theirs, labels)

    monkeypatch.setattr(Merges, "merge_trees", counted)
    return made


def _change(repo: Repo, rng: random.Random, paths: list[str], tag: str) -> None:
    for path in paths:
        op = rng.choice(["edit", "edit", "delete", "rename", "mode"])
        target = repo.path / path
        if op == "edit":
            lines = target.read_text().split("\n")
            lines[rng.randrange(len(lines) - 1)] = f"{tag} {path}"
            target.write_text("\n".join(lines))
        elif op == "delete":
            repo.git("rm", "-q", path)
        elif op == "rename":
            folder = rng.choice(["", "d/", "g/", "n/"])
            (repo.path / folder).mkdir(exist_ok=True)
            repo.git("mv", path, f"{folder}{tag}-{path.replace('/', '-')}")
        else:
            target.chmod(0o755)
    for i in range(rng.randint(0, 2)):
        folder = rng.choice(["", "d/", "d/e/", "g/", "n/"])
        repo.write(f"{folder}{tag}-new{i}.py", numbered(12, f"{tag}{i}"))
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", tag, "--allow-empty")


def test_a_region_ours_left_as_the_base_is_the_merges_tree(
    tmp_path: Path, monkeypatch, merges
) -> None:
    taken = 0
    for seed in range(16):
        monkeypatch.delenv("PATCHSTACK_NO_REGION_CARRY", raising=False)
        rng = random.Random(seed)
        repo = make_repo(tmp_path / f"r{seed}", {p: numbered(12, p) for p in FILES})
        base = repo.head()
        mine = rng.sample(FILES, rng.randint(1, 3))
        _change(repo, rng, mine, "patch")
        patch = repo.head()
        repo.git("checkout", "-q", "-b", "ours", base)
        others = [p for p in FILES if p not in mine]
        _change(repo, rng, rng.sample(others, rng.randint(1, len(others))), "ours")
        git = find_repo(str(repo.path))
        before, after, ours = git.trees_of([base, patch, "ours"])
        labels = ("ours", "patch")
        merges.clear()
        carried = contract.place_fast(git, before, ours, after, labels, "base")
        taken += not merges
        contract.forget_clean(git)
        monkeypatch.setenv("PATCHSTACK_NO_REGION_CARRY", "1")
        merged = contract.place_fast(git, before, ours, after, labels, "base")
        whole = contract.place(git, before, ours, after, labels, "base")
        assert (carried.tree, carried.clean, carried.conflicted, carried.messages) == (
            merged.tree,
            merged.clean,
            merged.conflicted,
            merged.messages,
        ), seed
        assert carried.tree == whole.tree and carried.clean, seed
        git.close()
    assert taken >= 4, taken  # (the others: a rename of ours' may reach the patch's paths)


def test_the_shortcut_is_taken_and_a_refresh_is_the_same_without_it(
    tmp_path, monkeypatch, merges
) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    carried = stop_by_stop(repo)
    asked = len(merges)
    monkeypatch.setenv("PATCHSTACK_NO_REGION_CARRY", "1")
    assert stop_by_stop(plain) == carried
    assert asked < len(merges) - asked, (asked, len(merges) - asked)


# -- a region's merge made once a command ---------------------------------------------------


def test_the_same_region_met_again_in_a_command_is_merged_once(
    tmp_path: Path, monkeypatch, merges
) -> None:
    """Three trees that differ outside the patch's paths only: one merge of the region, and
    each placement the merge's (the same with ``PATCHSTACK_NO_REGION_MEMO=1``, which asks
    git each time); a clean one under other labels too."""
    repo = make_repo(tmp_path / "r", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.write("a.py", numbered(20, "a").replace("a 3\n", "patch 3\n"))
    patch = repo.commit_all("patch")
    trees = []
    for i in range(3):
        repo.git("checkout", "-q", "-B", f"ours{i}", base)
        repo.write("a.py", numbered(20, "a").replace("a 15\n", "ours 15\n"))
        repo.write("b.py", numbered(20, "b").replace("b 5\n", f"ours{i} 5\n"))
        trees.append(repo.commit_all(f"ours {i}"))
    git = find_repo(str(repo.path))
    before, after, *ours = git.trees_of([base, patch, *trees])
    asks = [("ours", "patch"), ("ours", "patch"), ("other", "labels")]
    found = []
    for env in ("", "1"):
        if env:
            monkeypatch.setenv("PATCHSTACK_NO_REGION_MEMO", env)
        merges.clear()
        contract.forget_clean(git)
        found.append(
            [
                contract.place_fast(git, before, tree, after, labels, "base")
                for tree, labels in zip(ours, asks, strict=True)
            ]
        )
        if not env:
            assert len(merges) == 1, merges
            contract.forget_clean(git)  # (a publish: merged again after it)
            contract.place_fast(git, before, ours[1], after, ("x", "y"), "base")
            assert len(merges) == 2, merges
    assert len(merges) == 3, merges  # the plain path: one a placement
    plain = [(m.tree, m.clean, m.conflicted, m.messages) for m in found[1]]
    assert [(m.tree, m.clean, m.conflicted, m.messages) for m in found[0]] == plain
    assert all(m.clean for m in found[0]) and found[0][0].tree != found[0][1].tree


def test_a_refresh_is_the_same_without_the_region_memo(tmp_path, monkeypatch) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept = stop_by_stop(repo)
    monkeypatch.setenv("PATCHSTACK_NO_REGION_MEMO", "1")
    assert stop_by_stop(plain) == kept


def test_a_region_merge_is_not_taken_once_its_scratch_store_is_dropped(tmp_path: Path) -> None:
    """A merge made into the scratch store (`git.scratch`) is forgotten with the store (a
    probe's check drops it; a publish keeps only what its plan reaches): the same region is
    merged again, and its tree is one the repository has."""
    repo = make_repo(tmp_path / "r", {"a.py": numbered(20, "a"), "b.py": numbered(20, "b")})
    base = repo.head()
    repo.write("a.py", numbered(20, "a").replace("a 3\n", "patch 3\n"))
    patch = repo.commit_all("patch")
    repo.git("checkout", "-q", "-B", "ours", base)
    repo.write("a.py", numbered(20, "a").replace("a 3\n", "ours 3\n"))
    repo.write("b.py", numbered(20, "b").replace("b 5\n", "ours 5\n"))
    ours = repo.commit_all("ours")
    git = find_repo(str(repo.path))
    before, after, tree = git.trees_of([base, patch, ours])
    for _ in range(2):
        git.use_scratch()
        merged = contract.place_fast(git, before, tree, after, ("ours", "patch"), "base")
        assert not merged.clean  # (conflict markers written with the labels: new objects)
        listed = git.entries_at(merged.tree, ["a.py", "b.py"])
        assert all(git.has_objects([e[1] for e in listed.values()]).values()), listed
        git.drop_scratch()
    git.close()
