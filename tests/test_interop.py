"""import / export: quilt series, commit ranges, mboxes, against real git and real quilt."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from patchstack.errors import InputError
from patchstack.interop import (
    comment_tags,
    locate_preimage,
    normalize_author,
    normalize_date,
    parse_quilt_series,
    quilt_name,
    slug,
    split_own_trailers,
)
from patchstack.model.patchfile import parse_patch

from .conftest import Repo, make_repo, names, numbered

needs_quilt = pytest.mark.skipif(shutil.which("quilt") is None, reason="quilt is not installed")


def udiff(old: str, new: str, a: str, b: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b))


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def tree_of_folder(folder: Path, tmp: Path) -> str:
    """The git tree of every file in ``folder`` but quilt's .pc and the patches folder."""
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp / "idx"), GIT_DIR=str(tmp / "objs.git"))
    subprocess.run(["git", "init", "-q", "--bare", env["GIT_DIR"]], check=True, env=env)
    subprocess.run(
        ["git", "--work-tree", str(folder), "add", "-A", "-f", "--", ".", ":!.pc", ":!qp"],
        check=True,
        env=env,
    )
    out = subprocess.run(["git", "write-tree"], check=True, env=env, capture_output=True)
    return out.stdout.decode().strip()


def quilt_push(
    repo: Repo, rev: str, patches: Path, work: Path, fuzz: int | None = None
) -> tuple[int, str]:
    """Check out ``rev`` of ``repo`` into ``work`` and run quilt push -a there with ``patches``."""
    work.mkdir()
    archive = subprocess.run(
        ["git", "archive", rev], cwd=repo.path, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x"], cwd=work, input=archive, check=True)
    shutil.copytree(patches, work / "qp")
    args = ["quilt", "--quiltrc", os.devnull, "push", "-a"]
    if fuzz is not None:
        args.append(f"--fuzz={fuzz}")
    proc = subprocess.run(
        args, cwd=work, env=dict(os.environ, QUILT_PATCHES="qp"), capture_output=True, text=True
    )
    return proc.returncode, proc.stdout + proc.stderr


# -- pure parts ---------------------------------------------------------------------------------


def test_quilt_series_options_guards_and_comments() -> None:
    text = (
        "# a comment line\n"
        "\n"
        "debian/fix-build.patch\n"
        "old-style.diff -p0 #+diagnostic #-nvidia\n"
        "tagged.patch # optimization, moe\n"
        "free.patch # from upstream bug 123\n"
        "both.patch -p2 #+essential #+gpu\n"
    )
    lines = parse_quilt_series(text, "qp/series")
    assert [(q.file, q.strip, q.tag, q.labels, q.lineno) for q in lines] == [
        ("debian/fix-build.patch", 1, None, (), 3),
        ("old-style.diff", 0, "diagnostic", ("-nvidia",), 4),
        ("tagged.patch", 1, "optimization", ("moe",), 5),
        ("free.patch", 1, None, (), 6),
        ("both.patch", 2, "essential", ("+gpu",), 7),
    ]
    assert quilt_name("debian/fix-build.patch") == "debian--fix-build.patch"
    assert quilt_name(".hidden name.patch") == "_.hidden_name.patch"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x.patch -R\n", "qp/series:1: reversed patch (-R) 'x.patch' is not supported"),
        ("x.patch --fuzz=3\n", "qp/series:1: unknown option '--fuzz=3' for 'x.patch'"),
        ("ok.patch\n../x.patch\n", "qp/series:2: patch path '../x.patch' leaves the quilt"),
        ("a.patch\na.patch\n", "qp/series:2: 'a.patch' listed twice (first on line 1)"),
        ("a.patch #+essential #+diagnostic\n", "qp/series:1: more than one tag among the"),
    ],
)
def test_quilt_series_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_quilt_series(text, "qp/series")
    assert exc.value.message.startswith(message)


def test_comment_tags_and_names() -> None:
    assert comment_tags("# essential", "s", 1) == ("essential", ())
    assert comment_tags("#-essential", "s", 1) == (None, ("-essential",))
    assert slug("[x] Fix: the thing, again!") == "x-Fix-the-thing-again.patch"
    assert split_own_trailers("S\n\nBody\n\nPatchstack-Patch: a.patch\nPatchstack-Tag: essential")[
        1:
    ] == ("essential", "a.patch")
    assert normalize_author("Jörg Müller <jm@example.org>") == "Jörg Müller <jm@example.org>"
    assert normalize_author("jm@example.org") == "jm <jm@example.org>"
    assert normalize_author("Just A Name") == "Just A Name <>"
    assert normalize_date("Mon, 5 Jan 2026 10:00:00 +0100") == "1767603600 +0100"
    assert normalize_date("2019-05-01") is None


