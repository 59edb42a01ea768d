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

from patchstack.engine import linehashes, lineindex
from patchstack.engine.deleters import WALKS
from patchstack.engine.relocate import NO_JOINED, PLAIN, Relocator
from patchstack.git import find_repo
from patchstack.store import Store

from .conftest import Repo, make_repo, slow_after
from .test_relocate import CASES, MOVED_OUT, Case, random_case, scenario

# By default a block moved to another file, one moved out of a file upstream kept, and
# generated seed 0 (which mixes the ways); the other hand-made cases (split, deleted, copied
# twice, moved out twice, ...) under -m slow, as are seeds 1 to 3: their proposals, the
# index's, are checked by default in tests/test_relocate.py (the plain reading), and the
# README's test command stays short.
DEFAULT = {"moved", "moved-out"}
DIFFERENTIAL = [
    *[c for c in [*CASES, *MOVED_OUT] if c.name in DEFAULT],
    *slow_after([c for c in [*CASES, *MOVED_OUT] if c.name not in DEFAULT], 0),
    *slow_after([random_case(s) for s in range(4)], 1),
]


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
    monkeypatch.setenv(NO_JOINED, "1")
    assert _stop(repo) == plain  # the cache cold: each file read and its lines hashed
    kept = _cache(repo).sizes().get(lineindex.SECTION, 0)
    assert kept > 0 or case.name == "deleted"  # (there upstream changed no file it kept)
    assert _stop(repo) == plain  # warm: the hashes read from the cache, file by file
    assert lineindex.JOINED not in _cache(repo).sizes()
    monkeypatch.delenv(NO_JOINED)
    assert _stop(repo) == plain  # the drift's files joined, made from the entries of each
    assert _cache(repo).sizes().get(lineindex.JOINED, 0) >= (kept > 0)
    assert _stop(repo) == plain  # and read joined
    (repo.path / ".git" / "patchstack" / "cache").unlink()
    assert _stop(repo) == plain  # the cache cold: kept joined only


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


def test_a_later_command_reads_only_the_files_that_may_hold_every_line(tmp_path: Path) -> None:
    """A block's longest line in many files (an import): only the files whose hashes hold
    its other lines too are read."""
    repo = make_repo(tmp_path / "r", {"old.txt": "old\n"})
    base = repo.head()
    for i in range(12):
        repo.write(f"k{i}.py", f"import triton.language as tl\n\ndef k{i}():\n    return {i}\n")
    head = repo.commit_all("upstream")
    path = repo.path / ".git" / "patchstack" / "cache"
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    first = Relocator(git, base, head, Store(str(path)))
    files = first._candidates(onto)
    first.store.save()  # type: ignore[union-attr]
    later = Relocator(git, base, head, Store(str(path)))
    assert later._candidates(onto) == files and later.index.read == set()
    block = ["import triton.language as tl", "", "def k7():"]
    assert later._locate(onto, block, files) == ("k7.py", 0)
    assert later.index.read == {files["k7.py"]}  # not the 11 others with the import
    git.close()


def _damage(path: Path, how: str) -> None:
    with open(path, "rb") as f:
        data = marshal.load(f)
    entries = marshal.loads(data["sections"].get(lineindex.SECTION, marshal.dumps({})))
    for blob, (gen, (scheme, packed, check)) in list(entries.items()):
        if how == "hashes":  # a line's hash lost, the check left as it was
            packed = linehashes.hashes_of(b"")
        else:  # an entry another scheme wrote, checked by its own rule
            scheme, packed = "foreign", linehashes.hashes_of(b"")
            check = linehashes.blob_check(blob, packed)
        entries[blob] = (gen, [scheme, packed, check])
    data["sections"][lineindex.SECTION] = marshal.dumps(entries)
    joined = marshal.loads(data["sections"].get(lineindex.JOINED, marshal.dumps({})))
    for key, (gen, value) in list(joined.items()):
        if len(value) == 6:  # (the joined hashes; not the candidates)
            if how == "hashes":
                value[3] = value[3][4:]
            else:
                value[0] = "foreign"
        joined[key] = (gen, value)
    data["sections"][lineindex.JOINED] = marshal.dumps(joined)
    path.write_bytes(marshal.dumps(data))


