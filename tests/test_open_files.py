"""A command run in process leaves no file open behind it (the test suite runs thousands in
one worker: a leaked descriptor a command ends at select()'s limit of 1,024)."""

from __future__ import annotations

import os

import pytest

from .conftest import Repo
from .refresh_fixtures import make_fork


def _open_files() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists /proc/self/fd")
def test_commands_at_a_stop_leave_no_file_open(tmp_path) -> None:
    fork: Repo = make_fork(tmp_path / "fork")
    fork.ps("status")
    before = _open_files()
    for _ in range(3):
        fork.ps("refresh", "--onto", "upstream", code=1)
        fork.ps("status", code=None)
        fork.ps("refresh", "--abort")
        fork.ps("check", "--onto", "upstream", code=None)
    assert _open_files() - before == set()
