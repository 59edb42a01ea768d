"""The cache writes a section this command changed nothing in as the bytes it was read from
(`Store._unchanged`): a skip of kernel-timers reads the drift's 6 MB of candidate lines
(``drift-lines``) and marshalled them again for nothing. ``PATCHSTACK_NO_RAW_SECTIONS=1``:
every section read is marshalled anew.

Unit: which sections are written anew (added to, forgotten in, an entry's generation moved)
and that the file reads back the same either way. Differential: a refresh stop by stop on a
real repository prints the same stops, leaves the same series and commits, and the same
cache (every section's entries and generations) with the shortcut and without."""

from __future__ import annotations

import marshal
import shutil
from pathlib import Path
from typing import Any

import pytest

from patchstack.store import RAW_OFF, Store

from . import differential
from .conftest import copy_repo
from .refresh_fixtures import stop_by_stop
from .test_resumed_renames import fork_losing_files


def contents(path: Path) -> dict[str, Any]:
    data = marshal.loads(path.read_bytes())
    sections = {k: marshal.loads(v) for k, v in data["sections"].items()}
    return {"generations": data["generations"], "sections": sections}


def raw_sections(path: Path) -> dict[str, bytes]:
    return dict(marshal.loads(path.read_bytes())["sections"])


def made(path: Path) -> None:
    store = Store(str(path))
    store.put("big", "k", ["lines"] * 1000)
    store.put("small", "a", 1)
    store.save()
    store = Store(str(path))
    store.put("small", "b", 2)  # a new generation of small; big's entries are of gen 1
    store.save()


@pytest.mark.parametrize("off", [False, True], ids=["raw", "marshalled"])
def test_a_section_only_read_is_written_as_read(tmp_path: Path, monkeypatch, off: bool) -> None:
    if off:
        monkeypatch.setenv(RAW_OFF, "1")
    path = tmp_path / "cache"
    made(path)
    before, whole = raw_sections(path), contents(path)
    store = Store(str(path))
    assert store.get("big", "k") == ["lines"] * 1000
    store.put("small", "c", 3)
    store.save()
    assert store.unmarshalled == ["big", "small"]
    assert store.marshalled == (["big", "small"] if off else ["small"])
    after = raw_sections(path)
    if not off:
        assert after["big"] is not None and after["big"] == before["big"]
    got = contents(path)
    assert got["sections"]["big"] == whole["sections"]["big"]
    assert got["sections"]["small"] == {"b": (2, 2), "c": (3, 3)}  # (a: two generations old)


def test_a_section_written_anew_when_an_entry_used_moves_generation(tmp_path: Path) -> None:
    path = tmp_path / "cache"
    made(path)
    store = Store(str(path))
    assert store.get("small", "a") == 1  # of generation 1, small is at 2: refreshed
    store.save()
    assert store.marshalled == ["small"]
    assert contents(path)["sections"]["small"]["a"] == (2, 1)
    store = Store(str(path))
    store.forget("big", "k")
    store.save()
    assert store.marshalled == ["big"]
    assert contents(path)["sections"]["big"] == {}


def test_a_section_that_did_not_read_is_written_anew(tmp_path: Path) -> None:
    path = tmp_path / "cache"
    made(path)
    data = marshal.loads(path.read_bytes())
    data["sections"]["big"] = b"not marshal"
    path.write_bytes(marshal.dumps(data))
    store = Store(str(path))
    assert store.get("big", "k") is None
    store.put("small", "z", 0)
    store.save()
    assert "big" in store.marshalled and contents(path)["sections"]["big"] == {}


def test_a_refresh_stop_by_stop_keeps_the_same_cache_without_the_shortcut(
    tmp_path: Path, monkeypatch
) -> None:
    """Both runs at the same path (the cache's keys hold `merge_inputs`, whose configuration
    names the repository's folder); the section ``proven`` apart: its entries are keyed by
    the patch files' stat data, which the move of the second copy into place changes."""
    repo, _head = fork_losing_files(tmp_path, False)
    copy_repo(repo.path, tmp_path / "plain")
    caches: dict[str, list[dict[str, Any]]] = {"raw": [], "plain": []}
    cache = repo.path / ".git" / "patchstack" / "cache"

    def keep(which: str) -> Any:
        def add(_n: int) -> None:
            found = contents(cache)
            found["generations"].pop("proven", None)
            found["sections"].pop("proven", None)
            caches[which].append(found)

        return add

    raw = stop_by_stop(repo, keep("raw"))
    raw_commits = differential.commits_of(repo, "up", "HEAD")
    shutil.move(repo.path, tmp_path / "raw")
    shutil.move(tmp_path / "plain", repo.path)
    monkeypatch.setenv(RAW_OFF, "1")
    assert stop_by_stop(repo, keep("plain")) == raw
    assert len(raw[0]) >= 2
    assert caches["raw"] == caches["plain"]
    assert differential.commits_of(repo, "up", "HEAD") == raw_commits
