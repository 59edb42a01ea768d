"""The first stop's line index learnt while the replay merges (issue 35, `engine.lineprefetch`):
when upstream deleted a file a patch changes, the new base's candidate files are read and
hashed in a thread of the refresh, and the stop takes what it learnt. Differential: the stops,
their work trees and `check`'s report are those of the stop learning for itself
(``PATCHSTACK_NO_LINE_PREFETCH=1``) and of the plain reading (``PATCHSTACK_NO_LINE_INDEX=1``),
with the stop that follows the code first, or after a stop that does not (what was learnt
then is kept for the ``--skip``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstack.engine import lineindex, lineprefetch
from patchstack.engine.deleters import WALKS
from patchstack.engine.relocate import PLAIN, Relocator
from patchstack.git import find_repo
from patchstack.git.blobstream import start_blob_stream
from patchstack.git.deletions import NO_WALK_DRAIN as DRAIN
from patchstack.store import Store

from .conftest import Repo, make_repo, slow_after
from .test_relocate import CASES, OLD, Case, build, random_case, scenario

NO = lineprefetch.NO_PREFETCH
# By default a block moved to another file and a block deleted (the two ways the prefetch's
# walks end); split and function-moved, the other hand-made cases and the seeds under -m slow
# (each case's stop is checked by default in tests/test_relocate.py, the plain reading).
DEFAULT = ("moved", "deleted")
DIFFERENTIAL = [
    *[c for c in CASES if c.name in DEFAULT],
    *slow_after([c for c in CASES if c.name not in DEFAULT], 0),
    *slow_after([random_case(s) for s in range(3)], 0),
]


def _stops(repo: Repo) -> list[object]:
    """Every stop of a refresh onto upstream, skipped one by one (report and work tree),
    then undone; and what check reports."""
    said: list[object] = []
    result = repo.ps("refresh", "--onto", "upstream", "--json", code=None)
    while result.exit_code == 1:
        said.append((json.loads(result.stdout)["stopped"], repo.snapshot()))
        result = repo.ps("refresh", "--skip", "--json", code=None)
    assert result.exit_code == 0, result.output
    said.append((result.stdout, repo.snapshot()))
    for _ in said:  # (the refresh, then each skip)
        repo.ps("undo")
    check = json.loads(repo.ps("check", "--onto", "upstream", "--json", code=None).stdout)
    return [*said, check["patches"]]


def _cold(repo: Repo) -> None:
    (repo.path / ".git" / "patchstack" / "cache").unlink(missing_ok=True)


def _compare(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    monkeypatch.setenv(PLAIN, "1")
    plain = _stops(repo)
    monkeypatch.delenv(PLAIN)
    # learnt at the stop; then as the replay merges, the deletion walk begun at the stop;
    # then both begun at the start, the walks read when asked, then as git writes them
    for switch, early, drain in (("1", None, None), (None, "1", None), (None, None, "1")) + (
        (None, None, None),
    ):
        _cold(repo)
        for name, value in ((NO, switch), (lineprefetch.NO_EARLY_DELETIONS, early), (DRAIN, drain)):
            if value:
                monkeypatch.setenv(name, value)
            else:
                monkeypatch.delenv(name, raising=False)
        assert _stops(repo) == plain
        assert _stops(repo) == plain  # (the cache warm: nothing left to learn first)
    return plain


@pytest.mark.parametrize("case", DIFFERENTIAL, ids=lambda c: c.name)
def test_the_prefetch_stops_as_the_stop_learning_itself_does(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = scenario(tmp_path, case)
    assert len(_compare(repo, monkeypatch)) == 3  # (one stop)


def _plain_conflict_first(tmp_path: Path, case: Case) -> Repo:
    """`scenario` with a patch before p1 that meets a plain conflict upstream (b.txt): the
    first stop follows no code; the second, after ``--skip``, does."""
    repo = make_repo(tmp_path / "fork", {**build(OLD, frozenset()), "b.txt": "one\ntwo\n"})
    repo.git("checkout", "-q", "-b", "upstream")
    repo.git("rm", "-q", "a.c")
    for path, text in build(case.new, frozenset()).items():
        repo.write(path, text)
    repo.write("b.txt", "one\nTWO upstream\n")
    repo.commit_all("Move the code around")
    repo.git("checkout", "-q", "main")
    repo.ps("init")
    repo.write("b.txt", "one\ntwo patched\n")
    repo.ps("new", "p0", "--tag", "diagnostic", "-m", "Say two")
    repo.write("a.c", build(OLD, case.edits)["a.c"])
    repo.ps("new", "p1", "--tag", "essential", "-m", "Tune the functions")
    return repo


@pytest.mark.parametrize("case", [CASES[0], *slow_after(CASES[1:3], 0)], ids=lambda c: c.name)
def test_what_a_stop_following_no_code_learnt_is_kept_for_the_skip(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _plain_conflict_first(tmp_path, case)
    plain = _compare(repo, monkeypatch)
    assert len(plain) == 4 and [s[0]["patch"] for s in plain[:2]] == ["p0.patch", "p1.patch"]  # type: ignore[index]
    _cold(repo)
    result = repo.ps("refresh", "--onto", "upstream", code=1)
    assert "p0.patch" in result.stderr
    kept = Store(str(repo.path / ".git" / "patchstack" / "cache"))
    assert kept.sizes().get(lineindex.JOINED, 0) > 0  # (the first stop kept the drift's)
    assert kept.sizes().get(WALKS, 0) > 0  # (and the deletion walk begun with it)
    repo.ps("refresh", "--abort")


def test_the_stop_takes_what_the_thread_learnt(tmp_path: Path) -> None:
    """The engine's view: the prefetch is started for a patch's deleted file, and the stop's
    relocation takes its hashes (reading none of those files itself), with the proposal, the
    files `_learn` reads and the cache entries of the stop that learns for itself."""
    repo = scenario(tmp_path, CASES[0])
    git = find_repo(str(repo.path))
    base = repo.git("rev-parse", "HEAD").strip()
    up = repo.git("rev-parse", "upstream").strip()
    # (the patch's change as a step: HEAD's parent -> HEAD, placed onto upstream's tree)
    repo.ps("push", "--all")
    after, before = (repo.git("rev-parse", f"HEAD{s}^{{tree}}").strip() for s in ("", "^"))
    onto = git.tree_of(up)
    merged = git.merge_trees(before, onto, after, ("ours", "theirs"))
    got = []
    for prefetch in (None, lineprefetch.start(git, None, base, up, ["a.c"])):
        assert prefetch is not None or not got
        relocator = Relocator(git, base, up, None, prefetch)
        proposal = relocator.propose(before, after, onto, merged)  # type: ignore[arg-type]
        got.append((proposal, relocator.index.read, relocator.index._packed))
        if prefetch is not None:
            assert prefetch.adopted == len(prefetch.blobs) > 0
    assert got[0] == got[1] and got[0][0] is not None
    assert lineprefetch.start(git, None, base, up, ["b.c"]) is None  # (no file deleted)
    git.close()


def test_the_deletion_walk_begun_with_the_prefetch_is_the_one_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk for the commit that deleted each patched file begins with the prefetch (while
    the replay merges); the relocation asks no walk of its own, and names the same commit."""
    from patchstack.git.deletions import Deletions

    repo = scenario(tmp_path, CASES[0])
    git = find_repo(str(repo.path))
    base, up = (repo.git("rev-parse", r).strip() for r in ("HEAD", "upstream"))
    repo.ps("push", "--all")
    after, before = (repo.git("rev-parse", f"HEAD{s}^{{tree}}").strip() for s in ("", "^"))
    onto = git.tree_of(up)
    merged = git.merge_trees(before, onto, after, ("ours", "theirs"))
    walks: list[list[str]] = []
    real = Deletions.start_deleted_by_each

    def counted(self: Deletions, rng: str, paths: list[str]) -> object:
        walks.append(list(paths))
        return real(self, rng, paths)

    monkeypatch.setattr(Deletions, "start_deleted_by_each", counted)
    got = []
    for early in ("1", None):
        if early:
            monkeypatch.setenv(lineprefetch.NO_EARLY_DELETIONS, early)
        else:
            monkeypatch.delenv(lineprefetch.NO_EARLY_DELETIONS)
        walks.clear()
        prefetch = lineprefetch.start(git, None, base, up, ["a.c"])
        assert prefetch is not None and (prefetch.walks is None) == bool(early)
        begun = list(walks)
        relocator = Relocator(git, base, up, None, prefetch)
        got.append(relocator.propose(before, after, onto, merged))  # type: ignore[arg-type]
        assert walks == [["a.c"]] and begun == ([] if early else [["a.c"]])
        prefetch.close()
    assert got[0] == got[1] and got[0] is not None and got[0].relocations
    git.close()


