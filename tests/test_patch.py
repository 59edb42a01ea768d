"""Reading patch files strictly: the forms we accept and the errors we name."""

from __future__ import annotations

import pytest

from patchstack.errors import InputError
from patchstack.model.patchfile import parse_patch

FORMAT_PATCH = b"""From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?= <jm@example.org>
Date: Mon, 5 Jan 2026 10:00:00 +0000
Subject: [PATCH] A long subject that git format-patch folded over two lines
 because it was long
MIME-Version: 1.0
Content-Type: text/plain; charset=UTF-8
Content-Transfer-Encoding: 8bit

Why it exists.

Second paragraph.
---
 a.py | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/a.py b/a.py
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- a/a.py
+++ b/a.py
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
-- \n2.39.5
"""


def test_format_patch_with_folded_and_encoded_headers() -> None:
    p = parse_patch(FORMAT_PATCH, "x.patch")
    assert p.author == "J\u00f6rg M\u00fcller <jm@example.org>"
    assert (
        p.subject
        == "A long subject that git format-patch folded over two lines because it was long"
    )
    assert p.date == "Mon, 5 Jan 2026 10:00:00 +0000"
    assert p.description == "Why it exists.\n\nSecond paragraph."
    (f,) = p.files
    assert (f.old_path, f.new_path, f.old_id, f.new_mode) == ("a.py", "a.py", "1" * 40, "100644")
    assert (f.added, f.removed) == (1, 1)


def test_plain_diff_without_header() -> None:
    data = b"--- a/x.c\t2020-01-01\n+++ b/x.c\t2020-01-02\n@@ -1 +1,2 @@\n a\n+b\n"
    p = parse_patch(data, "x.patch")
    assert p.subject is None and p.description == ""
    assert p.files[0].path == "x.c"


def test_quilt_patch_with_description_and_index_lines() -> None:
    data = (
        b"Fix the frobnicator.\n\nIt broke on Tuesdays.\n\nIndex: pkg/src/x.c\n"
        b"===================================================================\n"
        b"--- pkg.orig/src/x.c\n+++ pkg/src/x.c\n@@ -1 +1 @@\n-a\n+b\n"
    )
    p = parse_patch(data, "x.patch")
    assert p.description == "Fix the frobnicator.\n\nIt broke on Tuesdays."
    assert p.files[0].path == "src/x.c"
    assert parse_patch(data, "x.patch", strip=0).files[0].path == "pkg/src/x.c"


def test_dep3_header() -> None:
    data = (
        b"Description: Fix the build\n Longer text.\nAuthor: A <a@b>\nForwarded: no\n---\n"
        b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    )
    p = parse_patch(data, "x.patch")
    assert p.subject == "Fix the build"
    assert p.author == "A <a@b>"


def test_git_extended_headers() -> None:
    data = (
        b"diff --git a/old name b/new name\nsimilarity index 90%\nrename from old name\n"
        b"rename to new name\nindex 1234567..89abcde 100644\n--- a/old name\n"
        b"+++ b/new name\n@@ -1 +1 @@\n-a\n+b\n"
        b"diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n"
        b"diff --git a/img.png b/img.png\nnew file mode 100644\nindex 0000000..1234567\n"
        b"GIT binary patch\nliteral 5\nMcmYdHVn|K_00f)?ivR!s\n\nliteral 0\nHcmV?d00001\n\n"
    )
    p = parse_patch(data, "x.patch")
    assert [f.path for f in p.files] == ["new name", "s.sh", "img.png"]
    assert p.files[0].renamed and p.files[0].old_path == "old name"
    assert (p.files[1].old_mode, p.files[1].new_mode) == ("100644", "100755")
    assert p.files[2].binary and p.files[2].old_path is None


def test_crlf_content_and_non_utf8_survive() -> None:
    data = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-caf\xe9\r\n+cafe\r\n"
    p = parse_patch(data, "x.patch")
    assert p.files[0].hunks[0].removed == ("caf\udce9\r",)


def test_an_all_crlf_patch_is_refused_and_never_names_a_path_with_cr() -> None:
    data = b"--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-caf\xe9\r\n+cafe\r\n"
    with pytest.raises(InputError) as info:
        parse_patch(data, "x.patch")
    assert str(info.value) == "x.patch:1: line ends in CR LF (a CRLF patch file)"
    assert "'* -text'" in (info.value.hint or "")


BAD = [
    (b"", 1, "empty"),
    (b"From: a <b>\nSubject: x\n\njust words\n", 1, "no diff"),
    (b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n", 5, "truncated hunk"),
    (b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n+d\n", 7, "more lines than"),
    (b"--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n-b\n+c\n", 5, "do not match"),
    (b"--- a/x\n+++ b/x\n@@ garbage @@\n-a\n", 3, "malformed hunk header"),
    (b"--- a/x\n+++ b/x\n", 3, "without a hunk"),
    (
        b"diff --git a/x b/x\nindex 1..2 100644\nBinary files a/x and b/x differ\n",
        3,
        "binary change to 'x' without data",
    ),
    (
        b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
        b"From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\n",
        6,
        "second mail",
    ),
    (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5 @@\n*a\n", 7, "unexpected line"),
    (b"hello\n@@ -1 +1 @@\n-a\n+b\n", 1, "no diff"),
]


@pytest.mark.parametrize(("data", "lineno", "message"), BAD)
def test_bad_patches_name_file_and_line(data: bytes, lineno: int, message: str) -> None:
    with pytest.raises(InputError) as exc:
        parse_patch(data, "patches/x.patch")
    assert exc.value.message.startswith(f"patches/x.patch:{lineno}: "), exc.value.message
    assert message in exc.value.message


@pytest.mark.parametrize(
    ("old", "new", "lineno", "header"),
    [
        (b"Date: Mon, 5", b"Date: Mon,\x005", 3, "Date"),
        (b"From: =?UTF-8?q?J=C3=B6rg", b"From: J\x01rg =?UTF-8?q?J=C3=B6rg", 2, "From"),
        (b"From: =?UTF-8?q?J=C3=B6rg", b"From: =?UTF-8?q?J=00=0Arg", 2, "From"),
    ],
)
def test_a_control_character_in_the_identity_is_named(old, new, lineno, header) -> None:
    """Found by the fuzz soak: a NUL in From: or Date: reached git's environment (a traceback)."""
    with pytest.raises(InputError) as exc:
        parse_patch(FORMAT_PATCH.replace(old, new), "patches/x.patch")
    assert exc.value.line == lineno
    assert f"the {header}: header holds a control character" in exc.value.message