def test_dep3_header_fields_and_paragraphs() -> None:
    data = (
        b"Description: Fix the frobnicator\n"
        b" It broke on big-endian machines.\n"
        b" .\n"
        b" Second paragraph.\n"
        b"Author: Jane Roe <jane@example.org>\n"
        b"Origin: upstream, https://example.org/commit/1\n"
        b"Bug-Debian: https://bugs.debian.org/42\n"
        b"Forwarded: not-needed\n"
        b"Last-Update: 2024-02-03\n"
        b"---\n"
        b"--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n-a\n+b\n"
    )
    p = parse_patch(data, "fix.patch")
    assert p.subject == "Fix the frobnicator"
    assert p.description == "It broke on big-endian machines.\n\nSecond paragraph."
    assert p.author == "Jane Roe <jane@example.org>"
    assert p.fields == (
        ("Origin", "upstream, https://example.org/commit/1"),
        ("Bug-Debian", "https://bugs.debian.org/42"),
        ("Forwarded", "not-needed"),
        ("Last-Update", "2024-02-03"),
    )


def test_locate_preimage_puts_each_hunk_where_fuzz_would() -> None:
    made_on = numbered(30, "x")
    new = sub(made_on, "x 15\n", "x 15 patched\n")
    patch = parse_patch(udiff(made_on, new, "a/f", "b/f").encode(), "p")
    # Now: three lines inserted above (offset 3) and an outer context line changed (fuzz 1).
    now = sub(made_on, "x 2\n", "x 2\nins\nins\nins\n")
    now = sub(now, "x 12\n", "x 12 drifted\n")
    located = locate_preimage(now.encode(), patch.files[0])
    assert located is not None
    base, fuzzes = located
    assert fuzzes == (1,)
    assert base.decode() == sub(now, "x 12 drifted\n", "x 12\n")
    # A context line next to the change cannot be fuzzed away.
    assert locate_preimage(sub(made_on, "x 14\n", "x 14 moved\n").encode(), patch.files[0]) is None


# -- quilt ----------------------------------------------------------------------------------


UPSTREAM = {
    "src/main.c": numbered(40, "main"),
    "src/util.c": numbered(30, "util"),
    "doc/README": "readme\nline two\n",
    "Makefile": numbered(12, "make"),
}


def quilt_tree(tmp_path: Path) -> tuple[Repo, Path]:
    """An upstream repository and a quilt directory with the forms real series carry."""
    repo = make_repo(tmp_path / "fork", UPSTREAM)
    qp = tmp_path / "quilt"
    (qp / "debian").mkdir(parents=True)
    main1 = sub(UPSTREAM["src/main.c"], "main 5\n", "main 5 dep3\n")
    (qp / "debian" / "dep3.patch").write_text(
        "Description: Make main say dep3\n"
        " Longer explanation.\n"
        " .\n"
        " Another paragraph.\n"
        "Author: Jörg Müller <jm@example.org>\n"
        "Origin: vendor\n"
        "Forwarded: no\n"
        "---\n" + udiff(UPSTREAM["src/main.c"], main1, "a/src/main.c", "b/src/main.c")
    )
    util1 = sub(UPSTREAM["src/util.c"], "util 20\n", "util 20 p0\n")
    (qp / "old-p0.diff").write_text(
        "Index: src/util.c\n"
        "===================================================================\n"
        + udiff(UPSTREAM["src/util.c"], util1, "src/util.c.orig", "src/util.c")
    )
    main2 = sub(main1, "main 30\n", "main 30 plain\n")
    (qp / "plain.diff").write_text(
        "Fix the plain thing.\n\n"
        + udiff(main1, main2, "pkg-1.0.orig/src/main.c", "pkg-1.0/src/main.c")
    )
    (qp / "new-file.patch").write_text(
        "From: Ann <ann@example.org>\nSubject: [PATCH] add a new file\n\nBody text.\n---\n"
        + udiff("", "new\nfile\n", "/dev/null", "b/src/new.c").replace(
            "@@ -0,0 +1,2 @@", "@@ -0,0 +1,2 @@"
        )
    )
    (qp / "series").write_text(
        "# the series\n"
        "debian/dep3.patch #+essential\n"
        "old-p0.diff -p0 #+diagnostic #-nvidia\n"
        "plain.diff # optimization, moe\n"
        "new-file.patch\n"
    )
    return repo, qp


