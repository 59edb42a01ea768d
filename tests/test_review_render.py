"""The review as a reviewer reads it: a comment cut from its least important end, the
interdiff notation, neutralised mentions, anchors, JSON, and the sandbox for templates.

Series here are written with real ``git diff`` output from real repositories, one patch
file a file diff, so that hundreds of patches cost a few git commands.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from patchstack.review.render import COMMENT_LIMIT, MARKER

from .conftest import SEALED, Repo, make_repo, numbered
from .test_review import FILES, P, check_golden, commit_series, series_files, sub, upstream

HEADER = "# patchstack series: one patch a line, 'name.patch [-pN] # tag[, label...]'\n"


def split_diff(text: str) -> dict[str, str]:
    """``git diff`` output per file: {path: its file diff}."""
    parts = re.split(r"(?m)^(?=diff --git )", text)
    out = {}
    for part in parts:
        if part.startswith("diff --git "):
            path = part.split("\n", 1)[0].split(" b/", 1)[1]
            out[path] = part
    return out


def patch_file(subject: str, diff: str, body: str = "") -> bytes:
    head = (
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Test Author <author@example.org>\n"
        "Date: Thu, 1 Jan 2026 00:00:00 +0000\n"
        f"Subject: [PATCH] {subject}\n\n" + (body + "\n" if body else "") + "---\n"
    )
    return (head + diff).encode()


def write_series(folder: Path, base: str, patches: list[tuple[str, str, bytes]]) -> Path:
    folder.mkdir(parents=True)
    lines = HEADER + f"# base: {base} upstream/main\n"
    for name, tag, data in patches:
        lines += f"{name} # {tag}\n"
        (folder / name).write_bytes(data)
    (folder / "series").write_text(lines)
    return folder


N = 600
CHANGED = 300


def edit(text: str, i: int, better: bool) -> str:
    """The fork's edit of module ``i``: one line, or for the changed patch a bigger one."""
    line = f"m{i} 10\n"
    if i == CHANGED and better:
        new = "".join(f"tuned {i} step {k}\n" for k in range(12))
    elif i == CHANGED:
        new = "".join(f"tuned {i} step {k}\n" for k in range(0, 12, 2))
    else:
        new = f"tuned {i}\n"
    return text.replace(line, new, 1)


@pytest.fixture(scope="module")
def six_hundred(tmp_path_factory) -> tuple[Repo, Path, Path]:
    """600 patches, one a file; upstream then adds three lines on top of every file; the
    refreshed series has 599 rebased patches and one changed."""
    where = tmp_path_factory.mktemp("six-hundred")
    with pytest.MonkeyPatch.context() as mp:
        for key, value in SEALED.items():
            mp.setenv(key, value)
        mp.setenv("HOME", str(where))
        return build_six_hundred(where)


def build_six_hundred(where: Path) -> tuple[Repo, Path, Path]:
    files = {f"m/f{i:03}.py": numbered(30, f"m{i}") for i in range(N)}
    repo = make_repo(where / "repo", files)
    u1 = repo.head()
    sides = []
    for better in (False, True):
        for i in range(N):
            path = f"m/f{i:03}.py"
            repo.write(path, edit(repo.read(path), i, better))
        diffs = split_diff(repo.git("diff", "--full-index"))
        repo.git("checkout", "-q", "--", ".")
        sides.append(diffs)
        if not better:
            for i in range(N):
                path = f"m/f{i:03}.py"
                repo.write(path, "# one\n# two\n# three\n" + repo.read(path))
            repo.commit_all("Upstream: headers")
    u2 = repo.head()
    old, new = (
        write_series(
            where / name,
            base,
            [
                (f"tune-{i:03}.patch", "optimization", patch_file(f"Tune module {i}", d))
                for i, d in enumerate(diffs[f"m/f{i:03}.py"] for i in range(N))
            ],
        )
        for name, base, diffs in (("old", u1, sides[0]), ("new", u2, sides[1]))
    )
    return repo, old, new


