"""`review` of what a refresh leaves behind (issue 33 item 7) and of the series folder's other
data (issue 34 item 3): the marks of the series file (deferred, upstream with its evidence,
brought back, resolved to nothing) and the recorded resolutions, each its own row and section
in text, Markdown, HTML and JSON."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from patchstack.git import find_repo
from patchstack.review.render import render_review
from patchstack.review.side import load_review
from patchstack.review.states import MarkView, state_word

from .action_runner import ROOT, FakeGitHub, run_action
from .conftest import Repo, make_repo, numbered, replace_line
from .test_action_runs import fake_venv, github_env, ours, pr_event
from .test_review import check_golden

FILES = {name: numbered(30, name[0]) for name in ("a.py", "b.py", "c.py", "d.py")}


def refreshed(root: Path) -> tuple[Repo, Path, Path]:
    """A day of refresh: p1 conflicts and is deferred (``--skip``) with p5, its knock-on; p2
    upstream took (with the commit that brought it), p3 is carried, p4 conflicts and is
    resolved by taking upstream's side (a recorded resolution, and nothing left of p4). The
    series folder before and after, copied aside."""
    repo = make_repo(root / "fork", FILES)
    base = repo.head()
    repo.ps("init")
    edits = [
        ("p1", "essential", "a.py", "a 10\n", "a 10 mine\n"),
        ("p2", "essential", "c.py", "c 10\n", "c 10 fixed\n"),
        ("p3", "diagnostic", "b.py", "b 20\n", "b 20 logged\n"),
        ("p4", "optimization", "d.py", "d 10\n", "d 10 fast\n"),
        ("p5", "optimization", "e.py", "e 5\n", "e 5 tuned\n"),
    ]
    for name, tag, path, old, new in edits:
        if name == "p1":
            repo.write("e.py", numbered(10, "e"))
        replace_line(repo, path, old, new)
        paths = (path, "e.py") if name == "p1" else (path,)
        repo.ps("new", name, "--tag", tag, "-m", f"{name.upper()}: {path}", *paths)
    repo.git("checkout", "-q", "-b", "up", base)
    replace_line(repo, "a.py", "a 10\n", "a 10 upstream\n")
    repo.commit_all("upstream reworks a.py")
    replace_line(repo, "c.py", "c 10\n", "c 10 fixed\n")
    repo.commit_all("upstream takes the c.py fix <img src=x> @core-team #12")
    replace_line(repo, "d.py", "d 10\n", "d 10 <b>upstream</b> @someone\n")
    repo.commit_all("upstream reworks d.py")
    repo.git("checkout", "-q", "main")
    before = shutil.copytree(repo.path / "patches", root / "before")
    repo.ps("refresh", "--onto", "up", code=1)  # p1 conflicts
    repo.ps("refresh", "--skip", code=1)  # p4 conflicts
    repo.write("d.py", repo.git("show", "up:d.py"))  # upstream's side: p4 becomes nothing
    repo.ps("refresh", "--continue")  # p5 deferred too: p1, which made e.py, is missing
    after = shutil.copytree(repo.path / "patches", root / "after")
    return repo, before, after


@pytest.fixture(scope="module")
def day(module_env) -> tuple[Repo, Path, Path]:
    return refreshed(module_env.mktemp("day"))


def review_json(repo: Repo, old: Path | str, new: Path | str) -> dict:
    return json.loads(repo.ps("review", str(old), str(new), "--json").stdout)


def states(doc: dict) -> dict[str, tuple[str | None, list[str]]]:
    return {p["name"]: (p["state"], p["words"]) for p in doc["patches"]}


def test_the_review_of_a_refresh_shows_what_it_left_behind(day) -> None:
    repo, before, after = day
    doc = review_json(repo, before, after)
    assert states(doc) == {
        "p1.patch": ("deferred", ["deferred"]),
        "p2.patch": ("upstream", ["upstream", "description"]),
        "p3.patch": (None, ["unchanged"]),
        "p4.patch": ("resolved to nothing", ["resolved to nothing"]),
        "p5.patch": ("deferred", ["deferred"]),
    }
    assert doc["summary"]["deferred"] == 2 and doc["summary"]["upstream"] == 1
    assert doc["marked"] == {"deferred": 2, "upstream": 2}
    by = {p["name"]: p for p in doc["patches"]}
    series = repo.read("patches/series")
    deferred = re.search(r"# deferred: p1.patch (\S+)\n", series)
    upstream = re.search(r"# upstream: p2.patch (\S+) in (\S+)\n", series)
    assert deferred and upstream
    assert by["p1.patch"]["old_mark"] is None
    assert by["p1.patch"]["new_mark"]["commit"] == deferred.group(1)
    assert by["p5.patch"]["new_mark"]["root"] == "p1.patch"  # a knock-on, waiting for p1
    evidence = by["p2.patch"]["new_mark"]
    assert evidence["evidence"] == upstream.group(2) == repo.git("rev-parse", "up~1").strip()
    assert evidence["evidence_subject"].startswith("upstream takes the c.py fix")
    (resolution,) = doc["resolutions"]
    (key,) = [f.name for f in (after / "resolutions").iterdir()]
    assert resolution["file"] == f"resolutions/{key}" and resolution["change"] == "added"
    assert (resolution["patch"], resolution["path"], resolution["mode"]) == (
        "p4.patch",
        "d.py",
        "hunk",
    )
    assert "one conflict hunk of d.py (line 10)" in resolution["note"]
    assert "resolved to upstream's side" in resolution["note"]
    # Every format: the row and a section of each state, and the resolutions' section.
    paths = {str(before): "OLD", str(after): "NEW"}
    for fmt, golden in (("text", "review-states.txt"), ("markdown", "review-states.md")):
        out = repo.ps("review", str(before), str(after), "--format", fmt).stdout
        for path, label in paths.items():
            out = out.replace(path, label)
        check_golden(golden, out)
    html = repo.ps("review", str(before), str(after), "--format", "html").stdout
    for heading in ("Deferred (2)", "Upstream (1)", "Resolved to nothing (1)"):
        assert f'<h2 class="state">{heading}</h2>' in html
    assert "<h2>Recorded resolutions (1)</h2>" in html and f"resolutions/{key}" in html
    assert '<span class="word deferred">deferred</span>' in html
    assert "&lt;img src=x&gt;" in html and "<img" not in html


def test_a_day_after_brings_back_changes_marks_and_resolutions(day, tmp_path) -> None:
    """A pull request edits the series folder by hand: the deferred p1 brought back, p2's
    upstream mark names another commit, p4's resolution removed and a file that is not one
    added. Each is a change the review shows."""
    repo, _before, after = day
    new = shutil.copytree(after, tmp_path / "new")
    text = (new / "series").read_text()
    text = re.sub(r"# deferred: p1.patch .*\n", "", text)
    forged = "0" * 40
    text = re.sub(r"(# upstream: p2.patch \S+ in )\S+", r"\g<1>" + forged, text)
    (new / "series").write_text(text)
    for f in (new / "resolutions").iterdir():
        f.unlink()
    (new / "resolutions" / "notes.txt").write_text("<script>alert(1)</script>\n")
    doc = review_json(repo, after, new)
    assert states(doc) == {
        "p1.patch": ("brought back", ["brought back"]),
        "p2.patch": ("upstream", ["upstream"]),
        "p3.patch": (None, ["unchanged"]),
        "p4.patch": (None, ["unchanged"]),
        "p5.patch": (None, ["unchanged"]),  # still deferred: its mark is as it was
    }
    assert doc["marked"] == {"deferred": 1, "upstream": 2}  # what the series leaves behind
    by = {p["name"]: p for p in doc["patches"]}
    assert by["p1.patch"]["new_mark"] is None and by["p1.patch"]["old_mark"]["kind"] == "deferred"
    assert by["p2.patch"]["new_mark"]["evidence"] == forged
    assert by["p2.patch"]["new_mark"]["evidence_subject"] is None  # not in this repository
    assert [(r["change"], r["file"], r["patch"]) for r in doc["resolutions"]] == [
        ("removed", doc["resolutions"][0]["file"], "p4.patch"),
        ("added", "resolutions/notes.txt", None),
    ]
    assert "not a resolution record" in doc["resolutions"][1]["note"]
    out = repo.ps("review", str(after), str(new)).stdout
    assert re.search(r"\n  1  p1.patch +essential +\+11 -1 +brought back \(was deferred\)\n", out)
    assert "upstream (mark changed: in " in out and f"→ in {forged[:12]})" in out
    assert "== brought back (1): A mark removed: applied again ==" in out
    assert "-- removed resolutions/" in out and "-- added resolutions/notes.txt" in out
    html = repo.ps("review", str(after), str(new), "--format", "html").stdout
    assert "<script>" not in html and "resolutions/notes.txt" in html


HOSTILE = "</details><script>alert(1)</script> @core-team #7"


def commit(repo: Repo, message: str) -> None:
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", message)


def resolution_pr(root: Path, after: Path, day: Repo) -> tuple[Repo, str, str]:
    """A repository whose main branch holds the series folder after the refresh (commit B),
    and a pull request (H) that changes nothing but ``resolutions/``: a new resolution of p4
    that keeps its edit on top of upstream's line, and a link in the folder."""
    repo = make_repo(root / "series", {"README": "the team's series\n"})
    shutil.copytree(after, repo.path / "patches")
    commit(repo, "the series after the refresh")
    base = repo.head()
    ours = day.git("show", "up:d.py")
    resolved = ours.replace("d 10 <b>upstream</b> @someone\n", "d 10 fast <b>upstream</b>\n")
    resolved = resolved.replace("d 20\n", f"d 20 {HOSTILE}\n```\n")
    oid = repo.git("hash-object", "-w", "--stdin", input=ours).strip()
    done = repo.git("hash-object", "--stdin", input=resolved).strip()  # the body's own id
    theirs = "100644 " + "1" * 40
    header = "\n".join(
        (
            "patchstack-resolution 1",
            "patch: p4.patch",
            f"path: d.py {HOSTILE}",
            "base: -",
            f"ours: 100644 {oid}",
            f"theirs: {theirs}",
            f"resolved: 100644 {done}",
            "recorded: 2026-01-01T00:00:00Z",
        )
    )
    repo.write("patches/resolutions/" + "e" * 40, header + "\n\n" + resolved)
    (repo.path / "patches" / "resolutions" / "link").symlink_to("/etc/passwd")
    commit(repo, "a resolution for p4")
    return repo, base, repo.head()