@needs_quilt
def test_quilt_round_trip_preserves_the_tree_exactly(tmp_path: Path) -> None:
    repo, qp = quilt_tree(tmp_path)
    base = repo.head()
    code, out = quilt_push(repo, base, qp, tmp_path / "by-quilt")
    assert code == 0, out
    want = tree_of_folder(tmp_path / "by-quilt", tmp_path / "q1")
    head = repo.head()

    # Untagged patches: exit 2, listing them, nothing written.
    before = repo.state()
    result = repo.ps("import", "quilt", str(qp), code=2)
    assert "1 patch(es) without a tag: new-file.patch" in result.stderr
    assert repo.state() == before

    result = repo.ps("import", "quilt", str(qp), "--tag", "essential")
    assert "  debian--dep3.patch [essential] from" in result.stdout
    assert "  old-p0.diff [diagnostic, -nvidia]" in result.stdout
    assert "  plain.diff [optimization, moe]" in result.stdout
    assert "three-way" not in result.stdout
    # Only the series directory was written: branch and work tree untouched.
    assert repo.head() == head
    assert repo.git("status", "--porcelain") == "?? patches/\n"
    series = repo.read("patches/series")
    assert series.splitlines()[2:] == [
        "debian--dep3.patch # essential",
        "old-p0.diff # diagnostic, -nvidia",  # regenerated: -p1 now
        "plain.diff # optimization, moe",
        "new-file.patch # essential",
    ]
    dep3 = repo.read("patches/debian--dep3.patch")
    assert "From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?= <jm@example.org>\n" in dep3
    assert "Subject: [PATCH] Make main say dep3\n" in dep3
    assert "Longer explanation.\n\nAnother paragraph.\n\nOrigin: vendor\nForwarded: no\n" in dep3
    assert "index " in dep3 and "diff --git a/src/main.c b/src/main.c" in dep3
    assert "Subject: [PATCH] Fix the plain thing.\n" in repo.read("patches/plain.diff")

    repo.ps("push", "--all")
    assert repo.tree() == want

    # Export: quilt applies it with no fuzz at all, to the same tree.
    repo.ps("export", "quilt", str(tmp_path / "exported"))
    assert (tmp_path / "exported" / "series").read_text() == series
    code, out = quilt_push(repo, base, tmp_path / "exported", tmp_path / "again", fuzz=0)
    assert code == 0, out
    assert tree_of_folder(tmp_path / "again", tmp_path / "q2") == want

    # Importing the export gives back the very same files (names, order, descriptions, tags).
    other = make_repo(tmp_path / "other", UPSTREAM)
    other.ps("import", "quilt", str(tmp_path / "exported"))
    for name in os.listdir(repo.path / "patches"):
        assert (other.path / "patches" / name).read_bytes() == (
            repo.path / "patches" / name
        ).read_bytes(), name

    # A series with patches is not extended unless --append says so.
    before = repo.state()
    result = repo.ps("import", "quilt", str(tmp_path / "exported"), code=2)
    assert "already has 4 patch(es)" in result.stderr and "--append" in result.stderr
    assert repo.state() == before


def fuzzy_setup(tmp_path: Path, drift: str) -> tuple[Repo, Path]:
    """A quilt patch made on a file whose context has since drifted at line ``drift``."""
    made_on = numbered(30, "x")
    repo = make_repo(tmp_path / "fork", {"f.txt": sub(made_on, f"{drift}\n", f"{drift} drift\n")})
    qp = tmp_path / "quilt"
    qp.mkdir()
    (qp / "fuzzy.patch").write_text(
        udiff(made_on, sub(made_on, "x 15\n", "x 15 patched\n"), "a/f.txt", "b/f.txt")
    )
    (qp / "series").write_text("fuzzy.patch #+essential\n")
    return repo, qp