def multi_patch(repo: Repo, base: str, edits: dict, subject: str) -> bytes:
    """A format-patch file made on ``base`` that edits several files."""
    from patchstack.git import find_repo

    repo.git("checkout", "-q", "--detach", base)
    for path, fn in edits.items():
        repo.write(path, fn(repo.read(path)))
    repo.git("commit", "-q", "-a", "-m", subject)
    git = find_repo(str(repo.path))
    try:
        return git.format_patch("HEAD")
    finally:
        git.close()
        repo.git("checkout", "-q", "fork")


def balanced(md: str) -> None:
    """Nothing is cut inside a fence, a table row or a section."""
    fences = re.findall(r"(?m)^(`{3,})(\w*)$", md)
    assert len(fences) % 2 == 0, "an open fence"
    assert md.count("<details") == md.count("</details>")
    for line in md.splitlines():
        if line.startswith("| "):
            assert line.endswith(" |"), line


def test_a_600_patch_refresh_keeps_the_one_interdiff_that_matters(six_hundred) -> None:
    repo, old, new = six_hundred
    md = repo.ps("review", str(old), str(new), "--format", "markdown").stdout
    check_golden("review-cut.md", md.replace(str(old), "OLD").replace(str(new), "NEW"))
    assert len(md.encode()) < COMMENT_LIMIT
    balanced(md)
    assert "*Not listed: 599 rebased patch(es), with nothing to review.*" in md
    assert md.count("<details") == 2  # the changed patch, and its whole new version inside
    assert "+ ++tuned 300 step 1" in md and "- -+tuned 300 step 0" not in md
    assert md.count("| [`tune-300.patch`](#ps-301-tune-300-patch) · ") == 1
    assert '<a name="ps-301-tune-300-patch"></a>' in md
    # The HTML and the text list every patch; text only with --verbose.
    html = repo.ps("review", str(old), str(new), "--format", "html").stdout
    assert html.count('<tr class="rebased">') == 599
    text = repo.ps("review", str(old), str(new)).stdout
    assert "not listed: 599 rebased (--verbose lists them)" in text
    assert len(text.splitlines()) < 60
    verbose = repo.ps("review", str(old), str(new), "--verbose").stdout
    assert verbose.count(" rebased\n") >= 599


def test_the_largest_diffs_move_out_first_and_every_section_stays(tmp_path) -> None:
    repo = make_repo(
        tmp_path / "fork",
        {"small.py": numbered(5, "s")}
        | {f"big{i}.py": numbered(400 * (i + 1), f"b{i}") for i in range(4)},
    )
    base = repo.head()
    specs = [
        P(
            f"big{i}.patch",
            "optimization",
            f"big{i}.py",
            lambda t, i=i: t.replace(f"b{i} ", f"B{i} "),
            f"Rewrite big{i}",
        )
        for i in range(4)
    ]
    small = P("small.patch", "essential", "small.py", sub("s 1\n", "first\n"), "Small")
    repo.git("checkout", "-q", "-b", "fork", base)
    commit_series(repo, series_files(repo, base, [small]), "before")
    commit_series(repo, series_files(repo, base, [small, *specs]), "after")
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    assert len(md.encode()) < COMMENT_LIMIT
    balanced(md)
    # The unchanged patch is counted; big3 (the largest diff) is left out whole, the
    # smaller ones stay whole.
    assert "*Not listed: 1 unchanged patch(es), with nothing to review.*" in md
    assert "shortened to stay under GitHub's 65,536-character limit" in md
    for name in ("big0", "big1", "big2", "big3"):
        assert f"<code>{name}.patch</code>: added" in md  # every section stays
    assert "*The diff (3205 lines) is left out to stay under the comment limit.*" in md
    assert "1 diff(s) are left out, largest first" in md
    assert all(f"+B{i} 1\n" in md for i in range(3)) and "+B3 1\n" not in md
    html = repo.ps("review", "fork~1", "fork", "--format", "html").stdout
    assert "+B3 1\n" in html and "B3 1600" in html  # the other formats are not cut
    # With a link to the whole review, the note points at it.
    url = "https://example.org/run/1#artifacts"
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown", "--full-url", url).stdout
    assert f"see [the full review]({url})" in md


