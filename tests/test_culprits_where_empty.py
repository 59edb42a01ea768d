"""Culprits where a hunk's lines are empty (upstream took them out, or a later commit
inserted them) and in a file a move made, the shapes git refuted on a real day after of
kernel-timers: each checked against ``git log -L`` and the label oracle."""

from __future__ import annotations

import json
import re
from pathlib import Path

from patchstack.engine.culprits import _back

from .conftest import Repo, make_repo, numbered, replace_line
from .label_days import Day
from .label_oracle import Oracle
from .test_triage_proven import culprits_of, log_l


def judged(repo: Repo, base: str) -> list[str]:
    """The oracle's findings on p1's report of ``check --onto up``."""
    data = json.loads(repo.ps("check", "--onto", "up", "--json", code=1).stdout)
    report = next(r for r in data["conflicts"] if r["patch"] == "p1.patch")
    assert report["kind"] == "primary", report
    o = Oracle(repo)
    day = Day(o, "day one", base, o.git.rev("up"), "up")
    o.culprits("check", report, base, o.git.rev("up"), day.merged("p1.patch"))
    assert o.judged.get("culprit"), o.judged
    return o.findings


def test_a_class_taken_out_where_inserted_lines_stand_grows_the_trace_to_the_hunk_s_lines(
    tmp_path: Path,
) -> None:
    """kernel-timers' layer.py:1205 made small: p1 edits a line of ``a``; upstream edits a
    line of ``b`` (after ``a``), takes ``a`` and ``b`` out in one deletion, puts ``b`` back,
    then inserts ``g`` where ``a`` was. The hunk is ``a`` against ``g``; from the point
    ``g`` was inserted at, the deletion took out ``a`` and ``b``, but only ``a`` is the hunk's:
    the edit of ``b`` changed none of its lines (the trace grew to all the deletion took out
    and named it)."""
    a = "def a():\n" + numbered(6, "    a")
    b = "def b():\n" + numbered(8, "    b")
    pre, mid = numbered(5, "pre"), numbered(10, "mid")
    repo = make_repo(tmp_path / "fork", {"m.py": pre + a + b + mid})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "m.py", "    a 3\n", "    a 3 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "m.py")
    repo.git("checkout", "-q", "-b", "up", base)
    edited = b.replace("    b 5\n", "    b 5 edited\n")
    repo.write("m.py", pre + a + edited + mid)
    repo.commit_all("upstream edits b")
    repo.write("m.py", pre + mid)
    gone = repo.commit_all("upstream takes a and b out")
    repo.write("m.py", pre + edited + mid)
    repo.commit_all("upstream puts b back")
    repo.write("m.py", pre + "def g():\n    g 1\n" + edited + mid)
    inserted = repo.commit_all("upstream inserts g where a was")
    repo.git("checkout", "-q", "main")
    assert log_l(repo, base, 6, 7, "m.py") == [inserted]
    assert culprits_of(repo) == [[gone, inserted]]
    assert judged(repo, base) == []


def test_lines_taken_out_where_upstream_s_line_was_inserted_later_are_none_of_the_hunk_s(
    tmp_path: Path,
) -> None:
    """kernel-timers' fused_moe_triton_kernels.py:1042 made small: p1 inserts a line after
    ``a 10``; upstream inserts two lines there (and edits line 1), takes them out again, then
    inserts its own line there. The hunk's base side is empty: the lines taken out at that
    point were none of its lines, and the commits that made and took them are no culprits."""
    repo, base = numbered_fork(tmp_path)
    replace_line(repo, "a.c", "a 10\n", "a 10\nt 1\nt 2\n")
    replace_line(repo, "a.c", "a 1\n", "a 1 t\n")
    repo.commit_all("upstream inserts t lines after a 10")
    replace_line(repo, "a.c", "t 1\nt 2\n", "")
    repo.commit_all("upstream takes the t lines out")
    replace_line(repo, "a.c", "a 10\n", "a 10\nup\n")
    inserted = repo.commit_all("upstream inserts its line after a 10")
    repo.git("checkout", "-q", "main")
    assert log_l(repo, base, 11, 11, "a.c") == [inserted]
    assert culprits_of(repo) == [[inserted]]
    assert judged(repo, base) == []


