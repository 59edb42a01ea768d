"""Property test: on well-formed diffs, the strict reader agrees with unidiff (the oracle)."""

from __future__ import annotations

import difflib

import unidiff
from hypothesis import given, settings
from hypothesis import strategies as st

from patchstack.model.patchfile import parse_patch

line = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=12)
text = st.lists(line, min_size=0, max_size=25)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(text, text), min_size=1, max_size=3), st.integers(0, 3))
def test_reader_agrees_with_unidiff(files, context) -> None:
    chunks = []
    for i, (old, new) in enumerate(files):
        if old == new:
            new = [*new, "changed"]
        diff = difflib.unified_diff(
            [ln + "\n" for ln in old],
            [ln + "\n" for ln in new],
            f"a/dir/f{i}.py",
            f"b/dir/f{i}.py",
            n=context,
        )
        chunks.append("".join(diff))
    data = "".join(chunks).encode()
    ours = parse_patch(data, "x.patch")
    theirs = unidiff.PatchSet(data.decode())
    assert [f.path for f in ours.files] == [f.path for f in theirs]
    for mine, other in zip(ours.files, theirs, strict=True):
        assert (mine.added, mine.removed) == (other.added, other.removed)
        assert [(h.old_start, h.old_len, h.new_start, h.new_len) for h in mine.hunks] == [
            (h.source_start, h.source_length, h.target_start, h.target_length) for h in other
        ]