def test_every_limit_is_kept_without_cutting_a_fence_or_a_row(six_hundred) -> None:
    from patchstack.git import find_repo
    from patchstack.review.render import render_review
    from patchstack.review.side import load_review

    repo, old, new = six_hundred
    rv = load_review(str(old), str(new), None, None)
    for limit in (60000, 20000, 5000, 1500, 400):
        out = render_review(rv, "markdown", limit=limit)
        assert 0 < len(out.encode()) < limit, limit
        assert out.startswith(MARKER)
        balanced(out)
    assert find_repo  # imported for symmetry with the other tests


def test_interdiff_notation(tmp_path) -> None:
    """Every kind of interdiff line, in the Markdown notation and coloured text."""
    repo = make_repo(
        tmp_path / "fork",
        {"a.py": numbered(40, "a"), "b.py": numbered(20, "b"), "c.py": numbered(20, "c")},
    )
    base = repo.head()

    def v1(t: str) -> str:
        t = t.replace("a 5\n", "a 5 patched\n")  # kept
        t = t.replace("a 12\n", "a 12 old way\n")  # no longer changed in v2
        t = t.replace("a 20\n", "")  # removed; v2 keeps the line
        return t.replace("a 30\n", "a 30\nold helper\n")  # added; v2 no longer adds it

    def v2(t: str) -> str:
        t = t.replace("a 5\n", "a 5 patched\n")
        t = t.replace("a 25\n", "")  # now removes a line
        return t.replace("a 30\n", "a 30\nnew helper\n")  # now adds a line

    repo.git("checkout", "-q", "-b", "fork", base)
    old_files = series_files(repo, base, [P("x.patch", "essential", "a.py", v1, "X")])
    # v2 also touches c.py and no longer b.py: a file new to the patch, one gone from it.
    old_files["x.patch"] = multi_patch(repo, base, {"a.py": v1, "b.py": sub("b 3\n", "bee\n")}, "X")
    new_files = dict(old_files)
    new_files["x.patch"] = multi_patch(repo, base, {"a.py": v2, "c.py": sub("c 4\n", "sea\n")}, "X")
    commit_series(repo, old_files, "before")
    commit_series(repo, new_files, "after")
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    section = md[md.index("Interdiff.") :]
    text = repo.ps("--color", "always", "review", "fork~1", "fork").stdout
    check_golden("interdiff.md", section)
    check_golden("interdiff.txt", text[text.index("-- interdiff") :])
    assert "+ ++new helper" in section and "- -+old helper" in section
    assert "- +-a 25" in section and "+ --a 20" in section
    assert "@@ c.py @@\n   +@@ c 0\n" not in section  # no repeated header...
    assert section.count("@@ c.py") == 1 and "## c.py ##" not in section
    # In text, the two markers have their own colours: outer green, inner red.
    assert "\x1b[32m\x1b[1m+\x1b[0m\x1b[31m-a 25" in text


def test_mentions_and_issue_references_are_neutralised(tmp_path) -> None:
    repo, u1, _u3 = upstream(tmp_path, FILES[7:])
    f = FILES[0]
    before = P("ping.patch", "essential", f, sub(f"{f} 10\n", "x\n"), "Ping")
    after = P(
        "ping.patch",
        "essential",
        f,
        sub(f"{f} 10\n", "y\n"),
        "Fix @octocat's bug (#1234), GH-99 and owner/repo#5; mail a@b.org",
        "Reported by @someone/team in #77.",
    )
    added = P(
        "new.patch",
        "diagnostic",
        FILES[1],
        sub(f"{FILES[1]} 3\n", "@here\n"),
        "Thanks @alice, see gh-12",
    )
    repo.git("checkout", "-q", "-b", "fork", u1)
    commit_series(repo, series_files(repo, u1, [before]), "before")
    commit_series(repo, series_files(repo, u1, [after, added]), "after")
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    check_golden("mentions.md", md)
    outside = re.sub(r"(?ms)^(`{3,})\w*\n.*?^\1$", "", md)
    outside = re.sub(r"`[^`]*`|<code>.*?</code>", "", outside)
    for ref in ("@octocat", "#1234", "GH-99", "owner/repo#5", "@alice", "gh-12", "@someone"):
        assert ref not in outside, ref
    assert "a@b.org" in outside  # an e-mail address is not a mention


