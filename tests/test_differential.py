"""Every shortcut gives what merge-ort gives: the differential generator (`differential`)
against ``git rebase``, one patch at a time, conflicts skipped.

The fixed seeds run with the suite (each found a divergence once: a folder renamed upstream,
a patch upstream took, a file turned into a folder, a patch with an author git rewrites); the
soak run tries random ones (``PATCHSTACK_DIFF_SOAK=500 python -m pytest -m soak -k
differential``). A failure prints the case; ``PATCHSTACK_DIFF_SEEDS=17,42`` runs those seeds.
"""

from __future__ import annotations

import os
import random

import pytest

from . import differential
from .conftest import slow_after

# 2111087, 2111104: a later patch that needs a left-out one (turns the file it adds into a
# folder; deletes the file in the folder it makes), held with it: git with it dropped, and
# `differential.held_oracle`.
FIXED = [9, 16, 17, 19, 20, 38, 46, 62, 66, 79, 9002239, 2111087, 2111104]


# The README's command runs seed 9; the others run under -m slow.
@pytest.mark.parametrize("seed", slow_after(differential.seeds_from_env(FIXED), 1))
def test_patchstack_agrees_with_git_rebase(seed: int, tmp_path) -> None:
    case = differential.make_case(seed)
    diffs = differential.compare(case, tmp_path)
    assert not diffs, case.describe() + "\n" + "\n".join(diffs)


@pytest.mark.soak
def test_a_random_campaign_finds_no_divergence(tmp_path) -> None:
    count = int(os.environ.get("PATCHSTACK_DIFF_SOAK", "40"))
    start = random.randrange(10_000, 10_000_000)
    failures = []
    for seed in range(start, start + count):
        case = differential.make_case(seed)
        where = tmp_path / str(seed)
        diffs = differential.compare(case, where)
        differential.clean(where)
        if diffs:
            failures.append(case.describe() + "\n" + "\n".join(diffs))
    assert not failures, f"seeds {start}..{start + count - 1}:\n" + "\n\n".join(failures)
