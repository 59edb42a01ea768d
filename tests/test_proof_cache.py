"""The knock-on proofs kept from one command of a refresh stop by stop for the next
(`commands.refresh.knockons.KnockOns.keep`): a ``--skip`` takes the proof merges the stop
before it made (the same root merged onto the same tree), keyed by the trees and by what else
decides a merge (`git.attributes.merge_inputs`: the work tree's ``.gitattributes`` among it).
Differential: moving a series stop by stop prints the same stops and leaves the same series
with the proofs kept and without (``PATCHSTACK_NO_PROOF_CACHE=1``), also when the user adds
a ``.gitattributes`` between two stops that changes what a kept proof merge would make."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from patchstack.commands.refresh import knockons
from patchstack.engine import triage
from patchstack.git import process
from patchstack.git.attributes import merge_inputs
from patchstack.git.repo import find_repo
from patchstack.store import Store

from .conftest import Repo, copy_repo, make_repo, numbered
from .refresh_fixtures import series_fork, stop_by_stop

# (patch, file, line, what it writes there): in series order. Upstream rewrites every line
# but A's f.py 20; A conflicts (primary), then B1-B3 each conflict with upstream in f.py
# (primary, each proven with A in place: the same proof merges at each stop), and K edits
# the g.py line A made (a knock-on of A: it merges once A is in, as A has it).
SERIES = [
    ("A", [("f", 5, "A f5"), ("f", 20, "A f20"), ("g", 5, "A g5")]),
    ("B1", [("f", 10, "B1 f10")]),
    ("B2", [("f", 13, "B2 f13")]),
    ("B3", [("f", 16, "B3 f16")]),
    ("K", [("g", 5, "A g5 K")]),
]
UPSTREAM = [("f", 5), ("f", 10), ("f", 13), ("f", 16), ("g", 5)]


def _fork(tmp_path: Path) -> Repo:
    files = {"f.py": numbered(30, "f"), "g.py": numbered(12, "g")}
    rewrites = [(f, line, f"upstream {f}{line}") for f, line in UPSTREAM]
    return series_fork(tmp_path / "fork", files, SERIES, [("rewrites the lines", rewrites)])


def _stop_by_stop(repo: Repo, attributes_after: int | None = None) -> tuple[list[str], str]:
    """(what each stop printed, the series after) of `stop_by_stop`; with
    ``attributes_after``, an untracked ``.gitattributes`` unsetting the merge of g.py (git
    keeps ours and conflicts) is written after that many stops."""

    def before_skip(stops: int) -> None:
        if stops == attributes_after:
            (repo.path / ".gitattributes").write_text("g.py -merge\n")

    stops, _last, series = stop_by_stop(repo, before_skip)
    return stops, series


@pytest.fixture
def proofs(monkeypatch) -> list[str]:
    """The patches the knock-on proofs merged (`engine.triage`), one entry a merge made."""
    made: list[str] = []
    real = triage.place_fast

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        made.append(args[4][1])
        return real(*args, **kwargs)

    monkeypatch.setattr(triage, "place_fast", counted)
    return made


def test_a_skip_takes_the_proofs_the_stop_before_made(tmp_path, monkeypatch, proofs) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept_stops, kept_series = _stop_by_stop(repo)
    with_cache = len(proofs)
    proofs.clear()
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    plain_stops, plain_series = _stop_by_stop(plain)
    assert kept_stops == plain_stops
    assert kept_series == plain_series
    assert [s.split("conflict in patch ", 1)[1].split()[0] for s in kept_stops] == [
        "A.patch",
        "B1.patch",
        "B2.patch",
        "B3.patch",
    ]
    assert "K.patch # essential" in kept_series and "after A.patch" in kept_series
    # A merged onto the same tree at each stop, and each B onto A's: made once, kept.
    assert with_cache < len(proofs)
    assert proofs.count("A.patch") >= 3 and with_cache <= len(proofs) - 2, (with_cache, proofs)


def test_a_gitattributes_added_at_a_stop_is_a_proof_made_again(tmp_path, monkeypatch) -> None:
    """After the second stop the user unsets g.py's merge: A's proof merge (kept from the
    stop before) would now keep upstream's g.py line, and K no longer merges with A in
    place: primary. The kept merges were made under other attributes: not taken."""
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept_stops, kept_series = _stop_by_stop(repo, attributes_after=2)
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    plain_stops, plain_series = _stop_by_stop(plain, attributes_after=2)
    assert kept_stops == plain_stops
    assert kept_series == plain_series
    assert "conflict in patch K.patch" in kept_stops[-1]  # primary now: it stopped


def test_what_a_merge_reads_besides_its_trees_changes_the_digest(tmp_path, monkeypatch) -> None:
    """`merge_inputs` changes with each thing merge-tree reads: an untracked, an ignored, a
    nested or an edited ``.gitattributes``, ``info/attributes``, ``core.attributesFile`` and
    its contents, configuration; and with nothing else (an ordinary file, or anything in an
    ignored folder that holds no file git sees, which is not walked)."""
    files = {"a.py": "a\n", "sub/b.py": "b\n", ".gitignore": "ign/\nvenv/\n"}
    repo = make_repo(tmp_path / "r", files)
    repo.write("ign/deep/c.py", "c\n")
    repo.git("add", "-f", "ign/deep/c.py")  # a tracked file in an ignored folder
    repo.git("commit", "-q", "-m", "forced")
    git = find_repo(str(repo.path))
    seen = [merge_inputs(git)]

    def changed() -> bool:  # (as the next command reads it: the configuration once a command)
        seen.append(merge_inputs(find_repo(str(repo.path))))
        return seen[-1] != seen[-2]

    repo.write("a.py", "edited\n")
    assert not changed()
    repo.write(".gitattributes", "*.py -merge\n")
    assert changed()
    repo.commit_all("attributes")
    assert not changed()
    repo.write(".gitattributes", "*.py merge=union\n")
    assert changed()
    repo.write("sub/.gitattributes", "b.py -merge\n")
    assert changed()
    repo.write("ign/.gitattributes", "* -merge\n")  # ignored, above a tracked file
    assert changed()
    repo.write("venv/lib/.gitattributes", "* -merge\n")
    assert not changed()
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "attributes").write_text("* -merge\n")
    assert changed()
    elsewhere = tmp_path / "attrs"
    elsewhere.write_text("* -merge\n")
    repo.git("config", "core.attributesFile", str(elsewhere))
    assert changed()
    elsewhere.write_text("* merge=union\n")
    assert changed()
    repo.git("config", "merge.renormalize", "true")
    assert changed()
    assert not changed()
    # Hooks decide no merge: a read-only command before (in this process) pins them off, and
    # a walk or proof it kept is the next command's (the early walk's test, after a check).
    process.quiet_hooks(True)
    try:
        assert "core.hookspath" in find_repo(str(repo.path)).config_list().decode().lower()
        assert not changed()
    finally:
        process.quiet_hooks(False)
    repo.git("config", "core.hooksPath", str(tmp_path / "hooks"))
    assert not changed()
    # A copy (or a moved repository) reads the same: its kept proofs and verdicts still serve.
    repo.git("config", "--unset", "core.attributesFile")
    assert changed()
    copied = copy_repo(repo.path, tmp_path / "copied")
    assert merge_inputs(find_repo(str(copied.path))) == seen[-1]


def test_a_skip_loads_nothing_of_a_stepped_refresh(tmp_path) -> None:
    """A plain ``refresh --skip`` (no stepped refresh kept) imports nothing of ``--steps``:
    each stop pays the interpreter's start-up and the imports again."""
    repo = _fork(tmp_path)
    repo.ps("refresh", "--onto", "up", code=1)
    probe = (
        "import sys\n"
        "from patchstack.cli.app import main\n"
        "try:\n    main(['refresh', '--skip'])\n"
        "except SystemExit as e:\n    code = e.code\n"
        "print(code, sorted(m for m in sys.modules if m.endswith('steps')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo.path, capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "1 []", out


def test_a_root_is_never_merged_again_where_the_replay_merged_it(
    tmp_path, monkeypatch, proofs
) -> None:
    """A conflicts onto the new base at the first stop; every B after it is proven with A in
    place onto that same tree (A left out changes nothing): the replay's own merge of A,
    kept, is that proof merge (its markers' labels aside, which a root's proof does not
    read). Differential: the same stops and series with it made again
    (``PATCHSTACK_NO_PROOF_KEEP=1``) and with nothing kept."""
    repo = _fork(tmp_path)
    again = copy_repo(repo.path, tmp_path / "again")
    plain = copy_repo(repo.path, tmp_path / "plain")
    kept_stops, kept_series = _stop_by_stop(repo)
    assert "A.patch" not in proofs, proofs
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_KEEP", "1")
    again_stops, again_series = _stop_by_stop(again)
    assert proofs.count("A.patch") >= 1, proofs
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    plain_stops, plain_series = _stop_by_stop(plain)
    assert kept_stops == again_stops == plain_stops
    assert kept_series == again_series == plain_series
    assert "K.patch # essential" in kept_series and "after A.patch" in kept_series


def _forge_replayed(repo: Repo) -> int:
    """Every replay's merge kept (`triage.REPLAYED`) made to name a tree this repository
    lacks (as after a ``git gc --prune`` of its objects); how many."""
    store = Store(os.path.join(repo.path, ".git", "patchstack", "cache"))
    count = 0
    for key in sorted(store._section(knockons.SECTION)):
        forged = []
        for k, (tree, *rest) in store.get(knockons.SECTION, key):
            if k[0] == triage.REPLAYED:
                tree, count = "0" * len(tree), count + 1
            forged.append((k, (tree, *rest)))
        store.put(knockons.SECTION, key, forged)
    store.save()
    return count


def test_a_kept_replay_merge_of_a_tree_not_there_is_none(tmp_path, monkeypatch, proofs) -> None:
    repo = _fork(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    forged: list[int] = []
    stops, _last, series = stop_by_stop(repo, lambda _stops: forged.append(_forge_replayed(repo)))
    assert forged[0] >= 1, forged
    assert proofs.count("A.patch") >= 1, proofs  # made again
    monkeypatch.setenv("PATCHSTACK_NO_PROOF_CACHE", "1")
    assert _stop_by_stop(plain) == (stops, series)


def test_the_proofs_kept_are_in_the_order_made_those_loaded_first() -> None:
    """A kept list is cut to its last entries (`knockons.LIMIT`): it must drop the oldest,
    those an earlier command kept, not whatever a set's hash order put first."""
    from patchstack.git.merge import MergeResult
    from patchstack.model.ids import Oid

    def result(n: int) -> MergeResult:
        return MergeResult(Oid(f"{n:040x}"), True, (), "")

    old = {(f"old{n}",): result(n) for n in range(30)}
    memo = triage.Proofs(lambda: old)
    assert memo.get(("new0",)) is None  # the first lookup loads what was kept
    for n in range(30):
        memo[(f"new{n}",)] = result(100 + n)
        memo.made[(f"new{n}",)] = None
    kept = [k for k, _v in memo.kept()]
    assert kept == [*old, *[(f"new{n}",) for n in range(30)]]


def test_the_switch_turned_on_mid_refresh_makes_the_roots_merges_again(
    tmp_path, monkeypatch, proofs
) -> None:
    """``PATCHSTACK_NO_PROOF_KEEP=1`` set after the first stop: the replay merges that stop
    kept are not taken either (they were loaded and used as before)."""
    repo = _fork(tmp_path)

    def switch(stops: int) -> None:
        monkeypatch.setenv("PATCHSTACK_NO_PROOF_KEEP", "1")

    stops, _last, series = stop_by_stop(repo, switch)
    assert proofs.count("A.patch") >= 1, proofs
    assert "K.patch # essential" in series and "after A.patch" in series
