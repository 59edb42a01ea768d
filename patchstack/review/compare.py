"""Review a change to a series, patch by patch: pure classification on values.

`review` takes two `SeriesState` values (a series and its patches, read from a git revision or
a directory by `snapshot`) and returns a `Review`: one `PatchReview` per patch, in the order a
reviewer reads them, plus the move of the series base. Nothing here runs git or touches files.

Pairing. A patch is the same patch on both sides when it has the same name. A name only in the
old series and a name only in the new one are paired as ``renamed`` when their changes are
equal (see below); the rest are ``dropped`` and ``added``.

Order. Among the paired patches, the longest common subsequence of the old order and the new
order stays in place; every paired patch outside it is ``moved``. So moving one patch to
another place marks that one patch, not the neighbours it jumped over (exact, O(n*m)).

The change of a patch. A patch's *change* is what it does, independent of where it applies:
for every file (sorted by path), its old and new path, its creation, deletion or mode change,
and the sequence of *change blocks*, the maximal runs of ``-`` and ``+`` lines of its hunks
(with any ``\\ No newline at end of file`` marker that belongs to them). Context lines, hunk
line numbers, the way context splits a change into hunks, and ``index`` blob ids are not part
of the change; for a binary file, the new blob id is (it is the only record of the content).

- ``unchanged``: the diff text (everything from the first ``diff`` line) is byte for byte equal.
- ``rebased``: the change is equal but the diff text is not: only context, line numbers or
  blob ids moved, as after ``refresh`` onto a new base. Nothing to review.
- ``changed``: the change itself differs. The *interdiff* shows how, in the manner of
  ``git range-diff`` (see `interdiff`): ``++x`` is a line the patch now adds, ``-+x`` one it
  no longer adds, ``+-x`` one it now removes. git's range-diff itself needs both versions as
  commits on a common history; here each side may come from a directory, and the patches are
  paired by name already. A rebased patch gets the same interdiff of its context (what it
  now applies against) and the list of places its changes moved to (`interdiff.moves`).

Why compare text rather than build both changes as trees in git? That would need both bases
and every earlier patch to apply in the repository at hand; the text comparison needs neither,
is deterministic, and is exactly the definition of "only the context moved". Its limit: new
context can make git's diff align an unchanged edit otherwise; the patch then shows as
``changed``, with an interdiff that makes the realignment plain, never as ``rebased``.

``retagged`` (category tag or labels differ, old -> new) and the *description* (subject and
free text) are compared on their own; a description change comes with a diff of its text.
A change of the patch's mark in the series file (deferred, upstream, brought back, ...) and
the recorded resolutions are compared in `states`; ``reused``, from the operation log (`side`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ..model import fields
from ..model.patchfile import FileDiff, Patch, decode
from ..model.series import Entry, Series
from .graph import Graph, build, subgraph
from .interdiff import file_meta, file_title, interdiff, lcs, moves, text_diff
from .states import (
    STATES,
    Blob,
    Files,
    MarkView,
    ResolutionChange,
    compare_resolutions,
    resolved_patches,
    state_word,
    view,
)


@dataclass(frozen=True)
class SeriesState:
    """One side of a review: a series and the bytes and parse of each of its patches."""

    label: str  # what the user named: a revision or a directory
    series: Series
    patches: Mapping[str, tuple[bytes, Patch]]
    commit: str | None = None  # the revision's commit id, when it is one
    resolutions: Files = field(default_factory=dict)  # the files of its resolutions/


@dataclass(frozen=True)
class Version:
    """One version of a patch, as a reviewer sees it."""

    name: str
    tag: str
    labels: tuple[str, ...]
    position: int  # 1-based place in its series
    subject: str
    description: str
    author: str | None
    added: int
    removed: int
    files: tuple[tuple[str, int, int], ...]  # (path, lines added, lines removed)
    diff: tuple[str, ...]  # the diff text's lines, from the first file header on
    # The command ``check --probes`` runs, wherever the file stores it (`fields`).
    probe: str | None = None

    @property
    def tags(self) -> str:
        return ", ".join((self.tag, *self.labels))


@dataclass(frozen=True)
class PatchReview:
    old: Version | None
    new: Version | None
    change: str  # added, dropped, changed, rebased or unchanged
    moved: bool = False
    renamed: bool = False
    retagged: bool = False
    description_changed: bool = False
    interdiff: tuple[str, ...] = ()  # changed: the change; rebased: the context
    description_diff: tuple[str, ...] = ()
    moves: tuple[str, ...] = ()  # rebased: where the changes moved, one line a file
    state: str | None = None  # what the change of its mark did (`states.STATES`)
    old_mark: MarkView | None = None
    new_mark: MarkView | None = None
    reused: tuple[str, ...] = ()  # hunks records settled in the refresh that made `new`

    @property
    def probe_change(self) -> tuple[str | None, str | None] | None:
        """(old, new) probe when a reviewer must see it: set, changed or removed. A probe is
        code that ``check --probes`` runs, wherever the patch file keeps it."""
        old = self.old.probe if self.old else None
        new = self.new.probe if self.new else None
        if old == new or self.new is None:
            return None
        return old, new

    @property
    def probe_diff(self) -> tuple[str, ...]:
        """The probe change as diff lines: ``-old``, ``+new``."""
        if self.probe_change is None:
            return ()
        old, new = self.probe_change
        return tuple(mark + p for mark, p in (("-", old), ("+", new)) if p is not None)

    @property
    def current(self) -> Version:
        return self.new or self.old  # type: ignore[return-value]

    @property
    def name(self) -> str:
        return self.current.name

    @property
    def words(self) -> tuple[str, ...]:
        """The status words, in a fixed order; ``unchanged`` only when nothing else applies."""
        words = [w for w, on in (("renamed", self.renamed), ("moved", self.moved)) if on]
        if self.retagged:
            words.append("retagged")
        words += [w for w in (self.state, "resolution reused" if self.reused else None) if w]
        if self.change != "unchanged":
            words.append(self.change)
        if self.description_changed:
            words.append("description")
        if self.probe_change:
            words.append("probe")
        return tuple(words) or ("unchanged",)

    @property
    def worth_reading(self) -> bool:
        return (
            self.change in ("added", "changed")
            or self.description_changed
            or self.probe_change is not None
        )

    @property
    def quiet(self) -> bool:
        """Nothing to review but that the patch is there: only unchanged or rebased."""
        return self.words in (("unchanged",), ("rebased",))

    @property
    def has_section(self) -> bool:
        """Whether a review shows a section for the patch (rebased and dropped ones
        collapsed)."""
        shown = self.worth_reading or self.retagged or bool(self.reused)
        return shown or self.change in ("rebased", "dropped")

    @property
    def diff(self) -> tuple[str, ...]:
        """What to read: the interdiff of a changed patch, the diff of an added one, and of a
        dropped one the code the change takes away (its old diff)."""
        if self.change == "changed":
            return self.interdiff
        if self.change in ("added", "dropped"):
            return self.current.diff
        return ()


@dataclass(frozen=True)
class Hit:
    """An upstream commit of the base's move that changed these patches' files (no claim more)."""

    oid: str
    subject: str
    patches: tuple[str, ...]


@dataclass(frozen=True)
class BaseChange:
    old: str | None
    new: str | None
    old_ref: str | None = None
    new_ref: str | None = None
    ahead: int | None = None  # commits in new base and not in old (None: not known)
    behind: int | None = None  # commits in old base and not in new
    # The commits of old..new that changed a file of a patch of either side, oldest first
    # (only when the new base descends from the old one and both are in the repository).
    hits: tuple[Hit, ...] = ()

    @property
    def moved(self) -> bool:
        return self.old != self.new


@dataclass(frozen=True)
class Review:
    old_label: str
    new_label: str
    base: BaseChange
    patches: tuple[PatchReview, ...] = field(default=())
    # The changed and added patches, the ones they lean on and the ones leaning on them.
    graph: Graph = field(default=Graph())
    resolutions: tuple[ResolutionChange, ...] = ()  # the files of resolutions/ changed

    @property
    def marked(self) -> tuple[tuple[str, int], ...]:
        """How many patches of the new series carry each kind of mark (changed or not): what
        the series leaves behind, which a change that keeps the marks does not show."""
        kinds = [p.new_mark.kind for p in self.patches if p.new_mark]
        return tuple((k, kinds.count(k)) for k in dict.fromkeys(sorted(kinds)))

    @property
    def states(self) -> tuple[tuple[str, tuple[PatchReview, ...]], ...]:
        """(state word, the patches whose mark changed so), in the order of `STATES`."""
        found = ((w, tuple(p for p in self.patches if p.state == w)) for w in STATES)
        return tuple((w, ps) for w, ps in found if ps)

    def count(self, word: str) -> int:
        return sum(1 for p in self.patches if word in p.words)

    @property
    def summary(self) -> tuple[tuple[str, int], ...]:
        order: tuple[str, ...] = ("added", "dropped", "renamed", "moved", "retagged")
        order += STATES + ("changed", "rebased", "description", "probe", "unchanged")
        label = {"description": "description changed", "probe": "probe set or changed"}
        return tuple((label.get(w, w), n) for w in order if (n := self.count(w)))


# -- the change of a patch --------------------------------------------------------------------


def _blocks(f: FileDiff) -> tuple[tuple[str, ...], ...]:
    blocks: list[tuple[str, ...]] = []
    for hunk in f.hunks:
        run: list[str] = []
        for line in hunk.lines:
            kind = line[:1]
            if kind in ("-", "+") or (kind == "\\" and run):
                run.append(line)
            elif run:
                blocks.append(tuple(run))
                run = []
        if run:
            blocks.append(tuple(run))
    return tuple(blocks)


def change_key(patch: Patch) -> tuple[object, ...]:
    """The patch's change, without context, line numbers or blob ids (see the module doc)."""
    files = sorted(patch.files, key=lambda f: (f.path, f.old_path or ""))
    return tuple((file_title(f), file_meta(f), _blocks(f)) for f in files)


