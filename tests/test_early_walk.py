"""A stop begins its culprit walk early (`KeptLines.guess`): ``git log -p -U0`` of the files
of the hunks its report will print, started before the stop is made and published, git
writing into a file of its own while the stop goes on; `merging.blame_first` takes each file
it walked from it. Differential: a refresh stop by stop prints the same stops, the same last
report and leaves the same series with the early walk and without
(``PATCHSTACK_NO_EARLY_WALK=1``: each file walked when traced), also where a stop carries a
deleted file's hunks (a relocation's lines shorten what is printed: a guessed file may be
walked for nothing) and where the short report prints some of many files only."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.git.history import History

from . import differential, test_kept_verdicts, test_relocate_skips
from .conftest import Repo, copy_repo, make_repo, numbered, slow_after
from .refresh_fixtures import series_fork, stop_by_stop

SWITCH = "PATCHSTACK_NO_EARLY_WALK"


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[str, ...]]]:
    """Each walk of upstream lines: ("early", its files) begun early, ("now", ...) when traced."""
    made: list[tuple[str, tuple[str, ...]]] = []
    now, early = History.line_changes, getattr(History, "start_line_changes", None)

    def counted(self, rng, paths, trailer=None):  # type: ignore[no-untyped-def]
        made.append(("now", tuple(paths)))
        return now(self, rng, paths, trailer)

    def started(self, rng, paths, trailer=None):  # type: ignore[no-untyped-def]
        made.append(("early", tuple(paths)))
        return early(self, rng, paths, trailer)

    monkeypatch.setattr(History, "line_changes", counted)
    monkeypatch.setattr(History, "start_line_changes", started, raising=False)
    return made


def _many_files(tmp_path: Path) -> Repo:
    """Each of three patches edits a line of its own in twelve files upstream rewrote there:
    the short report of each stop prints the first files' hunks only."""
    files = {f"m{k:02d}.py": numbered(30, f"m{k}") for k in range(12)}
    lines = {i: 4 + 10 * i for i in range(3)}
    series = [
        (f"p{i}", [(f"m{k:02d}", n, f"p{i} m{k}") for k in range(12)]) for i, n in lines.items()
    ]
    upstream = [
        (f"rewrites {k}", [(f"m{k:02d}", n, f"up m{k} {n}") for n in lines.values()])
        for k in range(12)
    ]
    return series_fork(tmp_path / "fork", files, series, upstream)


FORKS = {
    "kept-verdicts": test_kept_verdicts._fork,
    "relocations": test_relocate_skips._fork,
    "many-files": _many_files,
}


