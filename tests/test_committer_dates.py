"""`engine.committer.raw_date` against git: a date the fast-import stream writes as given must
be the very date ``git commit-tree`` writes for it (else commit-tree writes the commit, and
git's rules, or its refusal, apply). git 2.39 refuses an epoch of fewer than nine digits
(before 1973) and a date from 2100 on, writes one before 1970 unsigned, and normalises a
leading zero, ``-0000`` and a zone beyond 23:59 to ``+0000``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from patchstack.engine.committer import raw_date

from .conftest import Repo

TRICKY = [
    "12345 +0000",
    "99999999 +0000",
    "100000000 +0000",
    "0100000000 +0000",
    "1700000000 +0100",
    "1700000000 -0000",
    "1700000000 +0060",
    "1700000000 +2400",
    "1700000000 -2359",
    "1700000000 +9999",
    "4000000000 +0000",
    "4294967294 +0000",
    "99999999999 +0000",
    "Tue, 14 Nov 2023 22:13:20 +0100",
    "Thu, 1 Jan 1970 00:00:00 +0000",
    "Sat, 3 Mar 1973 09:46:40 +0000",
    "Thu, 1 Jan 1970 00:00:00 +0100",  # before the epoch: git writes it unsigned
    "Fri, 31 Dec 2099 23:59:59 +0000",
    "Mon, 1 Jan 2150 00:00:00 +0000",
]


def _git_date(repo: Path, text: str) -> str | None:
    """The author date ``git commit-tree`` writes for ``text``, or None when it refuses it."""
    env = {**os.environ, "GIT_AUTHOR_DATE": text, "GIT_COMMITTER_DATE": text}
    tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # the empty tree
    proc = subprocess.run(
        ["git", "commit-tree", tree, "-m", "x"], cwd=repo, env=env, capture_output=True, text=True
    )
    if proc.returncode:
        return None
    body = subprocess.run(
        ["git", "cat-file", "commit", proc.stdout.strip()],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    author = next(ln for ln in body.splitlines() if ln.startswith("author "))
    return " ".join(author.rsplit(" ", 2)[1:])


@pytest.fixture(scope="module")
def empty(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("dates")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def _agrees(repo: Path, text: str) -> None:
    mine = raw_date(text)
    if mine is not None:  # the stream writes it: git must write the same
        assert _git_date(repo, text) == mine, text


def test_a_date_the_stream_writes_is_the_one_commit_tree_writes(empty: Path) -> None:
    for text in TRICKY:
        _agrees(empty, text)
    assert raw_date("1700000000 +0100") == "1700000000 +0100"  # the common case streams
    # hypothesis's find in CI: git writes -0001 as +0000 (-1 minute is its "no zone")
    _agrees(empty, "100000000 -0001")
    _agrees(empty, "Sat, 3 Mar 1973 09:46:40 -0001")
    assert raw_date("Tue, 14 Nov 2023 22:13:20 +0100") == "1699996400 +0100"


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    epoch=st.one_of(st.integers(0, 2 * 10**8), st.integers(10**8, 5 * 10**9)),
    zeros=st.sampled_from(["", "0"]),
    sign=st.sampled_from("+-"),
    hours=st.integers(min_value=0, max_value=30),
    minutes=st.integers(min_value=0, max_value=99),
)
def test_any_raw_date_streams_only_as_git_writes_it(
    empty: Path, epoch: int, zeros: str, sign: str, hours: int, minutes: int
) -> None:
    _agrees(empty, f"{zeros}{epoch} {sign}{hours:02d}{minutes:02d}")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    epoch=st.integers(min_value=-(10**6), max_value=6 * 10**9),
    zone=st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_any_date_format_patch_writes_streams_only_as_git_writes_it(
    empty: Path, epoch: int, zone: int
) -> None:
    import datetime
    import email.utils

    when = datetime.datetime.fromtimestamp(
        epoch, datetime.timezone(datetime.timedelta(minutes=zone))
    )
    _agrees(empty, email.utils.format_datetime(when))


def test_a_patch_dated_as_git_rewrites_it_gets_gits_commit_and_one_git_refuses_is_named(
    repo: Repo,
) -> None:
    """A leading zero streamed as given made a commit git never writes (``0170000000``);
    a date git refuses made one too, where commit-tree stops: now it names the line."""
    repo.ps("init")
    repo.write("a.txt", "one\ntwo\n")
    repo.git("add", "a.txt")
    repo.git("commit", "-q", "-m", "a")
    repo.write("a.txt", "one\nTWO\n")
    repo.ps("new", "p1", "-t", "essential", "a.txt")
    repo.ps("pop", "--all")
    text = repo.read("patches/p1.patch")
    date = next(ln for ln in text.splitlines() if ln.startswith("Date: "))
    repo.write("patches/p1.patch", text.replace(date, "Date: 0170000000 +0000"))
    repo.ps("push", "--all")
    assert "> 170000000 +0000\n" in repo.git("cat-file", "commit", "HEAD")
    repo.ps("pop", "--all")
    head = repo.head()
    repo.write("patches/p1.patch", text.replace(date, "Date: 12345 +0000"))
    result = repo.ps("push", "--all", code=2)
    line = text.splitlines().index(date) + 1
    assert f"patches/p1.patch:{line}: git cannot read the date '12345 +0000'" in result.stderr
    assert repo.head() == head and repo.read("a.txt") == "one\ntwo\n"