@needs_quilt
def test_patch_that_needs_fuzz_is_merged_exactly_and_reported(tmp_path: Path) -> None:
    repo, qp = fuzzy_setup(tmp_path, "x 12")
    base = repo.head()
    code, out = quilt_push(repo, base, qp, tmp_path / "fz0", fuzz=0)
    assert code != 0  # quilt needs fuzz for it ...
    code, out = quilt_push(repo, base, qp, tmp_path / "fz2")
    assert code == 0 and "with fuzz 1" in out, out  # ... and applies it with fuzz
    want = tree_of_folder(tmp_path / "fz2", tmp_path / "q")

    result = repo.ps("import", "quilt", str(qp))
    assert "  fuzzy.patch [essential] from" in result.stdout
    assert "(three-way merge)" in result.stdout
    assert "f.txt: hunk at line 12 needed fuzz 1" in result.stdout
    text = repo.read("patches/fuzzy.patch")
    assert " x 12 drift\n" in text  # rewritten in exact form: today's context
    repo.ps("push", "--all")
    assert repo.tree() == want
    repo.ps("export", "quilt", str(tmp_path / "exported"))
    code, out = quilt_push(repo, base, tmp_path / "exported", tmp_path / "again", fuzz=0)
    assert code == 0, out


def test_fuzz_that_would_touch_the_patch_lines_is_refused(tmp_path: Path) -> None:
    made_on = numbered(30, "x")
    repo = make_repo(tmp_path / "fork", {"f.txt": sub(made_on, "x 14\n", "x 14 drift\n")})
    qp = tmp_path / "quilt"
    qp.mkdir()
    # One line of context: fuzz 1 ignores the drifted line right next to the change.
    new = sub(made_on, "x 15\n", "x 15 patched\n")
    lines = difflib.unified_diff(made_on.splitlines(True), new.splitlines(True), "a/f", "b/f", n=1)
    (qp / "fuzzy.patch").write_text("".join(lines).replace("/f\n", "/f.txt\n"))
    (qp / "series").write_text("fuzzy.patch #+essential\n")
    if shutil.which("quilt"):
        code, out = quilt_push(repo, repo.head(), qp, tmp_path / "by-quilt")
        assert code == 0 and "with fuzz 1" in out, out  # quilt would apply it silently
    before = repo.state()
    result = repo.ps("import", "quilt", str(qp), code=1)
    assert "fuzzy.patch conflicts with the base plus the patches before it" in result.stderr
    assert "file f.txt" in result.stderr
    assert "x 14 drift" in result.stderr  # the conflict report shows the drifted line
    assert repo.state() == before


# -- commits and mbox ---------------------------------------------------------------------------


MESSAGES = [
    (
        "Jörg Müller",
        "jm@example.org",
        "Teach a.py to count\n\nFirst paragraph\nof two lines.\n\n"
        "Second paragraph.\n\nSigned-off-by: Jörg Müller <jm@example.org>\n",
    ),
    ("Zoë Ł. 山田", "zy@example.org", "Make b.py faster\n\nWhy: it was slow.\n"),
    ("Ann", "ann@example.org", "Log more\n\nDetails.\n\nPatchstack-Tag: diagnostic\n"),
]


def commits_repo(tmp_path: Path) -> tuple[Repo, str, str]:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(30, "a"), "b.py": numbered(30, "b")})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "work")
    edits = [("a.py", "a 3\n"), ("b.py", "b 7\n"), ("a.py", "a 20\n")]
    for k, ((name, mail, message), (path, line)) in enumerate(
        zip(MESSAGES, edits, strict=True), start=1
    ):
        repo.write(path, sub(repo.read(path), line, line.rstrip() + f" edit {k}\n"))
        repo.git("add", "-A")
        repo.git(
            "-c",
            f"user.name={name}",
            "-c",
            f"user.email={mail}",
            "commit",
            "-q",
            f"--author={name} <{mail}>",
            "-F",
            "-",
            input=message,
        )
    return repo, base, repo.head()


def bodies(repo: Repo, rng: str) -> list[tuple[str, str]]:
    out = repo.git("log", "--reverse", "--format=%an <%ae>%x00%B%x01", rng)
    return [tuple(rec.strip("\n").split("\0")) for rec in out.split("\x01") if rec.strip()]


