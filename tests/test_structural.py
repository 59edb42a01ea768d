"""Every shortcut gives the plain path's answer, and git's, on renames, folder renames, modes,
symlinks, binary files, deletions and file/folder swaps on both sides (`structural`).

The fixed seeds run with the suite (the first by default, the others under ``-m slow``); the
soak run tries random ones (``PATCHSTACK_STRUCT_SOAK=200 python -m pytest -m soak -k
structural``). ``PATCHSTACK_STRUCT_SEEDS=3,17`` runs those seeds; a failure prints the case.
"""

from __future__ import annotations

import os
import random

import pytest

from . import differential, structural
from .conftest import slow_after

FIXED = [1, 2, 3, 4, 5, 6, 7, 8]


def seeds() -> list[int]:
    text = os.environ.get("PATCHSTACK_STRUCT_SEEDS")
    return [int(s) for s in text.split(",")] if text else FIXED


@pytest.mark.parametrize("seed", slow_after(seeds(), 1))
def test_shortcuts_agree_with_the_plain_path_and_git(seed: int, tmp_path) -> None:
    case = structural.make_case(seed)
    diffs = structural.compare(case, tmp_path)
    assert not diffs, case.describe() + "\n" + "\n".join(diffs)


@pytest.mark.soak
def test_a_random_campaign_finds_no_divergence(tmp_path) -> None:
    count = int(os.environ.get("PATCHSTACK_STRUCT_SOAK", "40"))
    start = random.randrange(10_000, 10_000_000)
    failures = []
    for seed in range(start, start + count):
        case = structural.make_case(seed)
        where = tmp_path / str(seed)
        diffs = structural.compare(case, where)
        differential.clean(where)
        if diffs:
            failures.append(case.describe() + "\n" + "\n".join(diffs))
    assert not failures, f"seeds {start}..{start + count - 1}:\n" + "\n\n".join(failures)