# -- versions ---------------------------------------------------------------------------------


def diff_text(data: bytes, patch: Patch) -> tuple[str, ...]:
    """The lines of a patch file from its first file header on."""
    lines = decode(data).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(ln.rstrip("\r") for ln in lines[patch.diff_lineno - 1 :])


def make_version(entry: Entry, position: int, data: bytes, patch: Patch) -> Version:
    return Version(
        name=entry.name,
        tag=entry.tag,
        labels=entry.labels,
        position=position,
        subject=patch.subject or entry.name,
        description=patch.description,
        author=patch.author,
        added=patch.added,
        removed=patch.removed,
        files=tuple((file_title(f), f.added, f.removed) for f in patch.files),
        diff=diff_text(data, patch),
        probe=fields.probe_of(fields.read(patch.description, patch.fields)),
    )


# -- order ------------------------------------------------------------------------------------


def _description(v: Version) -> list[str]:
    return [v.subject, "", *v.description.split("\n")] if v.description else [v.subject]


def _compare(
    old: Version, new: Version, old_p: Patch, new_p: Patch, moved: bool, renamed: bool
) -> PatchReview:
    moved_to: tuple[str, ...] = ()
    inter: tuple[str, ...] = ()
    if old.diff == new.diff:
        change = "unchanged"
    elif change_key(old_p) == change_key(new_p):
        change, inter, moved_to = "rebased", interdiff(old_p, new_p), moves(old_p, new_p)
    else:
        change, inter = "changed", interdiff(old_p, new_p)
    described = (old.subject, old.description) != (new.subject, new.description)
    return PatchReview(
        old,
        new,
        change,
        moved=moved,
        renamed=renamed,
        retagged=(old.tag, old.labels) != (new.tag, new.labels),
        description_changed=described,
        interdiff=inter,
        description_diff=text_diff(_description(old), _description(new)) if described else (),
        moves=moved_to,
    )


