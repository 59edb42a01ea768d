"""A patch's message and its place in the patch file (pure)."""

from __future__ import annotations

from patchstack.model import message
from patchstack.model.patchfile import Patch, parse_patch

MAIL = (
    b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    b"From: A <a@example.org>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
    b"Subject: [PATCH] New subject\n\nNew body.\n---\n x | 0\n 1 file changed\n\n"
    b"diff --git a/x b/x\nnew file mode 100644\nindex 0000000..e69de29\n"
)
OLD = (
    b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    b"From: B <b@example.org>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\n"
    b"Subject: [PATCH] Old subject\n\nA body line\n---\nnot a separator\n---\n"
    b" a.py | 2 +-\n\n"
    b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n"
)


def _diffs(patch: Patch) -> list[tuple[str, list[tuple[str, ...]]]]:
    return [(f.path, [h.lines for h in f.hunks]) for f in patch.files]


def test_splice_keeps_the_diff_part_byte_for_byte() -> None:
    head = message.mail_part(MAIL)
    assert head.endswith(b"New body.\n")
    patch = parse_patch(OLD, "old.patch")
    new = message.splice(head, OLD, message.line_offset(OLD, patch.diff_lineno))
    assert new == head + OLD[OLD.rindex(b"\n---\n a.py") + 1 :]
    fresh = parse_patch(new, "new.patch")
    assert fresh.subject == "New subject" and fresh.description == "New body."
    assert _diffs(fresh) == _diffs(patch)


def test_splice_in_front_of_a_plain_diff() -> None:
    plain = b"--- a/a.py\n+++ b/a.py\n@@ -1,2 +1 @@\n-a\n---\n+b\n"  # a removed "--" line
    patch = parse_patch(plain, "plain.patch")
    new = message.splice(message.mail_part(MAIL), plain, 0)
    assert new.endswith(b"New body.\n---\n" + plain)
    assert _diffs(parse_patch(new, "p")) == _diffs(patch)


def test_cleanup_follows_git() -> None:
    assert message.cleanup("# c\n\nSubject  \n\n\n\nBody\n# more\n\n") == "Subject\n\nBody\n"
    assert message.cleanup("# only a comment\n\n") == ""


def test_split_join_and_combined_messages() -> None:
    assert message.split("  Sub  ject \n\nBody\n\nMore\n") == ("Sub ject", "Body\n\nMore")
    assert message.join("S", "") == "S\n" and message.join("S", "B\n") == "S\n\nB\n"
    target = "Target\n\nWhy target.\n"
    assert message.combined(target, "Other\n\nWhy other.\n") == (
        "Target\n\nWhy target.\n\nOther\n\nWhy other.\n"
    )
    assert message.combined(target, "Target\n\nWhy  target.\n") == target


def test_author_form() -> None:
    assert message.author_problem("Ada Lovelace <ada@example.org>") is None
    assert message.author_problem("ada@example.org")
    assert message.author_problem("<a@b>")