def test_a_pull_request_that_changes_only_resolutions_is_reviewed(day, tmp_path) -> None:
    repo, base, head = resolution_pr(tmp_path, day[2], day[0])
    doc = json.loads(repo.ps("review", base, head, "--json").stdout)
    assert {p["state"] for p in doc["patches"]} == {None}
    assert [(r["change"], r["file"], r["patch"]) for r in doc["resolutions"]] == [
        ("added", "resolutions/" + "e" * 40, "p4.patch"),
        ("added", "resolutions/link", None),
    ]
    hunk = doc["resolutions"][0]["diff"]
    assert hunk[0] == f"--- a/d.py {HOSTILE} (as the merge found it)"
    assert "-d 10 <b>upstream</b> @someone" in hunk and "+d 10 fast <b>upstream</b>" in hunk
    assert doc["resolutions"][1]["note"] == "not a regular file (refresh refuses it)"
    text = repo.ps("review", base, head).stdout
    assert "== recorded resolutions (2)" in text and "+d 10 fast <b>upstream</b>\n" in text
    md = repo.ps("review", base, head, "--format", "markdown").stdout
    outside = re.sub(r"````diff\n.*?\n````\n", "", md, flags=re.S)  # the hunk's own ``` inside
    assert "<script>" not in outside and "</details><script>" not in outside
    plain = re.sub(r"<code>.*?</code>|`[^`\n]*`", "", outside)  # GitHub leaves code alone
    assert "@core-team" not in plain and "#7" not in plain
    assert "+d 20 " + HOSTILE in md  # inside the fence the line stays as it is
    html = repo.ps("review", base, head, "--format", "html").stdout
    assert "<script>" not in html and "&lt;/details&gt;&lt;script&gt;" in html