def review(
    old: SeriesState,
    new: SeriesState,
    base: BaseChange | None = None,
    blob: Blob | None = None,
    subject: Callable[[str], str] | None = None,
) -> Review:
    """Classify every patch of the change from ``old`` to ``new`` (see the module doc);
    ``blob`` and ``subject`` read objects of the repository at hand, when there is one."""
    old_v = {
        e.name: make_version(e, i, *old.patches[e.name])
        for i, e in enumerate(old.series.entries, 1)
    }
    new_v = {
        e.name: make_version(e, i, *new.patches[e.name])
        for i, e in enumerate(new.series.entries, 1)
    }
    keys: dict[tuple[str, str], tuple[object, ...]] = {}
    # Pairs: same name, then renames (equal change under a name that is only on one side).
    pairs: dict[str, str] = {n: n for n in new_v if n in old_v}  # new name -> old name
    gone = [n for n in old_v if n not in new_v]
    for name in new_v:
        if name in pairs:
            continue
        key = keys.setdefault(("new", name), change_key(new.patches[name][1]))
        for old_name in gone:
            if keys.setdefault(("old", old_name), change_key(old.patches[old_name][1])) == key:
                pairs[name] = old_name
                gone.remove(old_name)
                break
    kept = lcs(
        [n for n in old_v if n not in gone],
        [pairs[n] for n in new_v if n in pairs],
    )
    rows: list[PatchReview] = []
    for name, nv in new_v.items():
        if name not in pairs:
            rows.append(PatchReview(None, nv, "added"))
            continue
        old_name = pairs[name]
        rows.append(
            _compare(
                old_v[old_name],
                nv,
                old.patches[old_name][1],
                new.patches[name][1],
                moved=old_name not in kept,
                renamed=old_name != name,
            )
        )
    # A dropped patch is listed after the patch that preceded it in the old series.
    for old_name in gone:
        row = PatchReview(old_v[old_name], None, "dropped")
        at = 0
        for prev in reversed(list(old_v)[: old_v[old_name].position - 1]):
            found = [i for i, r in enumerate(rows) if r.old and r.old.name == prev]
            if found:
                at = found[0] + 1
                break
        while at < len(rows) and rows[at].change == "dropped":
            at += 1
        rows.insert(at, row)
    if base is None:
        base = BaseChange(
            old.series.base, new.series.base, old.series.base_ref, new.series.base_ref
        )
    reported = [r.name for r in rows if r.change in ("changed", "added")]
    graph = Graph()
    if reported:
        whole = build([(e, new.patches[e.name][1]) for e in new.series.entries])
        graph = subgraph(whole, reported)
    resolutions = compare_resolutions(old.resolutions, new.resolutions, blob)
    rows = _with_states(rows, old, new, resolved_patches(resolutions), subject)
    return Review(old.label, new.label, base, tuple(rows), graph, resolutions)


def _with_states(
    rows: list[PatchReview],
    old: SeriesState,
    new: SeriesState,
    resolved: set[str],
    subject: Callable[[str], str] | None,
) -> list[PatchReview]:
    """Each row with the change of its mark (`states`)."""
    out = []
    for row in rows:
        old_mark = view(old.series.mark_of(row.old.name), subject) if row.old else None
        new_mark = view(new.series.mark_of(row.new.name), subject) if row.new else None
        word = state_word(old_mark, new_mark, row.name in resolved) if row.old and row.new else None
        if old_mark or new_mark:
            row = replace(row, state=word, old_mark=old_mark, new_mark=new_mark)
        out.append(row)
    return out
