"""`patchstack review` and `patchstack show` on series changes built in real repositories.

Golden files live in tests/golden/; regenerate them with PATCHSTACK_UPDATE_GOLDEN=1 and read
the diff before committing.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from patchstack.git import find_repo
from patchstack.review.compare import lcs
from patchstack.review.render import COMMENT_LIMIT, render_review
from patchstack.review.side import load_review

from .conftest import Repo, built_once, make_repo, numbered

GOLDEN = Path(__file__).parent / "golden"
HEADER = "# patchstack series: one patch a line, 'name.patch [-pN] # tag[, label...]'\n"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("PATCHSTACK_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(text.encode())
    assert path.exists(), f"{path} is missing: run with PATCHSTACK_UPDATE_GOLDEN=1"
    assert text == path.read_bytes().decode(), f"{name} differs from its golden file"


@dataclass(frozen=True)
class P:
    """A patch to write: ``edit`` turns the base version of ``path`` into the patched one."""

    name: str
    tag: str
    path: str
    edit: Callable[[str], str]
    subject: str
    body: str = ""


def sub(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)

    return edit


def make_patch(repo: Repo, base: str, p: P) -> bytes:
    """A format-patch file for ``p`` made on ``base`` (as patchstack writes them)."""
    branch = repo.git("symbolic-ref", "--short", "HEAD").strip()
    repo.git("checkout", "-q", "--detach", base)
    repo.write(p.path, p.edit(repo.read(p.path)))
    message = p.subject + ("\n\n" + p.body if p.body else "")
    repo.git("commit", "-q", "-a", "-m", message)
    git = find_repo(str(repo.path))
    try:
        return git.format_patch("HEAD")
    finally:
        git.close()
        repo.git("checkout", "-q", branch)


def series_files(repo: Repo, base: str, patches: list[P]) -> dict[str, bytes]:
    lines = HEADER + f"# base: {base} upstream/main\n"
    lines += "".join(f"{p.name} # {p.tag}\n" for p in patches)
    files = {"series": lines.encode()}
    for p in patches:
        files[p.name] = make_patch(repo, base, p)
    return files


def commit_series(repo: Repo, files: dict[str, bytes], message: str) -> str:
    """Replace patches/ on branch 'fork' by ``files`` and commit; returns the commit."""
    folder = repo.path / "patches"
    if folder.exists():
        for f in folder.iterdir():
            f.unlink()
    folder.mkdir(exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    repo.git("add", "-A", "patches")
    repo.git("commit", "-q", "-m", message)
    return repo.head()


def write_dir(path: Path, files: dict[str, bytes]) -> Path:
    path.mkdir(parents=True)
    for name, data in files.items():
        (path / name).write_bytes(data)
    return path


FILES = [f"src/f{i}.py" for i in range(1, 9)]


def upstream(tmp_path: Path, touched: list[str]) -> tuple[Repo, str, str]:
    """Upstream U1, then U2 (lines inserted on top of ``touched`` and a context line changed),
    then U3 (a new file)."""
    repo = make_repo(tmp_path / "fork", {path: numbered(30, path) for path in FILES})
    u1 = repo.head()
    for path in touched:
        text = repo.read(path)
        text = "# licence header 1\n# licence header 2\n# licence header 3\n" + text
        repo.write(path, text.replace(f"{path} 8\n", f"{path} 8 (reworded upstream)\n"))
    repo.commit_all("Upstream: licence headers")
    repo.write("README", "upstream readme\n")
    u3 = repo.commit_all("Upstream: readme")
    return repo, u1, u3


@built_once  # (the review's, the Action's and the render's tests share it)
def every_classification(tmp_path: Path) -> tuple[Repo, dict[str, bytes], dict[str, bytes]]:
    repo, u1, u3 = upstream(tmp_path, FILES[1:2])
    f = {i: path for i, path in enumerate(FILES, 1)}
    old = [
        P("alpha.patch", "essential", f[1], sub(f"{f[1]} 10\n", "alpha 10\n"), "Alpha: load"),
        P("beta.patch", "essential", f[2], sub(f"{f[2]} 10\n", "beta 10\n"), "Beta: rebased"),
        P(
            "gamma.patch",
            "diagnostic",
            f[3],
            sub(f"{f[3]} 10\n", "gamma 10\ngamma extra 1\n"),
            "Gamma: log",
            "Log what gamma does.",
        ),
        P("delta.patch", "diagnostic", f[4], sub(f"{f[4]} 10\n", "delta 10\n"), "Delta: tune"),
        P("epsilon.patch", "optimization", f[5], sub(f"{f[5]} 10\n", "eps 10\n"), "Epsilon"),
        P("zeta.patch", "optimization", f[6], sub(f"{f[6]} 10\n", "zeta 10\n"), "Zeta: gone"),
        P("eta.patch", "essential", f[7], sub(f"{f[7]} 20\n", "eta 20\n"), "Eta: moves"),
    ]
    by = {p.name: p for p in old}
    new = [
        by["alpha.patch"],
        by["eta.patch"],
        by["beta.patch"],
        P(
            "gamma.patch",
            "diagnostic",
            f[3],
            sub(f"{f[3]} 10\n", "gamma 10\ngamma extra 1\ngamma extra 2\n"),
            "Gamma: log more",
            "Log what gamma does,\nand why.",
        ),
        P("delta.patch", "optimization", f[4], sub(f"{f[4]} 10\n", "delta 10\n"), "Delta: tune"),
        P("epsilon-v2.patch", "optimization", f[5], sub(f"{f[5]} 10\n", "eps 10\n"), "Epsilon"),
        P(
            "theta.patch",
            "optimization",
            f[8],
            sub(f"{f[8]} 12\n", "theta = '''\n```diff\n````\n'''\n"),
            "Theta: new",
        ),
    ]
    old_files = series_files(repo, u1, old)
    new_files = series_files(repo, u3, new)
    repo.git("checkout", "-q", "-b", "fork", u1)
    commit_series(repo, old_files, "Series before")
    commit_series(repo, new_files, "Series after")
    return repo, old_files, new_files


_BUILT: dict[str, tuple[Path, dict[str, bytes], dict[str, bytes]]] = {}


@pytest.fixture
def scenario(tmp_path, tmp_path_factory):
    """The every-classification repository, built once per session and copied for each test."""
    if "every" not in _BUILT:
        where = tmp_path_factory.mktemp("every")
        repo, old, new = every_classification(where)
        _BUILT["every"] = (repo.path, old, new)
    src, old, new = _BUILT["every"]
    shutil.copytree(src, tmp_path / "fork", symlinks=True)
    return Repo(tmp_path / "fork"), old, new


def words(review) -> dict[str, tuple[str, ...]]:
    return {p.name: p.words for p in review.patches}


def test_every_classification_at_once(scenario) -> None:
    repo, _old, _new = scenario
    git = find_repo(str(repo.path))
    try:
        rv = load_review("fork~1", "fork", git, "patches")
    finally:
        git.close()
    assert words(rv) == {
        "alpha.patch": ("unchanged",),
        "eta.patch": ("moved",),
        "beta.patch": ("rebased",),
        "gamma.patch": ("changed", "description"),
        "delta.patch": ("retagged",),
        "epsilon-v2.patch": ("renamed",),
        "zeta.patch": ("dropped",),
        "theta.patch": ("added",),
    }
    # The dropped patch sits where it was: after the one before it in the old series.
    assert [p.name for p in rv.patches][-2:] == ["zeta.patch", "theta.patch"]
    assert rv.base.moved and rv.base.ahead == 2 and rv.base.behind == 0
    gamma = next(p for p in rv.patches if p.name == "gamma.patch")
    assert "++gamma extra 2" in gamma.interdiff
    assert not any(ln.startswith(("-+gamma extra 1", "++gamma extra 1")) for ln in gamma.interdiff)
    assert gamma.description_diff[0] == "-Gamma: log"
    assert "+Gamma: log more" in gamma.description_diff


@pytest.mark.parametrize(
    ("fmt", "golden"), [("markdown", "review.md"), ("html", "review.html"), ("text", "review.txt")]
)
def test_review_golden(scenario, fmt, golden) -> None:
    repo, _old, _new = scenario
    out = repo.ps("review", "fork~1", "fork", "--format", fmt).stdout
    check_golden(golden, out)
    # --output writes the same bytes (text: without colour, as on a pipe).
    repo.ps("review", "fork~1", "fork", "--format", fmt, "-o", str(repo.path / "out"))
    assert (repo.path / "out").read_text() == out


def test_text_is_coloured_only_when_asked(scenario, monkeypatch) -> None:
    repo, _old, _new = scenario
    plain = repo.ps("review", "fork~1", "fork").stdout
    assert "\x1b[" not in plain
    coloured = repo.ps("--color", "always", "review", "fork~1", "fork").stdout
    assert "\x1b[32m" in coloured and re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
    assert "\x1b[" not in repo.ps("--color", "never", "review", "fork~1", "fork").stdout
    monkeypatch.delenv("NO_COLOR")
    assert "\x1b[" not in repo.ps("review", "fork~1", "fork").stdout  # not a TTY


def test_revisions_and_directories_give_the_same_review(scenario, tmp_path) -> None:
    repo, old_files, new_files = scenario
    old_dir = write_dir(tmp_path / "old", old_files)
    new_dir = write_dir(tmp_path / "new", new_files)
    git = find_repo(str(repo.path))
    try:
        by_rev = load_review("fork~1", "fork", git, "patches")
        by_dir = load_review(str(old_dir), str(new_dir), git, "patches")
        # Without a repository at hand the base counts are unknown; all else is equal.
        alone = load_review(str(old_dir), str(new_dir), None, None)
    finally:
        git.close()
    assert by_rev.patches == by_dir.patches == alone.patches
    assert by_rev.base == by_dir.base
    assert alone.base.ahead is None and alone.base.old == by_rev.base.old
    # Through the CLI the output differs only in the labels.
    a = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    b = repo.ps("review", str(old_dir), str(new_dir), "--format", "markdown").stdout
    assert a.replace("fork~1", "OLD").replace("<code>fork</code>", "<code>NEW</code>") == (
        b.replace(str(old_dir), "OLD").replace(str(new_dir), "NEW")
    )
    # One side may be the series directory of the work tree.
    c = repo.ps("review", "fork~1", "patches", "--format", "markdown").stdout
    assert c.replace("fork~1", "OLD").replace("<code>patches</code>", "<code>NEW</code>") == (
        b.replace(str(old_dir), "OLD").replace(str(new_dir), "NEW")
    )


def test_refresh_only_change_is_rebased_except_real_changes(tmp_path) -> None:
    repo, u1, u3 = upstream(tmp_path, FILES)
    specs = [
        P(
            f"p{i}.patch",
            "essential",
            FILES[i],
            sub(f"{FILES[i]} 10\n", f"patched {i}\n"),
            f"Patch {i}",
        )
        for i in range(1, 7)
    ]
    really = P(
        "p4.patch", "essential", FILES[4], sub(f"{FILES[4]} 10\n", "patched 4, better\n"), "Patch 4"
    )
    old_files = series_files(repo, u1, specs)
    new_files = series_files(repo, u3, [really if p.name == "p4.patch" else p for p in specs])
    # The refresh changed every patch file: line numbers, context and blob ids.
    assert all(old_files[p.name] != new_files[p.name] for p in specs)
    repo.git("checkout", "-q", "-b", "fork", u1)
    commit_series(repo, old_files, "Series before")
    commit_series(repo, new_files, "Refresh onto upstream")
    out = repo.ps("review", "fork~1", "fork", "--format", "text", "--verbose").stdout
    for p in specs:
        row = next(ln for ln in out.splitlines() if f" {p.name} " in ln)
        assert row.rstrip().endswith("changed" if p.name == "p4.patch" else "rebased"), row
    assert "base: moved from " in out and "(2 upstream commits)" in out
    assert "-+patched 4\n++patched 4, better\n" in out
    # Without --verbose only the really changed patch is listed, and has a section.
    out = repo.ps("review", "fork~1", "fork", "--format", "text").stdout
    assert out.count("== ") == 1 and "not listed: 5 rebased" in out


HOSTILE = '<script>alert("x")</script>'


def test_html_escapes_subjects_and_diff_lines(tmp_path) -> None:
    repo, u1, _u3 = upstream(tmp_path, FILES[7:])
    evil = P(
        "evil.patch",
        "essential",
        FILES[0],
        sub(f"{FILES[0]} 10\n", HOSTILE + " & <iframe>\n"),
        "Evil " + HOSTILE,
        "Body <img src=x onerror=alert(1)>",
    )
    calm = P("evil.patch", "essential", FILES[0], sub(f"{FILES[0]} 10\n", "calm\n"), "Calm")
    repo.git("checkout", "-q", "-b", "fork", u1)
    commit_series(repo, series_files(repo, u1, [calm]), "before")
    commit_series(repo, series_files(repo, u1, [evil]), "after")
    html = repo.ps("review", "fork~1", "fork", "--format", "html").stdout
    assert "<script>" not in html and "<img" not in html and "<iframe>" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "+&lt;script&gt;" in html  # the diff line, as text
    show = repo.ps("show", "evil", "--format", "html").stdout
    assert "<script>" not in show and "<img" not in show and "&lt;script&gt;" in show
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    outside_fences = re.sub(r"```diff\n.*?\n```\n", "", md, flags=re.S)
    assert "<script>" not in outside_fences and "<img" not in outside_fences
    assert "+" + HOSTILE + " & <iframe>" in md  # inside the fence a diff line stays as it is


# A larger variation of tests/test_review_render.py's largest-diffs test (the README's command
# runs that one: under the limit, the largest diffs left out whole, every section and the
# note kept, the HTML not cut).
@pytest.mark.slow
def test_markdown_stays_under_the_comment_limit(tmp_path) -> None:
    repo = make_repo(tmp_path / "fork", {f"big{i}.py": numbered(3000, f"b{i}") for i in range(4)})
    base = repo.head()
    specs = [
        P(
            f"big{i}.patch",
            "optimization",
            f"big{i}.py",
            lambda text, i=i: text.replace(f"b{i} ", f"B{i} "),
            f"Rewrite big{i}",
        )
        for i in range(4)
    ]
    repo.git("checkout", "-q", "-b", "fork", base)
    commit_series(repo, series_files(repo, base, specs[:1]), "before")
    commit_series(repo, series_files(repo, base, specs), "after")
    md = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    assert len(md.encode()) < COMMENT_LIMIT
    assert "shortened to stay under GitHub's 65,536-character limit" in md
    # Diffs are never cut inside: the two largest are left out whole, each keeps its section.
    assert md.count("is left out to stay under the comment limit") == 2
    assert md.count("<details") == md.count("</details>") == 3
    assert md.count("```diff\n") == 1
    # Every patch is still in the summary table; the other formats are not cut.
    for i in range(1, 4):
        assert f"| [`big{i}.patch`](#ps-{i + 1}-big{i}-patch) · " in md
    html = repo.ps("review", "fork~1", "fork", "--format", "html").stdout
    assert len(html) > 4 * COMMENT_LIMIT


def test_truncation_holds_for_any_limit(scenario) -> None:
    repo, _old, _new = scenario
    git = find_repo(str(repo.path))
    try:
        rv = load_review("fork~1", "fork", git, "patches")
    finally:
        git.close()
    full = render_review(rv, "markdown")
    for limit in (len(full.encode()) + 1, len(full.encode()), 3000, 1500, 200):
        out = render_review(rv, "markdown", limit=limit)
        assert len(out.encode()) < limit
        assert (out == full) == (limit > len(full.encode()))


def test_show_golden(scenario) -> None:
    repo, _old, _new = scenario
    for fmt, ext in (("markdown", "md"), ("html", "html"), ("text", "txt")):
        check_golden(f"show.{ext}", repo.ps("show", "gamma", "--format", fmt).stdout)
    old = repo.ps("show", "gamma", "--rev", "fork~1").stdout
    assert "Gamma: log\n" in old and "gamma extra 2" not in old
    assert "no patch named 'nope'" in repo.ps("show", "nope", code=2).stderr


def test_project_templates_override_the_shipped_ones(scenario, tmp_path) -> None:
    repo, _old, _new = scenario
    own = repo.path / ".patchstack" / "templates"
    own.mkdir(parents=True)
    (own / "review.md").write_text(
        '{% extends "patchstack/review.md" %}{% block table %}'
        "{% for p in review.patches %}{{ p.name }}={{ p.words | join('+') }}\n{% endfor %}"
        "{% endblock %}"
    )
    out = repo.ps("review", "fork~1", "fork", "--format", "markdown").stdout
    assert "gamma.patch=changed+description\n" in out
    assert "<!-- patchstack-review -->" in out and "| # | Patch |" not in out
    cli_dir = tmp_path / "mine"
    cli_dir.mkdir()
    (cli_dir / "review.md").write_text("{{ review.patches | length }} patches\n")
    out = repo.ps(
        "review", "fork~1", "fork", "--format", "markdown", "--templates", str(cli_dir)
    ).stdout
    assert out == "8 patches\n"


def test_bad_input_is_reported_with_file_and_line(scenario, tmp_path) -> None:
    repo, old_files, _new = scenario
    res = repo.ps("review", "nope", "fork", code=2)
    assert "'nope' is neither a directory nor a revision" in res.stderr
    broken = dict(old_files)
    broken["series"] += b"missing.patch # essential\n"
    old_dir = write_dir(tmp_path / "broken", broken)
    res = repo.ps("review", str(old_dir), "fork", code=2)
    assert f"{old_dir}/series:10: patch file 'missing.patch' not found" in res.stderr
    res = repo.ps("review", "fork~1", "fork", "--dir", "elsewhere", code=2)
    assert "no series file at fork~1:elsewhere/series" in res.stderr


def test_a_series_that_starts_in_the_pull_request_is_all_added(scenario) -> None:
    repo, _old, _new = scenario
    out = repo.ps("review", "main", "fork~1").stdout
    assert "patches: 0 → 7: 7 added\n" in out
    assert "base: set to " in out


def test_lcs_marks_only_the_moved_patch() -> None:
    assert lcs(list("abcdef"), list("aebcdf")) == set("abcdf")
    assert lcs(list("abc"), list("cba")) in ({"a"}, {"b"}, {"c"})
    assert lcs([], list("ab")) == set()


def test_review_with_no_revisions_compares_the_series_folder_with_head(tmp_path) -> None:
    """`review` alone (DESIGN: `review [OLD NEW]`): OLD is HEAD and NEW the series folder in
    the work tree, what a refresh rewrote and is not committed yet; `review OLD` takes the
    folder as NEW too. Both give what `review` of the two committed states gives."""
    repo, u1, u3 = upstream(tmp_path, FILES)
    specs = [
        P(f"p{i}.patch", "essential", FILES[i], sub(f"{FILES[i]} 10\n", f"patched {i}\n"), f"P{i}")
        for i in range(1, 4)
    ]
    really = P(
        "p2.patch", "essential", FILES[2], sub(f"{FILES[2]} 10\n", "patched 2, better\n"), "P2"
    )
    old_files = series_files(repo, u1, specs)
    new_files = series_files(repo, u3, [really if p.name == "p2.patch" else p for p in specs])
    repo.git("checkout", "-q", "-b", "fork", u1)
    commit_series(repo, old_files, "Series before")
    committed = commit_series(repo, new_files, "Refresh onto upstream")
    want = repo.ps("review", "fork~1", "fork", "--format", "text").stdout
    repo.git("reset", "-q", "--soft", "fork~1")  # the refresh's files, not committed
    repo.git("reset", "-q")
    assert repo.git("rev-parse", "HEAD") != committed
    alone = repo.ps("review", "--format", "text").stdout.split("\n", 1)
    assert alone[0] == "review HEAD → patches" and alone[1] == want.split("\n", 1)[1]
    assert "-+patched 2\n++patched 2, better\n" in alone[1]
    assert repo.ps("review", "HEAD", "--format", "text").stdout.split("\n", 1) == alone
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    failed = repo.ps("review", cwd=outside, code=2)
    assert "no repository" in failed.stderr or "not a git repository" in failed.stderr, (
        failed.stderr
    )
