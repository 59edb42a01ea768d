"""The shortcuts of issue 35's speed round, each against the plain algorithm it replaces.

- `relocation.locate` finds a block from its rarest line (`_anchored`) instead of its first:
  the same places, in the same order, as `occurrences` tried at every line.
"""

from __future__ import annotations

import random

import pytest

from patchstack.model.relocation import line_index, locate, occurrences


@pytest.mark.parametrize("seed", range(40))
def test_locate_from_the_rarest_line_finds_what_every_start_finds(seed: int) -> None:
    rng = random.Random(seed)
    words = ["", "}", "x = 1", "return y", "def f():", "    pass"][: rng.randint(2, 6)]
    files = {
        f"f{k}.py": [rng.choice(words) for _ in range(rng.randint(0, 60))]
        for k in range(rng.randint(1, 5))
    }
    index = {p: line_index(lines) for p, lines in files.items()}
    for _ in range(30):
        path = rng.choice(sorted(files))
        lines = files[path]
        if lines and rng.random() < 0.7:
            i = rng.randrange(len(lines))
            block = lines[i : i + rng.randint(1, 6)]
        else:
            block = [rng.choice(words) for _ in range(rng.randint(1, 4))]
        plain = [(p, i) for p, ls in files.items() for i in occurrences(block, ls)]
        found = locate(block, files, index)
        assert found == locate(block, files), (block, found)
        if len(plain) == 1 and found == plain[0]:
            continue
        if isinstance(found, tuple):
            assert plain == [found]
        else:
            assert len(plain) != 1 or not any(c.isalnum() for ln in block for c in ln)
