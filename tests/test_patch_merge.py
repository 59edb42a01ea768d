"""The merge of one patch file (`model.patchmerge`): its description and its diff merge on
their own; a clash is left as markers every command refuses."""

from __future__ import annotations

import pytest

from patchstack.errors import PatchstackError
from patchstack.git.textmerge import merge_text
from patchstack.model.patchfile import parse_patch
from patchstack.model.patchmerge import merge_patch

HEAD = "From: A U Thor <a@example.org>\nDate: Thu, 1 Jan 2026 00:00:00 +0000\nSubject: {s}\n\n{d}\n"
DIFF = """---
 a.py | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/a.py b/a.py
--- a/a.py
+++ b/a.py
@@ -4,3 +4,3 @@
 a 4
-a 5
+a 5 {new}
 a 6
"""


def patch(subject: str = "One", description: str = "Why.", new: str = "ours") -> bytes:
    return (HEAD.format(s=subject, d=description) + DIFF.format(new=new)).encode()


def test_a_description_here_and_a_diff_there_merge() -> None:
    base = patch()
    got = merge_patch(base, patch(description="Why, reworded."), patch(new="faster"), merge_text)
    assert got.clean
    assert got.data == patch(description="Why, reworded.", new="faster")
    assert parse_patch(got.data, "one.patch").description.startswith("Why, reworded.")


def test_descriptions_changed_apart_merge_as_text() -> None:
    base = patch(description="First.\n\nSecond.\n\nThird.")
    ours = patch(description="First, ours.\n\nSecond.\n\nThird.")
    theirs = patch(description="First.\n\nSecond.\n\nThird, theirs.")
    got = merge_patch(base, ours, theirs, merge_text)
    assert got.clean
    assert got.data == patch(description="First, ours.\n\nSecond.\n\nThird, theirs.")


def test_the_same_diff_line_changed_differently_is_a_conflict_commands_refuse() -> None:
    got = merge_patch(patch(), patch(new="fast"), patch(new="slow"), merge_text)
    assert not got.clean
    assert got.conflicts == ("the diff was changed on both sides",)
    with pytest.raises(PatchstackError, match="unresolved merge conflict in one.patch:"):
        parse_patch(got.data, "one.patch")


def test_one_side_only_gives_that_side_byte_for_byte() -> None:
    base, ours = patch(), patch(subject="One, renamed")
    assert merge_patch(base, ours, base, merge_text).data == ours
    assert merge_patch(base, base, ours, merge_text).data == ours
    assert merge_patch(base, ours, ours, merge_text).data == ours
