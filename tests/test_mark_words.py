"""What ``status`` and ``series`` say of a deferred patch (`model.marks.describe`): a patch held
for a left-out root that also conflicts on its own is primary, waiting for the root (issue 33
item 5; its mark keeps that: ``# deferred: NAME C after ROOT primary``), not "a knock-on";
during a stopped refresh no advice to ``push`` it, which is refused then (item 8)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import make_repo, numbered, replace_line
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


def test_a_deferred_patch_during_a_stopped_refresh_advises_no_refused_push(
    tmp_path: Path,
) -> None:
    """p1 was deferred by yesterday's refresh; today's stops at p2. status and series said
    "('patchstack push p1.patch' brings it back)", which is refused while the refresh is
    stopped (issue 33 item 8: status advised a refused command during a stop)."""
    repo = make_repo(tmp_path / "fork", {"a.txt": numbered(20, "a"), "b.txt": numbered(10, "b")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "b.txt", "b 5\n", "b 5 mine\n")
    repo.ps("new", "p1", "-t", "essential", "b.txt")
    replace_line(repo, "a.txt", "a 3\n", "a 3 mine\n")
    repo.ps("new", "p2", "-t", "essential", "a.txt")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "b.txt", "b 5\n", "b 5 up\n")
    repo.commit_all("upstream edits b 5")
    repo.git("branch", "up1")
    replace_line(repo, "a.txt", "a 3\n", "a 3 up\n")
    repo.commit_all("upstream edits a 3")
    repo.git("checkout", "-q", "main")
    repo.ps("refresh", "--onto", "up1", "--defer-conflicts")
    assert (
        "next: 'patchstack push p1.patch' brings a deferred patch back" in repo.ps("status").stdout
    )
    repo.ps("refresh", "--onto", "up", code=1)
    status = repo.ps("status", code=None).stdout
    listed = repo.ps("series", code=None).stdout
    for shown in (status, listed):
        assert "'patchstack push" not in shown, shown
        assert "push NAME brings a deferred patch back once the refresh is done" in shown, shown
        assert shown.count("brings a deferred patch back") == 1, shown
    assert "is stopped at a conflict" in repo.ps("push", "p1.patch", code=2).stderr


def test_one_hint_brings_deferred_patches_back_and_none_without_a_root() -> None:
    """Each deferred patch is one short note; how to bring one back is one line under the
    list (kernel-timers' status repeated "'patchstack push NAME' brings it back" 19 times)."""
    from patchstack.model.marks import Deferral, Upstream, describe, push_back_hint

    c = "a" * 40
    roots = [Deferral("p1.patch", c), Deferral("p2.patch", c, "p1.patch"), Deferral("p3.patch", c)]
    assert [describe(m) for m in roots] == [
        "deferred: conflicts on the base",
        "deferred: a knock-on, waiting for p1.patch",
        "deferred: conflicts on the base",
    ]
    hint = "'patchstack push NAME' brings a deferred patch back (first: p1.patch)"
    assert push_back_hint(roots) == hint
    stopped = push_back_hint(roots, "patchstack refresh")
    assert stopped == (
        "push NAME brings a deferred patch back once the refresh is done (first: p1.patch)"
    )
    assert push_back_hint([roots[1], Upstream("p4.patch", c)]) is None


def test_a_no_op_waiting_for_its_root_is_said_and_kept_as_one() -> None:
    """A patch deferred because it changes nothing without a left-out root did not conflict:
    its mark says ``no-op`` and status says so (kernel-timers' refresh counted 2 no-ops that
    status then called knock-ons); a mark read back renders to the same bytes, and the old
    form (no word) stays a knock-on."""
    from patchstack.model.marks import Deferral, describe, mark_problem, parse_mark

    c = "b" * 40
    line = f"# deferred: p3.patch {c} after p2.patch no-op\n"
    mark = parse_mark(line)
    assert mark == Deferral("p3.patch", c, "p2.patch", primary=False, no_op=True)
    assert mark.render() == line
    assert describe(mark) == "deferred: a no-op without p2.patch, waiting for it"
    assert mark.to_json()["no_op"] is True and mark.to_json()["primary"] is False
    old = parse_mark(f"# deferred: p3.patch {c} after p2.patch")
    assert isinstance(old, Deferral) and not old.no_op
    assert describe(old) == "deferred: a knock-on, waiting for p2.patch"
    assert parse_mark(f"# deferred: p3.patch {c} no-op") is None  # a word needs a root
    assert mark_problem(f"# deferred: p3.patch {c} after p2.patch noop") is not None
    assert mark_problem(f"# upstream: p3.patch {c} in {c} no-op") is not None
