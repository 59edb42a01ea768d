"""`safe_text.visible` and `findings` are per-character rules; the fast path (a regular
expression picks the characters to judge) must give what judging every character gives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from patchstack import safe_text
from patchstack.safe_text import _bad, _shown

# Text as patchstack reads it: mostly ASCII, with controls, C1, bidi and format
# characters, separators, surrogate-escaped bytes and ordinary non-ASCII letters.
SPECIAL = "\x00\x07\x1b\r\x7f\x85\x9b\u200b\u200d\u202e\u2066\u2028\u2029\ufeff\udc80\udcff"
texts = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.sampled_from("\t\n" + SPECIAL + "éß中🙂"),
        st.characters(),
    ),
    max_size=200,
)


def per_character(text: str) -> str:
    return "".join(_shown(ch) if _bad(ch) else ch for ch in text)


@given(texts)
def test_visible_is_the_per_character_rule(text: str) -> None:
    assert safe_text.visible(text) == per_character(text)


@given(texts)
def test_findings_are_the_replaced_characters_in_first_seen_order(text: str) -> None:
    expected = tuple(dict.fromkeys(_shown(ch)[1:-1] for ch in text if _bad(ch)))
    assert safe_text.findings(text) == expected


def test_plain_text_with_newlines_and_tabs_is_returned_as_it_is() -> None:
    text = "a line\n\tindented line\n" * 1000
    assert safe_text.visible(text) is text
