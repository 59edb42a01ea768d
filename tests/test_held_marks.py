"""A patch held for a left-out root that also conflicts on its own is primary, waiting for
the root (issue 33 item 5): the series file keeps that (``# deferred: NAME C after ROOT
primary``), and ``status`` and ``series`` say so, not "a knock-on"."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import replace_line
from .test_defer_hunks import debug_drift


def test_status_and_series_word_a_held_primary_as_primary_waiting_for_its_root(
    tmp_path: Path,
) -> None:
    """p2 removes p1's DEBUG line (held for p1, which conflicts) and edits b.txt line 30,
    which upstream edits too: refresh defers it as primary, waiting for p1; status and series
    said "a knock-on, waiting for p1.patch", and status's next step counted it a knock-on."""
    repo = debug_drift(tmp_path)
    repo.git("checkout", "-q", "up")
    replace_line(repo, "b.txt", "b 30\n", "b 30 upstream\n")
    repo.commit_all("upstream edits line 30")
    repo.git("checkout", "-q", "main")
    done = json.loads(repo.ps("refresh", "--onto", "up", "--defer-conflicts", "--json").stdout)
    assert [(c["patch"], c["kind"], c["root"]) for c in done["deferred"]] == [
        ("p1.patch", "primary", None),
        ("p2.patch", "primary", "p1.patch"),
    ]
    series = repo.read("patches/series")
    assert " after p1.patch primary\n" in series, series
    status = repo.ps("status").stdout
    assert "- p2.patch [essential]  (deferred: primary, waiting for p1.patch)" in status, status
    assert "knock-on" not in status, status
    assert "(1 deferred, 1 primary conflict(s) waiting)" in status, status
    listed = repo.ps("series").stdout
    assert "- p2.patch  [essential]  (deferred: primary, waiting for p1.patch)" in listed, listed
    patches = json.loads(repo.ps("status", "--json").stdout)["patches"]
    marks = {p["name"]: p["mark"] for p in patches}
    assert marks["p2.patch"]["root"] == "p1.patch" and marks["p2.patch"]["primary"] is True
    assert marks["p1.patch"]["primary"] is False