def test_import_commits_keeps_unicode_authors_messages_and_trailer_tags(tmp_path: Path) -> None:
    repo, base, top = commits_repo(tmp_path)
    before = repo.state()
    result = repo.ps("import", "commits", f"{base}..work", code=2)
    assert "2 patch(es) without a tag: Teach-a.py-to-count.patch, Make-b.py-faster.patch" in (
        result.stderr
    )
    assert repo.state() == before
    repo.ps("import", "commits", "main..work", "--tag", "essential")
    assert repo.head() == top and repo.git("status", "--porcelain") == "?? patches/\n"
    series = repo.read("patches/series")
    assert f"# base: {base}\n" in series
    assert series.endswith(
        "Teach-a.py-to-count.patch # essential\nMake-b.py-faster.patch # essential\n"
        "Log-more.patch # diagnostic\n"
    )
    text = repo.read("patches/Make-b.py-faster.patch")
    assert "From: =?UTF-8?q?Zo=C3=AB=20=C5=81=2E=20=E5=B1=B1=E7=94=B0?= <zy@example.org>" in text
    assert "Patchstack-" not in repo.read("patches/Log-more.patch")
    # Applied on the base, the series gives the branch's tree, with the same messages.
    repo.git("checkout", "-q", "main")
    repo.ps("push", "--all")
    assert repo.tree() == repo.tree(top)
    got = bodies(repo, f"{base}..HEAD")
    for (name, mail, message), (author, body) in zip(MESSAGES, got, strict=True):
        assert author == f"{name} <{mail}>"
        own, _tag, _name = split_own_trailers(message)
        assert body.startswith(own.rstrip("\n") + "\n\nPatchstack-Patch: ") or body.startswith(
            own.rstrip("\n") + "\nPatchstack-Patch: "
        )


def test_mbox_round_trip_preserves_trees_names_and_tags(tmp_path: Path) -> None:
    repo, base, top = commits_repo(tmp_path)
    mbox = tmp_path / "in.mbox"
    mbox.write_bytes(
        subprocess.run(
            ["git", "format-patch", "--stdout", f"{base}..{top}"],
            cwd=repo.path,
            check=True,
            capture_output=True,
        ).stdout
    )
    repo.git("checkout", "-q", "main")
    repo.ps("import", "mbox", str(mbox), "--tag", "optimization")
    assert repo.read("patches/series").endswith(
        "Teach-a.py-to-count.patch # optimization\nMake-b.py-faster.patch # optimization\n"
        "Log-more.patch # diagnostic\n"
    )
    repo.ps("push", "--all")
    assert repo.tree() == repo.tree(top)
    assert [a for a, _b in bodies(repo, f"{base}..HEAD")] == [f"{n} <{m}>" for n, m, _ in MESSAGES]
    # Export, then git am: the same tree; importing the export gives back the same files.
    out = tmp_path / "out.mbox"
    repo.ps("export", "mbox", str(out))
    repo.git("checkout", "-q", "-b", "am", base)
    repo.git("am", "-q", str(out))
    assert repo.tree() == repo.tree(top)
    other = make_repo(tmp_path / "other", {"a.py": numbered(30, "a"), "b.py": numbered(30, "b")})
    other.ps("import", "mbox", str(out))  # names and tags ride in the trailers
    for name in os.listdir(repo.path / "patches"):
        assert (other.path / "patches" / name).read_bytes() == (
            repo.path / "patches" / name
        ).read_bytes(), name
    # Exporting again to an existing file is refused.
    result = repo.ps("export", "mbox", str(out), code=2)
    assert "already exists" in result.stderr


def test_append_builds_on_the_existing_series(tmp_path: Path) -> None:
    repo, base, top = commits_repo(tmp_path)
    repo.git("checkout", "-q", "main")
    repo.ps("import", "commits", f"{base}..{top}~1", "--tag", "essential")
    repo.ps("import", "commits", f"{top}~1..{top}", "--append")
    assert repo.read("patches/series").endswith("Log-more.patch # diagnostic\n")
    repo.ps("push", "--all")
    assert repo.tree() == repo.tree(top)
    before = repo.state()
    result = repo.ps("import", "commits", f"{top}~1..{top}", "--append", code=2)
    assert "nothing to import: every patch changes nothing on top of the series" in (result.stderr)
    assert repo.state() == before


