"""Selectors over the series order: push and pop targets."""

from __future__ import annotations

import pytest

from patchstack.errors import PatchstackError
from patchstack.model.selection import Selector, parse_tag_list, pop_target, push_target
from patchstack.model.series import parse_series

SERIES = parse_series(
    "e1.patch # essential\nd1.patch # diagnostic\ne2.patch # essential\n"
    "o1.patch # optimization\nd2.patch # diagnostic\n"
)


def test_push_next_all_name_and_tags() -> None:
    assert push_target(SERIES, [], Selector()) == ["e1.patch"]
    assert push_target(SERIES, ["e1.patch"], Selector()) == ["e1.patch", "d1.patch"]
    assert push_target(SERIES, [], Selector(all=True)) == list(SERIES.names)
    assert push_target(SERIES, [], Selector(name="e2")) == ["e1.patch", "d1.patch", "e2.patch"]
    assert push_target(SERIES, [], Selector(only=("essential",))) == ["e1.patch", "e2.patch"]
    assert push_target(SERIES, ["d1.patch"], Selector(only=("essential",))) == [
        "e1.patch",
        "d1.patch",
        "e2.patch",
    ]
    assert push_target(SERIES, [], Selector(except_=("diagnostic",))) == [
        "e1.patch",
        "e2.patch",
        "o1.patch",
    ]
    assert push_target(SERIES, [], Selector(name="o1", only=("essential",))) == [
        "e1.patch",
        "e2.patch",
    ]


def test_pop_top_all_name_and_tags() -> None:
    applied = list(SERIES.names)
    assert pop_target(SERIES, applied, Selector()) == applied[:-1]
    assert pop_target(SERIES, applied, Selector(all=True)) == []
    assert pop_target(SERIES, applied, Selector(name="e2.patch")) == ["e1.patch", "d1.patch"]
    assert pop_target(SERIES, applied, Selector(only=("diagnostic", "optimization"))) == [
        "e1.patch",
        "e2.patch",
    ]
    assert pop_target(SERIES, applied, Selector(name="e2", only=("diagnostic",))) == [
        "e1.patch",
        "d1.patch",
        "e2.patch",
        "o1.patch",
    ]
    with pytest.raises(PatchstackError, match="not applied"):
        pop_target(SERIES, ["e1.patch"], Selector(name="o1"))


def test_tags_are_exact() -> None:
    assert parse_tag_list("essential, diagnostic", "--only") == ("essential", "diagnostic")
    with pytest.raises(PatchstackError, match="unknown tag 'opt'") as info:
        push_target(SERIES, [], Selector(only=("opt",)))
    assert info.value.hint and "did you mean 'optimization'?" in info.value.hint
    with pytest.raises(PatchstackError, match="no patch named"):
        push_target(SERIES, [], Selector(name="nope"))


LABELLED = parse_series(
    "e1.patch # essential\no1.patch # optimization, moe\no2.patch # optimization, nvidia\n"
    "d1.patch # diagnostic, moe\n"
)


def test_labels_select_like_tags_exactly() -> None:
    assert push_target(LABELLED, [], Selector(only=("moe",))) == ["o1.patch", "d1.patch"]
    assert push_target(LABELLED, [], Selector(only=("essential", "nvidia"))) == [
        "e1.patch",
        "o2.patch",
    ]
    applied = list(LABELLED.names)
    assert pop_target(LABELLED, applied, Selector(only=("moe",))) == ["e1.patch", "o2.patch"]
    assert pop_target(LABELLED, applied, Selector(except_=("moe",))) == ["o1.patch", "d1.patch"]
    with pytest.raises(PatchstackError, match="unknown tag 'mo' in --only") as info:
        push_target(LABELLED, [], Selector(only=("mo",)))
    assert info.value.hint and info.value.hint.startswith("did you mean 'moe'?")
    with pytest.raises(PatchstackError, match="unknown tag 'nvidia' in --except"):
        push_target(SERIES, [], Selector(except_=("nvidia",)))  # no patch has the label


def test_unknown_names_suggest_close_ones() -> None:
    with pytest.raises(PatchstackError, match="no patch named 'o1x'") as info:
        push_target(LABELLED, [], Selector(name="o1x"))
    assert info.value.hint and "'o1'" in info.value.hint
