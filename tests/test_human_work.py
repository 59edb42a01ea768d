"""tools/bench/human_work.py counts right: a generated drift with a known answer.

Upstream moves twice from B: E (a month earlier) changes the lines of a.py's two hunks, b.py's
and d.py's hunks of the series; T (later) takes a.py's second change back and changes c.py's
line. The engineers merged E, then T, into their branch: those merges are the truth. Carried
onto T, the series (P1: a.py; P2: b.py; P3: c.py and d.py) meets 4 conflict hunks (a.py,
b.py, c.py, d.py, one each). rerere keys a file by all its hunks: a.py's record was of two,
so it reuses b.py's and d.py's. patchstack's records are per hunk and a patch is settled only
when all its hunks are known: it reuses a.py's and b.py's; P3 stops with c.py's new hunk
asked and d.py's shown resolved by its record (automatic, checked hunk by hunk: its record's
resolution between its neighbouring lines stands in the engineers' file).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from patchstack.cli import cli

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench" / "human_work.py"


def _tool(in_process: bool = True):  # type: ignore[no-untyped-def]
    """The tool; with ``in_process`` its patchstack commands run in this process (CliRunner, in
    the box's environment and folder), not each in a Python of its own: the counts are the
    same, and the default run is ~3x faster. The slow case keeps the tool's own processes."""
    spec = importlib.util.spec_from_file_location("human_work", TOOL)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["human_work"] = mod
    spec.loader.exec_module(mod)
    if in_process:
        mod.Box.ps = _ps_in_process
    return mod


def _ps_in_process(box, *args: str) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k not in box.env]:
            mp.delenv(key)
        for key, value in box.env.items():
            mp.setenv(key, value)
        mp.chdir(box.dir)
        result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    if result.exit_code not in (0, 1):
        raise RuntimeError(f"patchstack {' '.join(args)} failed ({result.exit_code})")
    return result.exit_code, result.stdout, result.stderr


def git(cwd: Path, *args: str) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert p.returncode == 0 or args[0] == "merge", p.stderr
    return p.stdout.strip()


def lines(**edits: str) -> str:
    """50 numbered lines with line N replaced by ``edits['lN']``."""
    return "".join(edits.get(f"l{n}", f"line {n}") + "\n" for n in range(1, 51))


def commit(repo: Path, msg: str, **files: str) -> str:
    for name, text in files.items():
        (repo / name.replace("_", ".")).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", msg)
    return git(repo, "rev-parse", "HEAD")


def merge(repo: Path, other: str, **files: str) -> str:
    """Merge OTHER into the branch, the engineer writing FILES as the result."""
    git(repo, "merge", "-q", "--no-ff", "--no-commit", other)
    for name, text in files.items():
        (repo / name.replace("_", ".")).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-edit")
    return git(repo, "rev-parse", "HEAD")


def drift(tmp: Path, later_b: str) -> tuple[Path, str, str]:
    repo = tmp / "fork"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "merge.conflictStyle", "diff3")
    commit(repo, "B", a_py=lines(), b_py=lines(), c_py=lines(), d_py=lines())
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "P1", a_py=lines(l5="patch r1", l40="patch r2"))
    commit(repo, "P2", b_py=lines(l20="patch r4"))
    commit(repo, "P3", c_py=lines(l30="patch r5"), d_py=lines(l25="patch r6"))
    git(repo, "checkout", "-q", "main")
    commit(
        repo,
        "E",
        a_py=lines(l5="up r1", l40="up r2"),
        b_py=lines(l20="up r4"),
        d_py=lines(l25="up r6"),
    )
    git(repo, "checkout", "-q", "feature")
    earlier = merge(
        repo,
        "main",
        a_py=lines(l5="both r1", l40="both r2"),
        b_py=lines(l20="both r4"),
        c_py=lines(l30="patch r5"),
        d_py=lines(l25="both r6"),
    )
    git(repo, "checkout", "-q", "main")
    commit(repo, "T", a_py=lines(l5="up r1"), c_py=lines(l30="up r5"), d_py=lines(l25="up r6"))
    git(repo, "checkout", "-q", "feature")
    later = merge(
        repo,
        "main",
        a_py=lines(l5="both r1", l40="patch r2"),
        b_py=lines(l20=later_b),
        c_py=lines(l30="both r5"),
        d_py=lines(l25="both r6"),
    )
    return repo, earlier, later


