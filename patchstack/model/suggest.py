"""'Did you mean ...?': the close matches of a mistyped word among the words it could be."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The choices closest to ``word`` (a typo, a missing or doubled letter), best first;
    a choice that contains the word or is contained in it counts too."""
    pool = list(dict.fromkeys(choices))
    found = difflib.get_close_matches(word, pool, n=n, cutoff=0.6)
    if len(word) >= 3:
        found += [c for c in pool if (word in c or c in word) and c not in found]
    return found[:n]


def did_you_mean(word: str, choices: Iterable[str], quote: str = "'") -> str | None:
    """``did you mean 'essential'?`` (or None when nothing is close)."""
    found = close_matches(word, choices)
    if not found:
        return None
    return "did you mean " + " or ".join(f"{quote}{c}{quote}" for c in found) + "?"
