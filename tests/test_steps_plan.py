"""``refresh --steps``' plan: a pure function from upstream's first-parent commits (and the
culprit counts, or the tags) to the commits the steps end at."""

from __future__ import annotations

import pytest

from patchstack.errors import PatchstackError
from patchstack.model.steps import StepEnd, at_culprits, at_tags, every, parse_mode, plan

C = [f"c{i:02d}" for i in range(1, 21)]  # upstream's commits, oldest first; c20 the target


def ends(found: tuple[StepEnd, ...]) -> list[str]:
    return [e.commit for e in found]


def test_no_conflict_is_one_step_the_one_shot() -> None:
    assert at_culprits(C, {}) == (StepEnd("c20", "target"),)
    assert at_culprits(C, {"elsewhere": 4}) == (StepEnd("c20", "target"),)


def test_each_step_ends_just_after_a_top_culprit_in_upstream_order() -> None:
    counts = {"c12": 31, "c03": 12, "c07": 10, "c15": 1, "c16": 1}
    found = at_culprits(C, counts)
    # 31 + 12 + 10 = 53 of 55 hunks (>= 80 %) after three culprits: the two singles fall into
    # the last step, with the target.
    assert ends(found) == ["c03", "c07", "c12", "c20"]
    assert [e.why for e in found] == ["culprit", "culprit", "culprit", "target"]
    assert [e.conflicts for e in found] == [12, 10, 31, 0]


def test_culprit_steps_are_a_few_at_most() -> None:
    counts = {c: 1 for c in C}
    found = at_culprits(C, counts, most=4)
    assert len(found) == 4 and found[-1].commit == "c20"
    assert ends(found) == ["c01", "c02", "c03", "c20"]  # ties: the earlier commit first


def test_a_culprit_that_is_the_target_is_the_last_step() -> None:
    found = at_culprits(C, {"c20": 5, "c10": 5})
    assert ends(found) == ["c10", "c20"]
    assert found[-1].conflicts == 5


def test_tags_end_steps_and_the_target_ends_the_last() -> None:
    tags = {"c05": ["v1.1"], "c10": ["v1.2", "v1.2-final"], "c20": ["v2"], "other": ["x"]}
    found = at_tags(C, tags)
    assert ends(found) == ["c05", "c10", "c20"]
    assert found[1].why == "tag v1.2, v1.2-final"
    assert at_tags(C, {}) == (StepEnd("c20", "target"),)


def test_every_n_commits() -> None:
    assert ends(every(C, 7)) == ["c07", "c14", "c20"]
    assert ends(every(C, 5)) == ["c05", "c10", "c15", "c20"]
    assert ends(every(C, 50)) == ["c20"]
    assert every([], 3) == ()


def test_plan_dispatches_on_the_mode() -> None:
    assert ends(plan(10, C)) == ["c10", "c20"]
    assert ends(plan("tags", C, tags={"c02": ["t"]})) == ["c02", "c20"]
    assert ends(plan("culprits", C, counts={"c04": 2})) == ["c04", "c20"]


@pytest.mark.parametrize("text", ["culprits", "TAGS", " 12 "])
def test_mode_words(text: str) -> None:
    assert parse_mode(text) in ("culprits", "tags", 12)


@pytest.mark.parametrize("text", ["0", "-3", "cluprits", ""])
def test_a_bad_mode_is_refused_with_the_choices(text: str) -> None:
    with pytest.raises(PatchstackError, match="not 'culprits', 'tags' or a number"):
        parse_mode(text)