def test_the_blob_stream_reads_what_the_batch_reader_does(tmp_path: Path) -> None:
    big = "".join(f"line {i}\n" for i in range(300_000))  # (more than a read's chunk)
    repo = make_repo(tmp_path / "r", {"big.bin": big, "e.txt": "", "s.txt": "small\n"})
    git = find_repo(str(repo.path))
    tree = git.tree_of("HEAD")
    ids = [git.entries_at(tree, [p])[p][1] for p in ("s.txt", "big.bin", "e.txt")]
    names = [*ids, "0" * 40, ids[0], *ids * 30]
    stream = start_blob_stream(git, names)
    got = [None if a is None else a[1] for a in stream]
    assert got == [None if a is None else a[1] for a in git.read_objects(names)]
    cut = start_blob_stream(git, names)
    assert next(iter(cut)) == (6, b"small\n")
    cut.close()  # (git ended where it was)
    git.close()


def test_one_reader_of_a_batch_answers_first_line() -> None:
    """`git.objects.batch_header`, the one reader of ``cat-file --batch``'s first line (the
    persistent batch and the blob stream each parsed it)."""
    from patchstack.errors import GitFailure
    from patchstack.git.objects import batch_header

    assert batch_header(b"1a2b blob 12") == ("blob", 12)
    assert batch_header(b"HEAD:a file with spaces missing") is None
    assert batch_header(b"1a2b ambiguous") is None and batch_header(b"missing") is None
    with pytest.raises(GitFailure, match="unexpected answer"):
        batch_header(b"1a2b blob twelve")


