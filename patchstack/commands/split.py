"""``split NAME --as NEW --tag T (PATH... | --interactive)``: move files, or hunks chosen in
git's hunk selector, of NAME into a new patch placed right after it.

With PATHs, NAME keeps its other files and NEW gets those. With ``--interactive`` git's own
selector (``git reset -p``, on a temporary index holding NAME's old side) offers NAME's hunks
(in those PATHs only, when given): each one answered "y" moves to NEW, the others stay in NAME.
NAME's new tree is NAME's change without the chosen hunks (a three-way merge that cannot fail
for hunks git split apart); NEW takes it to NAME's old result, so the tree at the top of the
stack does not change, and ``fold NEW --into NAME`` gives NAME's file back byte for byte. NEW
gets NAME's applied state, author, date and (unless ``-m``) message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..checkout import Checkout
from ..engine.chain import Engine
from ..engine.merging import merge
from ..errors import PatchstackError, RefusedError
from ..git import Git
from ..model import message
from ..model.ids import Oid
from ..model.selection import resolve_name
from ..model.series import Entry, Series, parse_tags
from .naming import covers, new_patch_name, relative_to_top, require_free
from .reorder import Change, Part, parts_in_order, publish_reorder
from .reword import mail_of
from .state import read_stack


@dataclass(frozen=True)
class SplitResult:
    name: str
    new: str
    tag: str
    labels: tuple[str, ...]
    moved: tuple[str, ...]  # the files NEW changes
    applied: bool
    head: Oid
    selector_output: str = ""  # what git's selector printed, when it read scripted answers


def split(
    ws: Checkout,
    name_text: str,
    new_text: str,
    tag_text: str,
    paths: Sequence[str],
    interactive: bool = False,
    text: str | None = None,
    answers: bytes | None = None,
    discard: bool = False,
) -> SplitResult:
    git = ws.git
    if not paths and not interactive:
        raise PatchstackError("name the files that move (PATH...), or give --interactive")
    tag, labels = parse_tags(tag_text, "--tag", 0)
    series = ws.load_series()
    stack = read_stack(git)
    name = resolve_name(series, name_text)
    new = new_patch_name(new_text)
    require_free(ws, series, new)
    _data, patch = ws.read_patch(series.entry(name))
    wanted = [relative_to_top(ws, p) for p in paths]
    unknown = [w for w in wanted if not any(covers(p, w) for p in patch.paths)]
    if unknown:
        raise PatchstackError(
            f"'{name}' does not change {unknown[0]}", "its files: " + ", ".join(patch.paths)
        )
    chosen = [p for p in patch.paths if any(covers(p, w) for w in wanted)]
    applied = stack.find(name) is not None
    made: dict[str, Oid | str] = {}

    def plan(_engine: Engine, changes: Sequence[Change]) -> tuple[Series, list[Part]]:
        before, after = changes[series.index(name)]
        out = ""
        if interactive:
            middle, out = _by_hunks(git, name, before, after, chosen, answers)
        else:
            middle = _by_files(git, before, after, chosen)
        if middle == before:
            raise PatchstackError(f"nothing would be left in '{name}'", _whole(name, new))
        if middle == after:
            raise PatchstackError(f"nothing was chosen to move to '{new}'", "nothing was changed")
        fallback = name.removesuffix(".patch")
        who, when = patch.author, patch.date
        if not who or not when:
            ident, now = git.ident()
            who, when = who or ident, when or now
        own = message.join(*message.split(text)) if text else patch.message(fallback)
        mail = mail_of(git, own, who, when)
        new_series = series.insert(Entry(new, tag, labels), after=name)
        halves = [
            Part(new_series.entry(name), ((before, middle),), (name,), applied),
            Part(new_series.entry(new), ((middle, after),), (name,), applied, mail),
        ]
        made.update(middle=middle, after=after, out=out)
        return new_series, parts_in_order(
            series, new_series, changes, stack, {name: halves, new: []}
        )

    done = publish_reorder(ws, "split", series, stack, plan, discard=discard)
    middle, after, out = Oid(made["middle"]), Oid(made["after"]), str(made["out"])
    moved = tuple(git.changed_paths(middle, after))
    return SplitResult(name, new, tag, labels, moved, applied, done.head, out)


def _whole(name: str, new: str) -> str:
    return f"to give every change of '{name}' another name: patchstack rename {name} {new}"


def _by_files(git: Git, before: Oid, after: Oid, chosen: Sequence[str]) -> Oid:
    """``after`` with the chosen paths as they are in ``before``."""
    with git.temp_index() as idx:
        idx.read_tree(after)
        git.set_index_entries(before, list(chosen), env=idx.env)
        return idx.write_tree()


def _by_hunks(
    git: Git,
    name: str,
    before: Oid,
    after: Oid,
    paths: Sequence[str],
    answers: bytes | None,
) -> tuple[Oid, str]:
    """NAME's tree without the hunks chosen in git's selector, and what the selector printed."""
    with git.temp_index() as idx:
        idx.read_tree(before)
        out = git.select_hunks(idx, ["reset", "-p", after], paths, answers)
        picked = idx.write_tree()
    if picked == before:
        return after, out
    result = merge(git, picked, after, before, ("kept", "moved"))
    if not result.clean:
        raise RefusedError(
            f"the chosen hunks of '{name}' cannot be taken apart from the others"
            f" in {', '.join(result.conflicted)}",
            "choose whole hunks (split them with 's' rather than editing them); nothing changed",
        )
    return result.tree, out
