"""`proof.prove` takes a commit the engine made from the very bytes of its patch file on its
parent (the canonical chain of the ``build`` cache, `Engine.extend`) as ``exact``, as the
engine itself does, instead of proving it again (reading every preimage blob and applying the
hunks): 0.26 of 0.27 CPU s at weight-sync's first stop, where the proofs' own cache was cold
and the chain known. Differential: with the proofs' cache dropped, `status` and a refresh
stop by stop print the same, and leave the same series, with the shortcut and without
(``PATCHSTACK_NO_CHAIN_PROOF=1``); an amended commit still differs."""

from __future__ import annotations

import os

import pytest

from patchstack.commands.refresh import proof
from patchstack.store import Store

from .conftest import Repo, copy_repo
from .refresh_fixtures import stop_by_stop
from .test_kept_verdicts import _fork


def _drop_proofs(repo: Repo) -> None:
    """The proofs' section of the cache emptied (as a copy of a series imported by an older
    version has it), the engine's chain kept."""
    store = Store(os.path.join(repo.path, ".git", "patchstack", "cache"))
    assert store.sizes().get("build")  # the push made the chain
    for key in list(store._section(proof.SECTION)):
        store.forget(proof.SECTION, key)
    store.save()


@pytest.fixture
def proven(monkeypatch) -> list[str]:
    """What the plain proofs read: one entry per patch file checked hunk by hunk or applied."""
    made: list[str] = []
    check, applies = proof._ConsistencyCache.check, proof._applies_to

    def counted_check(self, data, patch):  # type: ignore[no-untyped-def]
        made.append("check")
        return check(self, data, patch)

    def counted_applies(idx, tree, data, strip):  # type: ignore[no-untyped-def]
        made.append("apply")
        return applies(idx, tree, data, strip)

    monkeypatch.setattr(proof._ConsistencyCache, "check", counted_check)
    monkeypatch.setattr(proof, "_applies_to", counted_applies)
    return made


def test_a_chain_commit_is_exact_without_proving_it_again(tmp_path, monkeypatch, proven) -> None:
    repo = _fork(tmp_path)
    _drop_proofs(repo)
    plain = copy_repo(repo.path, tmp_path / "plain")
    out = repo.ps("status").stdout
    assert proven == []
    monkeypatch.setenv("PATCHSTACK_NO_CHAIN_PROOF", "1")
    assert plain.ps("status").stdout == out
    assert proven  # every patch file read and checked


def test_stop_by_stop_is_the_same_with_the_chain_proof_and_without(tmp_path, monkeypatch) -> None:
    repo = _fork(tmp_path)
    _drop_proofs(repo)
    plain = copy_repo(repo.path, tmp_path / "plain")
    shortcut = stop_by_stop(repo)
    monkeypatch.setenv("PATCHSTACK_NO_CHAIN_PROOF", "1")
    assert stop_by_stop(plain) == shortcut


def test_an_amended_commit_is_not_taken_from_the_chain(tmp_path) -> None:
    repo = _fork(tmp_path)
    _drop_proofs(repo)
    repo.write("late.txt", "late\n")
    repo.git("add", "late.txt")
    repo.git("commit", "-q", "--amend", "--no-edit")  # the top patch's commit, changed
    proc = repo.ps("pop", code=2)
    assert "differs from its patch file" in proc.stderr


def _cold(repo: Repo) -> None:
    """No cache at all (a clone, or a cache another version wrote): neither the chain nor a
    proof known."""
    os.unlink(os.path.join(repo.path, ".git", "patchstack", "cache"))


def test_a_refresh_with_no_cache_proves_the_stack_by_the_chain_it_builds(
    tmp_path, monkeypatch, proven
) -> None:
    """A refresh builds the canonical chain from the patch files anyway (`replay.old_chain`,
    hunks applied and proven by blob ids): built before the proof, each applied commit that is
    the chain's is ``exact`` by it, not proven a second time (weight-sync's first stop with
    no cache: 46 patch files checked hunk by hunk twice). The same stops either way."""
    repo = _fork(tmp_path)
    _cold(repo)
    plain = copy_repo(repo.path, tmp_path / "plain")
    shortcut = stop_by_stop(repo)
    assert proven == []
    monkeypatch.setenv("PATCHSTACK_NO_CHAIN_PROOF", "1")
    assert stop_by_stop(plain) == shortcut
    assert proven


def test_a_refresh_refuses_an_amended_commit_before_it_builds_the_chain(tmp_path) -> None:
    """A patch file that no longer applies where it was made and a commit amended by hand:
    the refusal to drop the commit is said first, as when the proof ran first."""
    repo = _fork(tmp_path)
    _cold(repo)
    repo.write("late.txt", "late\n")
    repo.git("add", "late.txt")
    repo.git("commit", "-q", "--amend", "--no-edit")
    lines = repo.read("patches/U1.patch").splitlines(keepends=True)
    at = next(i for i, ln in enumerate(lines) if ln.startswith("-") and not ln.startswith("---"))
    lines[at] = "-nowhere\n"  # the file no longer applies on the old base
    repo.write("patches/U1.patch", "".join(lines))
    proc = repo.ps("refresh", "--onto", "up", code=2)
    assert "differs from its patch file" in proc.stderr