# The README's test command runs the refuted case (a.py's reuse agrees, b.py's is refuted);
# -m slow also the one where both agree.
@pytest.mark.parametrize(
    "later_b, refuted", [("other r4", 1), pytest.param("both r4", 0, marks=pytest.mark.slow)]
)
def test_counts_on_a_known_drift(tmp_path: Path, later_b: str, refuted: int) -> None:
    hw = _tool(in_process=refuted == 1)
    repo, earlier, later = drift(tmp_path, later_b)
    report = hw.measure(str(repo), "feature", earlier, later, "main", tmp_path / "work")
    assert report.patches == 3
    assert (report.earlier_rebase.stops, report.earlier_rebase.asked) == (3, 4)
    assert (report.earlier_patchstack.stops, report.earlier_patchstack.asked) == (3, 4)
    by = {t.tool: t for t in report.tallies}
    plain, rr, ps = by["git rebase"], by["git rebase + rerere"], by["patchstack"]
    assert (plain.stops, plain.asked, plain.automatic) == (3, 4, 0)
    assert (rr.stops, rr.asked, rr.automatic) == (3, 2, 2)
    # P3's stop shows d.py's hunk resolved by its record (as rerere would), only c.py's asked.
    assert (ps.stops, ps.asked, ps.automatic, ps.recorded_at_stops) == (1, 1, 3, 0)
    assert ps.per_stop == [("P3.patch", 1, 0)]
    # b.py's reuse is what the engineers committed, or (later_b) refuted by it
    assert rr.verdicts() == {"agree": 2 - refuted, "refuted": refuted, "unverified": 0}
    assert ps.verdicts() == {"agree": 3 - refuted, "refuted": refuted, "unverified": 0}
    assert [(c.path, c.how) for c in ps.checks] == [
        ("d.py:25", "hunk records at a stop"),
        ("a.py", "hunk records"),
        ("b.py", "hunk records"),
    ]
    assert "| patchstack | 1 | 1 | 0 / 0 | 3 | 0 |" in hw.markdown([report])


def test_synthetic_counts_the_same_hunks_unverified(tmp_path: Path) -> None:
    """With no merge to learn from, the person takes the patch's side: same counts, no truth."""
    hw = _tool()
    repo, earlier, later = drift(tmp_path, "both r4")
    up_e, up_t = git(repo, "rev-parse", f"{earlier}^2"), git(repo, "rev-parse", f"{later}^2")
    report = hw.measure(
        str(repo), f"{earlier}^1", up_e, up_t, "main", tmp_path / "work", synthetic=True
    )
    by = {t.tool: t for t in report.tallies}
    assert [(by[t].asked, by[t].automatic) for t in by] == [(4, 0), (2, 2), (1, 3)]
    assert by["patchstack"].verdicts() == {"agree": 0, "refuted": 0, "unverified": 3}
    assert (
        hw.patch_side(b"a\n<<<<<<< x\nu\n||||||| b\nb\n=======\np\n>>>>>>> y\nz\n") == b"a\np\nz\n"
    )


def test_a_hunk_settled_at_a_stop_is_judged_by_its_neighbours_in_the_truth() -> None:
    hw = _tool()
    shown = b"a\nb\nc\nRES\nd\n<<<<<<< x\nu\n||||||| y\nb\n=======\nm\n>>>>>>> z\ne\n"
    note = "recorded resolutions settle 1 of the 2 conflict hunks of f.py (f.py:4 (base differed))"
    assert hw._settled_at_stop(note + "; the others are new: yours to resolve", "f.py") == [
        "f.py:4 (base differed)"
    ]
    assert hw._settled_at_stop(note, "g.py") == []
    judge = hw.hunk_verdict
    assert judge(shown, 4, [b"RES\n", b"zz\n"], b"a\nb\nc\nRES\nd\nmine\ne\n", True) == "agree"
    assert judge(shown, 4, [b"RES\n"], b"a\nb\nc\nOTHER\nd\nmine\ne\n", True) == "refuted"
    # a neighbour the engineers changed too: the truth cannot tell
    assert judge(shown, 4, [b"RES\n"], b"a\nb\nC\nOTHER\nd\ne\n", True) == "unverified"
    assert judge(shown, 4, [b"RES\n"], b"a\nb\nc\nRES\nd\n", False) == "unverified"
    assert judge(shown, 4, [b"zz\n"], b"a\nb\nc\nRES\nd\n", True) == "unverified"