def test_names_are_numbered_on_append_and_never_differ_only_by_case(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(30, "a")})
    base = repo.head()
    for k, subject in enumerate(["Clean up", "clean up", "CLEAN UP"], start=1):
        repo.write("a.py", sub(repo.read("a.py"), f"a {k * 3}\n", f"a {k * 3} x\n"))
        repo.git("commit", "-qam", subject)
    repo.ps("import", "commits", f"{base}..HEAD~1", "--tag", "essential")
    assert repo.read("patches/series").endswith(
        "Clean-up.patch # essential\nclean-up-2.patch # essential\n"
    )
    repo.write("a.py", sub(repo.read("a.py"), "a 20\n", "a 20 y\n"))
    repo.git("commit", "-qam", "Clean up")
    out = repo.ps("import", "commits", "HEAD~2..HEAD", "--append", "-t", "diagnostic").stdout
    assert "CLEAN-UP-3.patch [diagnostic]" in out and "Clean-up-4.patch [diagnostic]" in out
    listed = [ln.split()[0] for ln in repo.read("patches/series").splitlines() if ln[:1] != "#"]
    assert len({n.casefold() for n in listed}) == len(listed) == 4
    assert sorted(os.listdir(repo.path / "patches")) == sorted([*listed, "series"])
    # A patch of its own gets no name that differs from one in the series only by case.
    repo.write("a.py", repo.read("a.py") + "more\n")
    result = repo.ps("new", "clean-UP", "--tag", "essential", code=2)
    assert "differs from 'Clean-up.patch' of the series only by case" in result.stderr
    # HEAD is the imported commits: the advised 'push --all' makes them patch commits.
    repo.git("checkout", "-q", "a.py")
    tree = repo.tree()
    status = repo.ps("status").stdout
    assert "upstream moved" not in status
    assert "HEAD carries the series as 4 plain commit(s)" in status
    assert "next: 'patchstack push --all' makes HEAD's 4 plain commit(s)" in status
    out = repo.ps("push", "--all").stdout
    assert "in place of the 4 plain commit(s)" in out
    assert repo.tree() == tree and repo.git("rev-list", "--count", f"{base}..HEAD") == "4\n"
    assert repo.ps("status").stdout.endswith(
        "next: nothing to do: the stack agrees with the series\n"
    )
    # Commits made on top of the applied patches, imported as status advises, too.
    for k in (25, 28):
        repo.write("a.py", sub(repo.read("a.py"), f"a {k}\n", f"a {k} z\n"))
        repo.git("commit", "-qam", "Clean up")
    assert "'patchstack import commits'" in repo.ps("status", code=1).stdout
    out = repo.ps("import", "commits", "HEAD~2..HEAD", "--append", "-t", "diagnostic").stdout
    assert "next: HEAD already carries them as 2 plain commit(s)" in out
    tree = repo.tree()
    assert "'patchstack push --all' makes HEAD's 2 plain" in repo.ps("status", code=1).stdout
    repo.ps("push", "--all")
    assert repo.tree() == tree and len(names(repo)) == 6
    assert repo.ps("status").stdout.endswith("nothing to do: the stack agrees with the series\n")


def test_format_patches_in_one_process_equals_format_patch_per_commit(tmp_path: Path) -> None:
    from patchstack.git import find_repo

    repo, base, top = commits_repo(tmp_path)
    git = find_repo(str(repo.path))
    try:
        mails = git.format_patches(base, top)
        singles = [git.format_patch(c) for c in git.rev_list("--reverse", f"{base}..{top}")]
    finally:
        git.close()
    assert len(mails) == 3 and mails == singles


def test_format_commits_gives_each_commit_as_format_patch_does(tmp_path: Path) -> None:
    """The mails of commits picked out of a chain, in the order asked (refresh rewrites only
    the patch files that changed): what format-patch gives for each alone."""
    from patchstack.git import find_repo

    repo, base, top = commits_repo(tmp_path)
    git = find_repo(str(repo.path))
    try:
        chain = git.rev_list("--reverse", f"{base}..{top}")
        picked = [chain[2], chain[0]]
        assert git.format_commits(picked) == [git.format_patch(c) for c in picked]
        assert git.format_commits([chain[1]]) == [git.format_patch(chain[1])]
    finally:
        git.close()


def test_importing_the_series_directory_into_itself_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fork", {"a.py": numbered(10, "a")})
    repo.write("patches/series", "fix.patch\n")
    new = sub(numbered(10, "a"), "a 3\n", "a 3 fixed\n")
    repo.write("patches/fix.patch", udiff(numbered(10, "a"), new, "a/a.py", "b/a.py"))
    before = repo.state()
    result = repo.ps("import", "quilt", "patches", "--tag", "essential", code=2)
    assert "patches is the series directory itself" in result.stderr
    assert "mv patches quilt-patches" in result.stderr
    assert repo.state() == before
    shutil.move(repo.path / "patches", tmp_path / "quilt-patches")
    repo.ps("import", "quilt", str(tmp_path / "quilt-patches"), "--tag", "essential")
    repo.ps("push", "--all")
    assert repo.read("a.py") == new