@pytest.mark.slow  # the Action's runner, twice
def test_the_actions_comment_counts_a_resolution_or_a_mark_as_a_change(day, tmp_path) -> None:
    """The pull request changes no patch file: only resolutions/, then only a mark."""
    action_copy = tmp_path / "action" / "patchstack"
    ignore = shutil.ignore_patterns(".git", "*.egg-info", "build", "__pycache__", ".*cache")
    shutil.copytree(ROOT, action_copy, ignore=ignore)
    repo, base, head = resolution_pr(tmp_path, day[2], day[0])
    series = (repo.path / "patches" / "series").read_text()
    (repo.path / "patches" / "series").write_text(re.sub(r"# deferred: .*\n", "", series))
    commit(repo, "bring p1 back")
    marks_only = repo.head()
    gh = FakeGitHub("fork-owner/fork")
    try:
        for number, (old, new, said) in enumerate(
            ((base, head, "Recorded resolutions (2)"), (head, marks_only, "Brought back (2)")), 7
        ):
            temp = tmp_path / f"runner{number}"
            fake_venv(temp)
            run = run_action(
                action_copy,
                repo.path,
                temp,
                {"command": "review", "series-dir": "patches"},
                pr_event(old, new, number),
                github_env(api=gh.url),
            )
            assert not run.failed, [(s.name, s.stdout, s.stderr) for s in run.steps]
            (comment,) = ours(gh, number)
            assert "does not change the patch series" not in comment["body"]
            assert said in comment["body"]
    finally:
        gh.close()