def test_a_file_upstream_deleted_counts_as_git_counts_it(tmp_path: Path) -> None:
    """P1 changes three places of e.py, which upstream deletes (its lines go nowhere): git
    asks one modify/delete; patchstack's stop, whose relocation carries none of the three
    hunks, asks the same one file, not one per hunk (the tool counted 3: issue 36 item 5's
    "patchstack's own merge shows more hunks" was this count, the merges are the same)."""
    hw = _tool()
    repo = tmp_path / "fork"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    own = {f"l{n}": f"e {n}" for n in range(1, 51)}  # lines no other file holds
    commit(repo, "B", a_py=lines(), e_py=lines(**own))
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "P1", e_py=lines(**{**own, "l5": "patch 5", "l25": "patch 25", "l45": "p 45"}))
    git(repo, "checkout", "-q", "main")
    up_e = commit(repo, "E", a_py=lines(l1="up 1"))
    git(repo, "rm", "-q", "e.py")
    git(repo, "commit", "-q", "-m", "T deletes e.py")
    up_t = git(repo, "rev-parse", "HEAD")
    report = hw.measure(str(repo), "feature", up_e, up_t, "main", tmp_path / "work", synthetic=True)
    by = {t.tool: t for t in report.tallies}
    assert [(t, by[t].stops, by[t].asked) for t in by] == [
        ("git rebase", 1, 1),
        ("git rebase + rerere", 1, 1),
        ("patchstack", 1, 1),
    ]


def test_the_tool_reads_the_hunks_a_built_in_rule_resolved_at_a_stop(tmp_path) -> None:
    """The stop's note names each hunk the rule resolved (`reuse.proposed_at_stop`): the tool
    counts it automatic and judges it, not asked."""
    from .test_contained import _fork

    hw = _tool()
    repo = _fork(tmp_path)
    doc = json.loads(repo.ps("refresh", "--onto", "up", "--json", code=1).stdout)
    note = doc["stopped"]["note"]
    assert hw._settled_at_stop(note, "a.py", hw.RULE) == ["a.py:11"]
    assert hw._settled_at_stop(note, "a.py") == []  # no record settled it


def test_hunk_classes_sorts_a_dump_and_judges_the_rule_by_the_truth(tmp_path) -> None:
    """tools/bench/hunk_classes.py on a dumped stop file (three hunks of known classes) with
    the engineers' file beside it: the rule's one proposal agrees with it."""
    spec = importlib.util.spec_from_file_location("hunk_classes", TOOL.with_name("hunk_classes.py"))
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def region(ours: str, base: str, theirs: str) -> str:
        return f"<<<<<<< up\n{ours}||||||| base\n{base}=======\n{theirs}>>>>>>> p1\n"

    stop = tmp_path / "ps-0" / "001-p1.patch"
    stop.mkdir(parents=True)
    text = (
        "a 1\na 2\na 3\n"
        + region("x = 1\nmine\nup\n", "x = 0\n", "x = 1\nmine\n")  # A: the rule's
        + "a 4\na 5\na 6\n"
        + region("y = 2\n", "y = 0\n", "y = 3\n")  # E: both edited
        + "a 7\na 8\na 9\n"
        + region("import a\n", "", "import b\n")  # D: import lists
        + "a 10\n"
    )
    (stop / "a.py").write_text(text)
    truth = "a 1\na 2\na 3\nx = 1\nmine\nup\na 4\na 5\na 6\ny = 23\na 7\na 8\na 9\nimport a\n"
    (stop / "a.py.truth").write_text(truth + "import b\na 10\n")
    found = mod.classes([str(tmp_path / "ps-0")])
    assert found == {
        "A upstream's side holds the patch's change (the rule)": 1,
        "E both edited the same lines": 1,
        "D import lists": 1,
        "(the rule: agree)": 1,
    }