def test_check_takes_the_candidates_learnt_as_its_replay_merged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check` starts the prefetch as a refresh does, and its relocations take what the thread
    learnt (the reports equal with and without it: `test_the_prefetch_stops_as_...`)."""
    repo = scenario(tmp_path, CASES[0])
    adopted: list[tuple[int, int]] = []
    close = lineprefetch.Prefetch.close

    def closing(self: lineprefetch.Prefetch) -> None:
        adopted.append((self.adopted, len(self.blobs)))
        close(self)

    monkeypatch.setattr(lineprefetch.Prefetch, "close", closing)
    said = repo.ps("check", "--onto", "upstream", "--json", code=None).stdout
    assert json.loads(said)["conflicts"] and len(adopted) == 1
    assert adopted[0][0] == adopted[0][1] > 0
    monkeypatch.setenv(NO, "1")
    assert repo.ps("check", "--onto", "upstream", "--json", code=None).stdout == said
    assert len(adopted) == 1  # (none started)


_POOL = ["int x;", "int y;", "", "  }", "return x;", "x\r", "caf\u00e9", "a b", "#", "int x; "]


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.lists(
        st.tuples(st.lists(st.sampled_from(_POOL), max_size=12), st.booleans(), st.booleans()),
        min_size=1,
        max_size=5,
    ),
    blocks=st.lists(
        st.tuples(st.lists(st.sampled_from(_POOL), min_size=1, max_size=3), st.booleans()),
        min_size=1,
        max_size=8,
    ),
)
def test_lazy_blobs_hold_what_the_hashes_hold_and_every_holder(
    tmp_path_factory: pytest.TempPathFactory,
    files: list[tuple[list[str], bool, bool]],
    blocks: list[tuple[list[str], bool]],
) -> None:
    """Generated candidates (lines shared, blank, with a carriage return, a last line with no
    newline, a file holding a NUL) and blocks, some announced (`expect`) and some not: of
    each block, the lazy blobs (`check`'s prefetch: nothing hashed) answer a subset of what
    the hashes answer and every searched file that holds each of the block's lines (so
    `relocate`, which reads and locates exactly among them, proposes the same)."""
    tmp = tmp_path_factory.mktemp("lazy")
    texts = {
        f"f{i}.c": "\n".join(lines) + ("\n" if end else "") + ("\0" if nul else "")
        for i, (lines, end, nul) in enumerate(files)
    }
    repo = make_repo(tmp, {"gone.c": "old\n", "keep.c": "k\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.git("rm", "-q", "gone.c")
    for path, text in texts.items():
        repo.write(path, text)
    repo.commit_all("Upstream")
    up = repo.git("rev-parse", "HEAD").strip()
    git = find_repo(str(repo.path))
    answers = []
    for lazy in (True, False):
        prefetch = lineprefetch.start(git, None, base, up, ["gone.c"], lazy=lazy)
        assert prefetch is not None
        index = lineindex.LineIndex(git, None)
        index.prefetch = prefetch
        searched = sorted(index.searched(prefetch.blobs))
        assert bool(index._lazy) == (lazy and bool(searched))
        index.expect([b for b, announced in blocks if announced])
        answers.append([index.block(searched, b) for b, _a in blocks])
        prefetch.close()
    contents = {b: git.read_blob(b) for b in searched}
    for (block, _a), lazy_found, hashed in zip(blocks, *answers, strict=True):
        lines = [ln.encode("utf-8", "surrogateescape") for ln in block]
        holders = {b for b, c in contents.items() if set(lines) <= set(c.split(b"\n"))}
        assert holders <= lazy_found <= hashed, (block, texts)
    git.close()


@pytest.mark.parametrize("case", DIFFERENTIAL, ids=lambda c: c.name)
def test_a_checks_prefetch_hashes_nothing_and_reports_the_same(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`check`'s prefetch reads the candidates and hashes none (`lineprefetch`'s lazy blobs);
    its report is the bytes of the hashing prefetch's (``PATCHSTACK_NO_LAZY_LINES=1``) and of
    the plain reading (``PATCHSTACK_NO_LINE_INDEX=1``)."""
    repo = scenario(tmp_path, case)
    hashed: list[int] = []
    real = lineprefetch.hashes_of

    def counted(data: bytes) -> bytes:
        hashed.append(len(data))
        return real(data)

    monkeypatch.setattr(lineprefetch, "hashes_of", counted)
    said, counts = {}, {}
    for switch in (PLAIN, lineprefetch.NO_LAZY, None):
        _cold(repo)
        hashed.clear()
        if switch:
            monkeypatch.setenv(switch, "1")
        said[switch] = repo.ps("check", "--onto", "upstream", "--json", code=None).stdout
        if switch:
            monkeypatch.delenv(switch)
        counts[switch] = len(hashed)
    assert counts[None] == counts[PLAIN] == 0  # (the plain reading starts no prefetch)
    assert json.loads(said[None])["conflicts"]
    assert said[None] == said[PLAIN] == said[lineprefetch.NO_LAZY]