def test_review_and_show_json_have_a_version(tmp_path) -> None:
    from .test_review import every_classification

    repo, _old, _new = every_classification(tmp_path)
    data = json.loads(repo.ps("review", "fork~1", "fork", "--json").stdout)
    assert data["version"] == 1
    assert set(data) == {
        "version",
        "old",
        "new",
        "base",
        "summary",
        "patches",
        "graph",
        "resolutions",
        "marked",
    }
    gamma = next(p for p in data["patches"] if p["name"] == "gamma.patch")
    assert gamma["words"] == ["changed", "description"] and "++gamma extra 2" in gamma["interdiff"]
    assert set(gamma["new"]) >= {"name", "tag", "labels", "position", "subject", "diff", "files"}
    beta = next(p for p in data["patches"] if p["name"] == "beta.patch")
    assert beta["change"] == "rebased" and beta["moves"] == ["src/f2.py: line 10 → 13 (+3)"]
    show = json.loads(repo.ps("show", "gamma", "--json").stdout)
    assert show["version"] == 1 and show["name"] == "gamma.patch"
    assert show["files"] == [{"path": "src/f3.py", "added": 3, "removed": 1}]


def test_templates_run_in_the_sandbox(tmp_path) -> None:
    from .test_review import every_classification

    repo, _old, _new = every_classification(tmp_path)
    own = repo.path / ".patchstack" / "templates"
    own.mkdir(parents=True)
    before = repo.state()
    (own / "review.md").write_text("{{ review.__class__.__mro__ }}\n")
    res = repo.ps("review", "fork~1", "fork", "--format", "markdown", code=2)
    assert "review.md" in res.stderr and "unsafe" in res.stderr
    (own / "review.md").write_text("{{ items.append(1) }}\n")
    assert "unsafe" in repo.ps("review", "fork~1", "fork", "--format", "markdown", code=2).stderr
    (own / "review.md").write_text("{% for x in %}\n")
    res = repo.ps("review", "fork~1", "fork", "--format", "markdown", code=2)
    assert f"{own / 'review.md'}:1: template:" in res.stderr
    (own / "review.md").unlink()
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    (own / "review.md").symlink_to(secret)
    res = repo.ps("review", "fork~1", "fork", "--format", "markdown", code=2)
    assert "the template is a link out of its folder" in res.stderr
    assert "hunter2" not in res.stdout + res.stderr
    assert repo.state()[0] == before[0]


def test_the_review_draws_the_graph_of_the_changed_patches(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(30, "a"), "b.py": numbered(9, "b")})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "fork", base)

    def series(second: str) -> dict[str, bytes]:
        first = sub("a 10\n", "first 10\n")
        files = series_files(
            repo,
            base,
            [
                P("one.patch", "diagnostic", "a.py", first, "One"),
                P("far.patch", "essential", "b.py", sub("b 2\n", "x\n"), "Far"),
            ],
        )
        # two.patch is made on top of one.patch: it rewrites one.patch's line.
        repo.git("checkout", "-q", "--detach", base)
        repo.write("a.py", first(repo.read("a.py")))
        repo.git("commit", "-q", "-a", "-m", "one")
        on_one = repo.head()
        repo.git("checkout", "-q", "fork")
        files["two.patch"] = multi_patch(
            repo, on_one, {"a.py": lambda t: t.replace("first 10\n", second)}, "Two"
        )
        files["series"] += b"two.patch # essential\n"
        return files

    commit_series(repo, series("second 10\n"), "before")
    commit_series(repo, series("second 10, better\n"), "after")
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    graph = md[md.index("```mermaid\n") : md.index("```\n", md.index("```mermaid\n"))]
    assert (
        '  p1["one.patch"]:::diagnostic\n' in graph and '  p3["two.patch"]:::essential\n' in graph
    )
    assert "  p1 --> p3\n" in graph and "far.patch" not in graph
    assert "  style p1 stroke-dasharray" in graph  # one.patch is only context here
    # one.patch is in the report (its row says unchanged): the legend says what dashed means.
    assert "| `one.patch` · diagnostic<br>One | unchanged |" in md
    assert "not reported" not in md
    assert "dashed: a patch whose code this change leaves as it was, drawn for the arrows" in md
    html = repo.ps("review", "fork~1", "fork", "--format", "html").stdout
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="graph"' in html
    assert "<title>two.patch leans on one.patch: a.py</title>" in html
    assert "not reported" not in html and "leaves as it was" in html
