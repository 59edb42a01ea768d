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
    with pytest.raises(PatchstackError, match="unknown tag 'opt'"):
        parse_tag_list("opt", "--only")
    with pytest.raises(PatchstackError, match="no patch named"):
        push_target(SERIES, [], Selector(name="nope"))
