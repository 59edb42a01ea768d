"""What ``import branch`` makes of a branch's first-parent history, as values: the patches so
far (`Piece`), the upstream commits it carried them onto (`Taken`), and where it stands
(`Walk`), which a stopped import keeps in the journal (`Walk.to_json`). Pure: no git."""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, replace
from typing import Any

COMMIT = "commit"  # a commit of a linear segment
SIDE = "side"  # a merge of a side branch: one patch
FIXUP = "fixup"  # what an upstream merge changed beyond its conflicts


@dataclass(frozen=True)
class Piece:
    """One patch of the import, on the chain of trees `Walk.trees`."""

    name: str
    tag: str | None  # from a 'Patchstack-Tag:' trailer; None: --tag gives it
    message: str  # subject, blank line, description; no patchstack trailers
    author: str  # "Name <email>"
    date: str  # "<epoch> <tz>"
    origin: str  # "commit 1a2b3c4d5e6f", "merge 1a2b3c4d5e6f"
    kind: str  # COMMIT, SIDE or FIXUP


@dataclass(frozen=True)
class Taken:
    """A merge that brought upstream commits: the series was carried onto ``upstream``."""

    merge: str
    upstream: str
    side: bool  # a side branch's merge (its branch had merged those upstream commits)
    carried: int  # patches replayed onto it
    settled: int = 0  # conflicts the merge's own tree settled
    resolved: int = 0  # conflicts resolved by hand (the import stopped)
    dropped: tuple[str, ...] = ()  # patches upstream already held (git's pick is empty): left out
    made: str | None = None  # the fixup (or the side branch's patch) made right after it
    whole: tuple[str, ...] = ()  # patches that took the merge's version (--take-merge)
    emptied: tuple[str, ...] = ()  # patches a conflict's resolution kept nothing of: left out
    absorbed: tuple[str, ...] = ()  # patches the ones before them there already made: left out


@dataclass(frozen=True)
class Walk:
    """An ``import branch`` on its way: ``at`` first-parent commits of REV (oldest first)
    are done; the patches so far are ``pieces``, piece k the change ``trees[k] ->
    trees[k + 1]`` on ``base``, and ``trees[-1]`` is the tree of commit ``at - 1``."""

    rev: str
    rev_name: str
    ref: str
    ref_name: str
    tag: str | None  # --tag, as given
    append: bool
    base: str
    trees: tuple[str, ...]
    at: int = 0
    pieces: tuple[Piece, ...] = ()
    taken: tuple[Taken, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()  # (commit, why)
    names: tuple[str, ...] = ()  # the name keys handed out (the series' too)
    by_hand: tuple[str, ...] = ()  # patches of the merge being carried resolved by hand
    whole: tuple[str, ...] = ()  # and those that took the merge's version (--take-merge)
    take_merge: bool = False  # --take-merge: settle every conflict from the merge's tree

    def with_piece(self, piece: Piece, tree: str) -> Walk:
        return replace(self, pieces=(*self.pieces, piece), trees=(*self.trees, tree))

    def to_json(self) -> str:
        return json.dumps({"version": 1, **asdict(self)}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Walk:
        data: dict[str, Any] = json.loads(text)
        data.pop("version", None)
        data["pieces"] = tuple(Piece(**p) for p in data["pieces"])
        data["taken"] = tuple(
            Taken(
                **{
                    **t,
                    "dropped": tuple(t["dropped"]),
                    "whole": tuple(t["whole"]),
                    "emptied": tuple(t.get("emptied", ())),
                    "absorbed": tuple(t.get("absorbed", ())),
                }
            )
            for t in data["taken"]
        )
        data["skipped"] = tuple((a, b) for a, b in data["skipped"])
        for key in ("trees", "names", "by_hand", "whole"):
            data[key] = tuple(data[key])
        return Walk(**data)


def subject_of(message: str) -> str:
    """A message's subject: its first paragraph on one line."""
    return " ".join(message.split("\n\n", 1)[0].split()) or "merge"


def fixup_message(merge: str, upstream: str, merge_message: str) -> str:
    """The message of the patch that holds what merge ``merge`` of upstream ``upstream``
    changed beyond its conflicts."""
    body = (
        f"What merge {merge} changed beyond its conflicts: its tree differs from the"
        f" patches before it carried onto upstream {upstream} with the merge's own"
        " resolution by this change."
    )
    return f"fixup: {subject_of(merge_message)}\n\n" + textwrap.fill(body, 72) + "\n"