@pytest.mark.parametrize("joined", [True, False], ids=["joined", "by-file"])
@pytest.mark.parametrize("how", ["hashes", "foreign"])
def test_a_damaged_or_foreign_entry_is_not_trusted(
    tmp_path: Path, how: str, joined: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry that would hide the line (a false "not here") is checked and made again."""
    if not joined:
        monkeypatch.setenv(NO_JOINED, "1")
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
    assert first.walks.deleted(["a.c", "b.c"]) == {"a.c": gone, "b.c": None}
    first.store.save()  # type: ignore[union-attr]
    store = Store(path)
    assert store.get(WALKS, f"deleted {base}..{head} a.c") == gone
    assert Relocator(git, base, head, store).walks.deleted(["a.c", "b.c"]) == {
        "a.c": gone,
        "b.c": None,
    }
    store.put(WALKS, f"deleted {base}..{head} a.c", "0" * 40)  # a commit not in the repository
    assert Relocator(git, base, head, store).walks.deleted(["a.c"]) == {"a.c": gone}
    git.close()


def test_the_hashes_are_the_same_in_every_process() -> None:
    """Kept for the next command: a hash that another interpreter (another hash seed) makes
    differently would hide the line there."""
    import struct
    import subprocess
    import sys

    data = b"def f():\n    return 1\n\nx = 2\n\xff\xfe bytes\n"
    code = "import struct, sys; from patchstack.engine.linehashes import hashes_of as h;"
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
    mine = sorted(struct.iter_unpack("<I", linehashes.hashes_of(data)))
    assert got == {f"{mine}\n"} and len(mine) == 5


def test_objects_read_one_by_one_leave_the_batch_reader_in_step(tmp_path: Path) -> None:
    """`each_object` (the cold reading of the candidates, hashed as they come): a caller that
    stops early leaves no answer unread for the next question."""
    repo, _base, _head, _path = _two_commands(tmp_path)
    git = find_repo(str(repo.path))
    blobs = [git.entries_at(git.tree_of("HEAD"), [f"f{i}.py"])[f"f{i}.py"][1] for i in range(20)]
    every = list(git.each_object([*blobs, "0" * 40]))
    assert every[:-1] == git.read_objects(blobs) and every[-1] is None
    reader = git.each_object(blobs * 20)  # two chunks of 256
    assert next(reader) == ("blob", b"def f0():\n    return 0\n")
    reader.close()
    assert git.read_blob(blobs[5]) == b"def f5():\n    return 5\n"
    git.close()


def test_lines_looked_up_together_are_found_where_each_alone_is(tmp_path: Path) -> None:
    """`LineIndex.expect`: the lines of a relocation's blocks looked up in one pass over the
    candidates' hashes give each line's files as its own search, and as the plain reading."""
    import random

    rng = random.Random(7)
    words = [f"    call_{i}(x)" for i in range(40)] + ["", "import os", "\xe9t\xe9 = 1"]
    files = {f"m{i}.py": "\n".join(rng.choices(words, k=rng.randrange(1, 30))) for i in range(30)}
    repo = make_repo(tmp_path / "r", {"old.txt": "old\n"})
    base = repo.head()
    for path, text in files.items():
        repo.write(path, text + ("\n" if rng.random() < 0.8 else ""))
    head = repo.commit_all("upstream")
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    blocks = [rng.choices(words, k=rng.randrange(1, 4)) for _ in range(60)]
    answers = []
    for mode in ("together", "alone", "plain"):
        relocator = Relocator(git, base, head, None)
        relocator.index = lineindex.LineIndex(git, None, plain=mode == "plain")
        blobs = sorted(set(relocator._candidates(onto).values()))
        if mode == "together":
            relocator.index.expect(blocks)
        answers.append([relocator.index.block(blobs, b) for b in blocks])
    together, alone, plain = answers
    assert together == alone
    lines = {b: set(git.read_blob(b).decode().split("\n")) for b in set().union(*plain)}
    holds = [
        {b for b in found if set(k) <= lines[b]} for k, found in zip(blocks, plain, strict=True)
    ]
    assert all(h <= t <= p for h, t, p in zip(holds, together, plain, strict=True))
    assert together != plain and any(together) and not all(together)
    git.close()


def test_a_first_stop_finds_the_lines_as_it_hashes_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many blocks expected (a first stop's): which files have their lines is found as each
    file's hashes are made, not by unpacking every file's hashes again; the same answers as
    files whose hashes were kept, and within the plain reading's (a block's longest line)."""
    import random

    rng = random.Random(11)
    words = [f"    call_{i}(x)" for i in range(60)] + ["", "import os"]
    repo = make_repo(tmp_path / "r", {"old.txt": "old\n"})
    base = repo.head()
    for i in range(40):
        repo.write(f"m{i}.py", "\n".join(rng.choices(words, k=rng.randrange(1, 30))) + "\n")
    head = repo.commit_all("upstream")
    git = find_repo(str(repo.path))
    onto = git.tree_of("HEAD")
    blocks = [rng.choices(words, k=rng.randrange(1, 4)) for _ in range(lineindex.EACH_FROM + 9)]
    unpacked: list[bytes] = []
    real = lineindex.values
    monkeypatch.setattr(lineindex, "values", lambda p: unpacked.append(p) or real(p))
    path = str(repo.path / ".git" / "patchstack" / "cache")
    answers = []
    for mode in ("learnt", "kept", "plain"):
        relocator = Relocator(git, base, head, Store(path))
        relocator.index = lineindex.LineIndex(git, Store(path), mode == "plain", "drift")
        relocator.index.expect(blocks)
        blobs = sorted(set(relocator._candidates(onto).values()))
        answers.append([relocator.index.block(blobs, b) for b in blocks])
        if mode == "learnt":
            assert relocator.index.read and unpacked == []  # (each file hashed, none unpacked)
            relocator.index.store.save()  # type: ignore[union-attr]
        elif mode == "kept":
            assert not relocator.index.read and unpacked  # (the hashes kept, unpacked)
    learnt, kept, plain = answers
    assert learnt == kept and all(k <= p for k, p in zip(kept, plain, strict=True))
    git.close()