# The relocations' fork under -m slow (its stops are the same joined by file and plain in
# tests/test_relocate_skips.py by default); the other two by default.
@pytest.mark.parametrize("fork", slow_after(["kept-verdicts", "many-files", "relocations"], 2))
def test_stop_by_stop_is_the_same_with_the_early_walk_and_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walks: list, fork: str
) -> None:
    assert SWITCH in differential.SWITCHES
    repo = FORKS[fork](tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    early = stop_by_stop(repo)
    made = list(walks)
    walks.clear()
    monkeypatch.setenv(SWITCH, "1")
    assert stop_by_stop(plain) == early
    assert all(kind == "now" for kind, _p in walks)
    if fork != "relocations":  # (a deleted file's hunks: no upstream lines to walk)
        assert any(kind == "early" for kind, _p in made), made
        # every file walked once, by the early walk or when traced, as without it
        walked = sorted(p for _k, paths in made for p in paths)
        assert walked == sorted(p for _k, paths in walks for p in paths)


def test_a_stop_walks_early_the_files_its_report_prints_only(tmp_path: Path, walks: list) -> None:
    """The stops of a patch conflicting in twelve files: the files of the hunks the report
    traces (those it prints at most: `cli.conflicttext.printed_hunks`) are walked early, once
    each, and none of the others; none is walked when traced."""
    repo = _many_files(tmp_path)
    stops, _last, _series = stop_by_stop(repo)
    assert len(stops) == 3
    assert walks and all(kind == "early" for kind, _p in walks), walks
    first = walks[0][1]
    assert 0 < len(first) < 12
    assert first == tuple(f"m{k:02d}.py" for k in range(len(first)))
    printed = [f"m{k:02d}.py" for k in range(12) if f"  m{k:02d}.py:" in stops[0]]
    assert printed and set(printed) <= set(first)
    assert "more conflicting hunk(s)" in stops[0]
    walked = [p for _k, paths in walks for p in paths]
    assert len(walked) == len(set(walked))  # a file walked at one stop is kept for the next


def _attributes_at_a_stop(tmp_path: Path) -> Repo:
    """A conflicts in f.py; G adds a ``.gitattributes`` that makes g.py binary to git's diff;
    B conflicts in g.py. The stop at B publishes G's file: before it (when the walk begins)
    g.py is text to git, after it (when the report traces) binary: "unknown"."""
    files = {"f.py": numbered(30, "f"), "g.py": numbered(30, "g")}
    repo = make_repo(tmp_path / "fork", files)
    base = repo.head()

    def commit(path: str, line: int | None, text: str, subject: str) -> None:
        if line is None:
            repo.write(path, text)
        else:
            lines = repo.read(path).splitlines(keepends=True)
            lines[line - 1] = text + "\n"
            repo.write(path, "".join(lines))
        repo.commit_all(subject)

    commit("f.py", 5, "A f5", "A\n\nPatchstack-Tag: essential")
    commit(".gitattributes", None, "g.py -diff\n", "G\n\nPatchstack-Tag: essential")
    commit("g.py", 5, "B g5", "B\n\nPatchstack-Tag: essential")
    repo.ps("import", "commits", f"{base}..HEAD", "--base", base)
    repo.git("reset", "-q", "--keep", base)
    repo.ps("push", "--all")
    repo.git("checkout", "-q", "-b", "up", base)
    commit("f.py", 5, "up f5", "upstream rewrites f")
    commit("g.py", 5, "up g5", "upstream rewrites g")
    repo.git("checkout", "-q", "main")
    return repo


def test_a_gitattributes_the_stop_writes_has_the_early_walk_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walks: list
) -> None:
    repo = _attributes_at_a_stop(tmp_path)
    plain = copy_repo(repo.path, tmp_path / "plain")
    early = stop_by_stop(repo)
    made = list(walks)
    monkeypatch.setenv(SWITCH, "1")
    assert stop_by_stop(plain) == early
    stops = early[0]
    assert [s.split("conflict in patch ", 1)[1].split()[0] for s in stops] == ["A.patch", "B.patch"]
    assert "upstream commits: unknown" in stops[1] or "unknown" in stops[1].split("g.py:5:")[1]
    assert ("early", ("g.py",)) in made and ("now", ("g.py",)) in made, made


def test_check_begins_its_walk_before_it_triages(
    tmp_path: Path, walks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check's short output traces the first file of each primary conflict: the walk of the
    files the replay's conflicts say git left markers in (`printed.first_guessed`) begins as
    the replay ends, before the triage's merges (git walks while Python triages), and the
    trace takes it; the output is what walking when traced prints."""
    import patchstack.commands.check as check_command

    from .refresh_fixtures import make_fork

    repo = make_fork(tmp_path / "fork", conflict=True)
    real = check_command.reports

    def triaged(*args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append(("triage", ()))
        return real(*args, **kwargs)

    monkeypatch.setattr(check_command, "reports", triaged)
    early = repo.ps("check", "--onto", "upstream", code=1).stdout
    assert walks == [("early", ("a.py",)), ("triage", ())], walks
    walks.clear()
    monkeypatch.setenv(SWITCH, "1")
    assert repo.ps("check", "--onto", "upstream", code=1).stdout == early
    assert walks == [("triage", ()), ("now", ("a.py",))], walks


def test_check_guesses_no_walk_of_more_files_than_a_pathspec_takes(
    tmp_path: Path, walks: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A guess of more files than git is given as a pathspec (kernel-timers: 17) would be a
    walk of every commit's every file when asked: none is begun, and the walk of the files
    traced first begins after the triage, as before the guess."""
    import patchstack.commands.check as check_command
    from patchstack.git.history import PATHSPEC_MAX

    from .refresh_fixtures import make_fork

    repo = make_fork(tmp_path / "fork", conflict=True)
    real, guess = check_command.reports, check_command.first_guessed

    def triaged(*args, **kwargs):  # type: ignore[no-untyped-def]
        walks.append(("triage", ()))
        return real(*args, **kwargs)

    def many(conflicts):  # type: ignore[no-untyped-def]
        return [*guess(conflicts), *(f"gone/f{k}.py" for k in range(PATHSPEC_MAX))]

    monkeypatch.setattr(check_command, "reports", triaged)
    monkeypatch.setattr(check_command, "first_guessed", many)
    text = repo.ps("check", "--onto", "upstream", code=1).stdout
    assert walks == [("triage", ()), ("early", ("a.py",))], walks
    assert "  conflict  near.patch" in text