def test_a_change_that_replaced_none_of_the_hunk_s_lines_around_a_point_is_no_culprit(
    tmp_path: Path,
) -> None:
    """evo-v3's server_args.py:1253 made small (issue 33 item 6): a later commit inserted the
    hunk's upstream lines (``u``) between two lines (``k 1``, ``k 2``) that an earlier commit
    wrote in place of lines none of the hunk's (``m``), moving ``k 1``/``k 2`` there and
    taking ``t`` out. From the point ``u`` was inserted at, that replacement took out none of
    the hunk's base lines: it meets nothing there, and the ``m`` edit before it changed none
    of the hunk's lines (the trace grew to all the replacement took out and named both).
    ``git log -L`` over ``u`` names the insertion alone."""
    pre, t, body, m, post = (
        numbered(n, p) for n, p in ((5, "pre"), (5, "t"), (6, "l"), (4, "m"), (5, "post"))
    )
    repo = make_repo(tmp_path / "fork", {"a.py": pre + "k 1\n" + t + "k 2\n" + body + m + post})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.py", "t 3\n", "t 3 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.py")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "m 2\n", "m 2 edited\n")
    repo.commit_all("upstream edits m 2")
    repo.write("a.py", pre + body + "r 1\nk 1\nk 2\nr 2\n" + post)
    moved = repo.commit_all("upstream takes t out and writes k 1, k 2 in place of m")
    replace_line(repo, "a.py", "k 1\n", "k 1\n" + numbered(3, "u"))
    inserted = repo.commit_all("upstream inserts u between k 1 and k 2")
    replace_line(repo, "a.py", body, "")
    repo.commit_all("upstream takes the l lines out")
    repo.git("checkout", "-q", "main")
    hunks = re.findall(r"^@@ (\S+ \S+) @@", repo.git("show", "-U0", moved), re.M)
    assert hunks == ["-6,7 +5,0", "-19,4 +12,4"], hunks  # the shape: m replaced
    assert log_l(repo, base, 8, 10, "a.py") == [inserted]
    assert culprits_of(repo) == [[inserted]]
    assert judged(repo, base) == []


def numbered_fork(tmp_path: Path) -> tuple[Repo, str]:
    """p1 inserts ``mine`` after line 10 of a.c (20 numbered lines); left on ``up`` at the
    base."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 10\n", "a 10\nmine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    return repo, base


def test_the_culprit_in_a_file_a_move_made_is_the_move_and_the_oracle_says_so(
    tmp_path: Path,
) -> None:
    """kernel-timers' fused_moe_triton_kernels.py:11 made small: upstream edits line 10 of
    a.c, then moves a.c to b.c unchanged; p1 edits line 10. The walk does not follow the move:
    the move made the file and brought the lines there, which the written definition names
    (``log -L`` follows the move past it to the edit; the oracle refuted it)."""
    repo = make_repo(tmp_path / "fork", {"a.c": numbered(20, "a")})
    base = repo.head()
    repo.ps("init")
    replace_line(repo, "a.c", "a 10\n", "a 10 mine\n")
    repo.ps("new", "p1", "--tag", "essential", "a.c")
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.c", "a 10\n", "a 10 upstream\n")
    edit = repo.commit_all("upstream edits line 10")
    repo.git("mv", "a.c", "b.c")
    move = repo.commit_all("upstream moves a.c to b.c")
    repo.git("checkout", "-q", "main")
    assert log_l(repo, base, 10, 10, "b.c") == [edit]
    assert culprits_of(repo) == [[move]]
    assert judged(repo, base) == []


def test_a_point_inside_inserted_lines_is_met_only_by_lines_of_the_hunk_s_base() -> None:
    """The pure model: lines 5-9 inserted after the parent's line 4 (``-4,0 +5,5``), the
    region the point before line 7. Lines inserted around it are none of the hunk's (known
    through ``own``): not met, the point where they were inserted; a replacement of lines of
    the hunk's base grows the region to those alone; unknown (no ``own``): met, as before."""
    none = lambda a0, a1: None  # noqa: E731
    assert _back([(4, 0, 5, 5)], (7, 7), own=none) == (False, (5, 5))
    assert _back([(4, 0, 5, 5)], (7, 7)) == (True, (5, 5))
    base = lambda a0, a1: (a0 + 1, a0 + 3)  # noqa: E731
    assert _back([(4, 6, 5, 5)], (7, 7), own=base) == (True, (5, 7))
    # a replacement around it of none of the hunk's base lines: not met either (issue 33 item 6)
    assert _back([(4, 6, 5, 5)], (7, 7), own=none) == (False, (4, 4))
    # a deletion where the region is empty, of none of its lines: not met
    assert _back([(4, 3, 3, 0)], (4, 4), own=none) == (False, (7, 7))