def test_one_word_for_each_change_of_a_mark() -> None:
    deferred = MarkView("deferred", "a" * 40)
    knock_on = MarkView("deferred", "a" * 40, root="p1.patch")
    upstream = MarkView("upstream", "b" * 40, evidence="c" * 40)
    no_op = MarkView("no-op", "d" * 40, root="p2.patch")  # a mark of that kind, where kept
    assert state_word(None, None, False) is None
    assert state_word(deferred, deferred, True) is None  # still deferred: no change
    assert state_word(None, deferred, False) == "deferred"
    assert state_word(deferred, knock_on, False) == "deferred"  # the mark changed
    assert state_word(None, upstream, False) == "upstream"
    assert state_word(deferred, upstream, True) == "resolved to nothing"
    assert state_word(upstream, MarkView("upstream", "b" * 40), False) == "upstream"
    assert state_word(None, no_op, False) == "no-op"
    assert state_word(knock_on, None, False) == state_word(upstream, None, False) == "brought back"


def test_the_marks_and_resolutions_fit_a_comment(day, tmp_path) -> None:
    """Shortened, the Markdown still counts every state and resolution: the resolutions' hunks
    go before the graph, the lists of the marks' sections before any table row."""
    repo, base, head = resolution_pr(tmp_path, day[2], day[0])
    series = (repo.path / "patches" / "series").read_text()
    (repo.path / "patches" / "series").write_text(re.sub(r"# deferred: .*\n", "", series))
    commit(repo, "bring p1 back")
    git = find_repo(str(repo.path))
    try:
        rv = load_review(base, repo.head(), git, "patches")
    finally:
        git.close()
    full = render_review(rv, "markdown")
    assert "+d 10 fast <b>upstream</b>" in full
    for limit in (len(full.encode()) - 1, 2000, 1500):
        out = render_review(rv, "markdown", limit=limit)
        assert len(out.encode()) < limit
        assert "#### Brought back (2)" in out and "#### Recorded resolutions (2)" in out
    assert "+d 10 fast <b>upstream</b>" not in out and "shortened to stay under GitHub's" in out
    assert "the recorded resolutions' hunks are left out" in out
    assert "| `p1.patch` |" not in out and "the marks' sections are counted" in out


def test_a_patch_dropped_by_drop_merged_says_which_commit_took_it(day, tmp_path) -> None:
    repo, _before, after = day
    new = shutil.copytree(after, tmp_path / "new")
    text = (new / "series").read_text()
    text = re.sub(r"# upstream: p2.patch .*\n|p2.patch # essential\n", "", text)
    (new / "series").write_text(text)
    (new / "p2.patch").unlink()
    out = repo.ps("review", str(after), str(new)).stdout
    evidence = repo.git("rev-parse", "up~1").strip()
    assert f"dropped (was upstream: in {evidence[:12]} upstream takes the c.py fix" in out


