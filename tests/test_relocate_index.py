"""Following the code reads what it needs (issue 35, items 1 and 7): the candidate files' line
hashes are kept in the git directory's cache (`engine.lineindex`), so a later command reads
the contents of only the files that may hold a block; the commits that deleted a file are
kept too. The proposals are the plain reading's (``PATCHSTACK_NO_LINE_INDEX=1``: every
candidate read and compared line by line), with a cold cache, a warm one, and a damaged one."""

from __future__ import annotations

import json
import marshal
import os
from pathlib import Path

import pytest

from patchstack.engine import lineindex
from patchstack.engine.relocate import PLAIN, WALKS, Relocator
from patchstack.git import find_repo
from patchstack.store import Store

from .conftest import Repo, make_repo, slow_after
from .test_relocate import CASES, MOVED_OUT, Case, random_case, scenario

# the generated cases: seeds 0 and 1 by default, 2 and 3 under -m slow
DIFFERENTIAL = [*CASES, *MOVED_OUT, *slow_after([random_case(s) for s in range(4)], 2)]


def _stop(repo: Repo) -> tuple[object, dict[str, bytes]]:
    """What a refresh onto upstream stops with (its report and the work tree), then aborted;
    and what check reports."""
    data = json.loads(repo.ps("refresh", "--onto", "upstream", "--json", code=1).stdout)
    shown = repo.snapshot()
    repo.ps("refresh", "--abort")
    check = json.loads(repo.ps("check", "--onto", "upstream", "--json", code=None).stdout)
    return (data["stopped"], data["patches"], check["patches"]), shown


def _cache(repo: Repo) -> Store:
    return Store(str(repo.path / ".git" / "patchstack" / "cache"))


@pytest.mark.parametrize("case", DIFFERENTIAL, ids=lambda c: c.name)
def test_the_index_proposes_what_the_plain_reading_does(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = scenario(tmp_path, case)
    monkeypatch.setenv(PLAIN, "1")
    plain = _stop(repo)
    assert lineindex.SECTION not in _cache(repo).sizes()
    monkeypatch.delenv(PLAIN)
    assert _stop(repo) == plain  # the cache cold: each file read and its lines hashed
    kept = _cache(repo).sizes().get(lineindex.SECTION, 0)
    assert kept > 0 or case.name == "deleted"  # (there upstream changed no file it kept)
    assert _stop(repo) == plain  # warm: the hashes read from the cache


def _two_commands(tmp_path: Path) -> tuple[Repo, str, str, Path]:
    files = {f"f{i}.py": f"def f{i}():\n    return {i}\n" for i in range(20)}
    repo = make_repo(tmp_path / "r", {"old.txt": "old\n"})
    base = repo.head()
    for path, text in files.items():
        repo.write(path, text)
    repo.write("bin.dat", "\0binary\n")
    repo.commit_all("upstream")
    return repo, base, repo.head(), repo.path / ".git" / "patchstack" / "cache"


def test_a_later_command_reads_only_the_files_that_may_hold_the_block(tmp_path: Path) -> None:
    repo, base, head, path = _two_commands(tmp_path)
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    first = Relocator(git, base, head, Store(str(path)))
    files = first._candidates(onto)
    assert len(files) == 20 and "bin.dat" not in files
    assert len(first.index.read) == 21  # every candidate read once, the binary one too
    first.store.save()  # type: ignore[union-attr]
    later = Relocator(git, base, head, Store(str(path)))
    assert later._candidates(onto) == files
    assert later.index.read == set()
    assert later._locate(onto, ["    return 7"], files) == ("f7.py", 1)  # (0-based)
    assert later.index.read == {files["f7.py"]}  # the one file that has the line
    git.close()


def _damage(path: Path, how: str) -> None:
    with open(path, "rb") as f:
        data = marshal.load(f)
    entries = marshal.loads(data["sections"][lineindex.SECTION])
    for blob, (gen, (scheme, packed, check)) in list(entries.items()):
        if how == "hashes":  # a line's hash lost, the check left as it was
            packed = lineindex.hashes_of(b"")
        else:  # an entry another scheme wrote, checked by its own rule
            scheme, packed = "foreign", lineindex.hashes_of(b"")
            check = lineindex._check(blob, packed)
        entries[blob] = (gen, [scheme, packed, check])
    data["sections"][lineindex.SECTION] = marshal.dumps(entries)
    path.write_bytes(marshal.dumps(data))


@pytest.mark.parametrize("how", ["hashes", "foreign"])
def test_a_damaged_or_foreign_entry_is_not_trusted(tmp_path: Path, how: str) -> None:
    """An entry that would hide the line (a false "not here") is checked and made again."""
    repo, base, head, path = _two_commands(tmp_path)
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    first = Relocator(git, base, head, Store(str(path)))
    files = first._candidates(onto)
    first.store.save()  # type: ignore[union-attr]
    _damage(path, how)
    later = Relocator(git, base, head, Store(str(path)))
    assert later._candidates(onto) == files
    assert later.index.read == set(files.values()) | set(first.index.read)  # all made again
    assert later._locate(onto, ["    return 7"], files) == ("f7.py", 1)  # (0-based)
    git.close()


def test_the_commit_that_deleted_a_file_is_kept_and_checked(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "r", {"a.c": "int a;\n", "b.c": "int b;\n"})
    base = repo.head()
    repo.git("rm", "-q", "a.c")
    repo.commit_all("Remove a.c")
    gone = repo.head()
    repo.write("c.c", "int c;\n")
    head = repo.commit_all("Add c.c")
    git = find_repo(str(repo.path))
    path = os.path.join(git.common_dir, "patchstack", "cache")
    first = Relocator(git, base, head, Store(path))
    assert first._deleted(["a.c", "b.c"]) == {"a.c": gone, "b.c": None}
    first.store.save()  # type: ignore[union-attr]
    store = Store(path)
    assert store.get(WALKS, f"deleted {base}..{head} a.c") == gone
    assert Relocator(git, base, head, store)._deleted(["a.c", "b.c"]) == {"a.c": gone, "b.c": None}
    store.put(WALKS, f"deleted {base}..{head} a.c", "0" * 40)  # a commit not in the repository
    assert Relocator(git, base, head, store)._deleted(["a.c"]) == {"a.c": gone}
    git.close()


def test_the_hashes_are_the_same_in_every_process() -> None:
    """Kept for the next command: a hash that another interpreter (another hash seed) makes
    differently would hide the line there."""
    import struct
    import subprocess
    import sys

    data = b"def f():\n    return 1\n\nx = 2\n\xff\xfe bytes\n"
    code = "import struct, sys; from patchstack.engine.lineindex import hashes_of as h;"
    code += f" print(sorted(struct.iter_unpack('<I', h({data!r}))))"
    got = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    mine = sorted(struct.iter_unpack("<I", lineindex.hashes_of(data)))
    assert got == {f"{mine}\n"} and len(mine) == 5
