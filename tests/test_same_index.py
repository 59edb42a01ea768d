"""An index of the same bytes as one asked before in the command is that one's tree
(`TempIndex.try_write_tree`): a publish checks that the index it holds is the one its
snapshot read (`journal.moves.check_unmoved`), a copy of the same file, without a second
``git write-tree``. ``PATCHSTACK_NO_SAME_INDEX=1``: git is asked each time.

Unit: the same bytes, one ``write-tree``; an index changed meanwhile (a ``git add``) is asked
again and gives its own tree, so the publish still refuses it. Differential: a refresh stop
by stop prints the same stops and leaves the same series and commits with the shortcut and
without; each skip runs one ``write-tree`` fewer."""

from __future__ import annotations

from pathlib import Path

import pytest

from patchstack.git.index import SAME_INDEX_OFF
from patchstack.git.repo import find_repo

from . import differential
from .conftest import copy_repo, make_repo
from .refresh_fixtures import stop_by_stop
from .test_replay_exact import git_commands
from .test_resumed_renames import fork_losing_files


def index_tree(git) -> str | None:  # type: ignore[no-untyped-def]
    with git.temp_index() as idx:
        idx.copy_from(git.index_path)
        return idx.try_write_tree()


@pytest.mark.parametrize("off", [False, True], ids=["same-bytes", "asked-each-time"])
def test_the_same_index_is_asked_once_and_a_changed_one_again(
    tmp_path: Path, monkeypatch, off: bool
) -> None:
    if off:
        monkeypatch.setenv(SAME_INDEX_OFF, "1")
    repo = make_repo(tmp_path / "r", {"a.py": "a\n"})
    git = find_repo(str(repo.path))
    try:
        trace = tmp_path / "trace.json"
        monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
        first = index_tree(git)
        assert index_tree(git) == first == repo.git("rev-parse", "HEAD^{tree}").strip()
        assert git_commands(trace).count("write-tree") == (2 if off else 1)
        repo.write("a.py", "a changed\n")
        repo.git("add", "a.py")  # (a 'git add' while a command runs)
        changed = index_tree(git)
        assert changed != first and changed == repo.git("write-tree").strip()
    finally:
        git.close()


def test_a_refresh_stop_by_stop_is_the_same_without_the_shortcut(
    tmp_path: Path, monkeypatch
) -> None:
    repo, _head = fork_losing_files(tmp_path, False)
    plain = copy_repo(repo.path, tmp_path / "plain")
    counts: dict[str, list[int]] = {"same": [], "off": []}

    def traced(which: str, at: Path) -> object:
        def before(n: int) -> None:
            if n > 1:  # the skip before this one
                counts[which].append(git_commands(at).count("write-tree"))
            at.unlink(missing_ok=True)

        return before

    monkeypatch.setenv("GIT_TRACE2_EVENT", str(tmp_path / "same.json"))
    same = stop_by_stop(repo, traced("same", tmp_path / "same.json"))
    monkeypatch.setenv(SAME_INDEX_OFF, "1")
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(tmp_path / "off.json"))
    assert stop_by_stop(plain, traced("off", tmp_path / "off.json")) == same
    assert differential.commits_of(repo, "up", "HEAD") == differential.commits_of(
        plain, "up", "HEAD"
    )
    assert counts["same"] and [n + 1 for n in counts["same"]] == counts["off"]