def test_a_link_in_place_of_the_resolutions_folder_is_shown(day, tmp_path) -> None:
    repo, _before, after = day
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "x").write_text("patchstack-resolution 1\n")

    def linked(folder: Path) -> Path:
        shutil.rmtree(folder / "resolutions")
        (folder / "resolutions").symlink_to(outside)
        return folder

    by_dir = review_json(repo, after, linked(shutil.copytree(after, tmp_path / "new")))
    series = make_repo(tmp_path / "series", {"README": "the team's series\n"})
    shutil.copytree(after, series.path / "patches")
    commit(series, "the series")
    linked(series.path / "patches")
    commit(series, "a link in place of resolutions/")
    by_rev = json.loads(series.ps("review", "HEAD~1", "HEAD", "--json").stdout)
    for doc in (by_dir, by_rev):
        shown = [(r["change"], r["file"], r["patch"], r["note"]) for r in doc["resolutions"]]
        assert ("added", "resolutions/", None, "not a regular file (refresh refuses it)") in (shown)
        assert [c for c, _f, patch, _n in shown if patch == "p4.patch"] == ["removed"]


def test_a_changed_resolution_shows_the_change_of_its_resolved_file(day, tmp_path) -> None:
    repo, _before, after = day
    new = shutil.copytree(after, tmp_path / "new")
    (record,) = (new / "resolutions").iterdir()
    data = record.read_bytes()  # one conflict hunk's record: its resolution comes last
    head, _, body = data.partition(b"\n\n")
    sizes = re.search(rb"\nsizes: (.*)", head).group(1)
    more = b"d 20 kept from p4\n"
    *parts, last = (int(w) for w in sizes.split())
    now = " ".join(map(str, [*parts, last + len(more)])).encode()
    record.write_bytes(head.replace(sizes, now) + b"\n\n" + body + more)
    (change,) = review_json(repo, after, new)["resolutions"]
    assert (change["change"], change["patch"], change["path"]) == ("changed", "p4.patch", "d.py")
    assert change["mode"] == "hunk" and "resolved anew" in change["note"]
    assert change["diff"][:2] == ["--- a/d.py (recorded before)", "+++ b/d.py (recorded now)"]
    assert "+d 20 kept from p4" in change["diff"]
    assert "versions were" not in change["note"]  # the same conflict, resolved otherwise


def test_the_review_names_the_upstream_commits_that_changed_each_patchs_files(
    day, tmp_path
) -> None:
    """The picture of the base's move (which upstream commits hit which patches), checked
    against git and unidiff: every commit of old..new that changed a file a patch of either
    side changes, oldest first, with exactly those patches; none else."""
    import unidiff

    repo, before, after = day
    doc = review_json(repo, before, after)
    old, new = doc["base"]["old"], doc["base"]["new"]
    owners: dict[str, set[str]] = {}
    for folder in (before, after):
        for patch in sorted(Path(folder).glob("*.patch")):
            for f in unidiff.PatchSet(patch.read_text()):
                owners.setdefault(f.path, set()).add(patch.name)
    expected = []
    for commit in repo.git("rev-list", "--reverse", f"{old}..{new}").split():
        files = repo.git("diff-tree", "--no-commit-id", "--name-only", "-r", commit).split()
        names = set().union(*(owners.get(f, set()) for f in files))
        if names:
            expected.append((commit, sorted(names)))
    assert expected and len(expected) == 3
    assert [(h["commit"], sorted(h["patches"])) for h in doc["base"]["hits"]] == expected
    md = repo.ps("review", str(before), str(after), "--format", "markdown").stdout
    assert "| `9afaa2a3ca9c` | upstream reworks a.py | `p1.patch` deferred |" in md or (
        f"| `{expected[0][0][:12]}` | upstream reworks a.py | `p1.patch` deferred |" in md
    )
    html = repo.ps("review", str(before), str(after), "--format", "html").stdout
    assert "Upstream commits that changed the patches' files" in html
