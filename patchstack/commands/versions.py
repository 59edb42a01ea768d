"""The versions of the series bisect builds from, and which one to build at an upstream commit.

A refresh rewrites the patch files for a new base; at an upstream commit before that base a
refreshed patch may no longer apply (it now expects upstream's later lines), while its version
from before the refresh does. The series' history keeps every version: the operation log holds
the series directory before and after each command (`journal.oplog`), and a series directory
kept in git has its commits (``git log`` of the folder, in the repository that holds it).
`collect` gathers them, the series now first, one `Version` for each different content whose
``# base:`` is a commit of the repository.

`Versions.plans` is the one answer to "which version of each patch at this commit": a version
is ranked by where its base is, the nearest base the commit contains first (that version was
made against every upstream change up to its base, and only the commits since are merged, as a
refresh would merge them), then the nearest base that contains the commit, newer before older;
each patch comes from the first-ranked version that has it. When that plan conflicts, a second
one led by the best version of the other side is tried (a conflict resolved by a refresh onto a
later base applies at a commit that already has the upstream change it resolved).
`Versions.build_at` builds them through the engine path ``push --onto`` uses
(`worktree.build_stack`), one engine per version, consecutive patches of one version at once;
recorded resolutions, which that path applies, need no hook of their own here. A version that
cannot be built where it was made (a patch file that no longer parses, or does not apply on its
own base) is set aside and the plan made again without it; so is the series now when a patch
file does not apply on its own base (its report is shown where no other version serves).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checkout import Checkout
from ..errors import ConflictError, PatchstackError
from ..git import Git, find_repo
from ..journal import oplog as journal
from ..model import paths
from ..model.conflict import Conflict
from ..model.ids import Oid
from ..model.patchfile import parse_patch
from ..model.series import Entry, Series, parse_series
from ..model.stack import AppliedPatch
from .worktree import build_stack

if TYPE_CHECKING:
    from ..engine.chain import Engine
    from ..engine.loaded import LoadedPatch

NOW = "the series now"


@dataclass(frozen=True)
class Version:
    label: str  # NOW, "the series before log #5 (refresh --continue)", "… of commit 1a2b3c4d5e"
    base: Oid
    series: Series
    blobs: tuple[tuple[str, str], ...]  # (patch, blob id) of every entry
    time: float  # when it was the series (the series now: +inf)
    reader: str = ""  # where its patch files are read: "log" or "git" (the series now: "")

    @property
    def current(self) -> bool:
        return self.label == NOW

    @property
    def key(self) -> tuple[Any, ...]:
        strips = tuple(e.strip_level for e in self.series.entries)
        return (self.base, self.blobs, strips)

    def has(self, name: str) -> bool:
        return name in self.series

    def describe(self) -> str:
        return f"{self.label}, base {self.base[:10]}"


@dataclass(frozen=True)
class Plan:
    """Which version each patch comes from: runs of consecutive patches of one version."""

    segments: tuple[tuple[Version, tuple[str, ...]], ...]

    @property
    def label(self) -> str:
        if len(self.segments) == 1:
            return self.segments[0][0].describe()
        return "; ".join(f"{v.describe()} for {', '.join(names)}" for v, names in self.segments)

    @property
    def current(self) -> bool:
        return all(v.current for v, _names in self.segments)

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"version": v.label, "base": v.base, "patches": list(names)}
            for v, names in self.segments
        ]


@dataclass(frozen=True)
class Attempt:
    """What building the selection at one commit gave: the commit to test, or the conflict of
    the first plan (every plan tried conflicted)."""

    commit: Oid
    tested: Oid | None
    plan: Plan
    conflict: Conflict | None = None
    tried: tuple[Plan, ...] = ()  # plans that conflicted before ``plan`` (or after it)


class _Unusable(Exception):
    def __init__(self, version: Version) -> None:
        self.version = version


@dataclass
class Versions:
    ws: Checkout
    engine: Engine  # the series now (`state.make_engine`)
    versions: list[Version] = field(default_factory=list)
    _engines: dict[tuple[Any, ...], Engine] = field(default_factory=dict)
    _sides: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    _built: dict[tuple[str, tuple[str, ...]], Attempt] = field(default_factory=dict)
    _readers: dict[str, Git] = field(default_factory=dict)
    # The series now, when it does not build on its own base (a patch file that does not
    # apply where it was made): the plan and its report, shown where no other version serves.
    broken: tuple[Plan, Conflict] | None = None

    def __post_init__(self) -> None:
        if not self.versions:
            self.versions = collect(self.ws, self.engine, self._readers)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        for git in self._readers.values():
            if git is not self.ws.git:
                git.close()

    # -- which version -------------------------------------------------------------------------

    def side(self, base: Oid, commit: Oid) -> tuple[int, int]:
        """(0, n): ``base`` is ``commit`` or n commits below it; (1, n): n commits above it;
        (2, n): neither, n commits on both sides."""
        if (base, commit) not in self._sides:
            ahead, behind = self.ws.git.ahead_behind(base, commit)
            if not behind:
                self._sides[base, commit] = (0, ahead)
            elif not ahead:
                self._sides[base, commit] = (1, behind)
            else:
                self._sides[base, commit] = (2, ahead + behind)
        return self._sides[base, commit]

    def ranked(self, commit: Oid) -> list[Version]:
        return sorted(self.versions, key=lambda v: (*self.side(v.base, commit), -v.time))

    def plans(self, commit: Oid, names: Sequence[str]) -> list[Plan]:
        """The plans to try at ``commit`` for the patches ``names`` (in the order of the series
        now), the preferred first; none when a patch has no version left."""
        if not self.versions or any(not any(v.has(n) for v in self.versions) for n in names):
            return []
        if len(self.versions) == 1:
            return [self._plan(self.versions, names)]
        ranked = self.ranked(commit)
        found = [self._plan(ranked, names)]
        lead = 1 if self.side(ranked[0].base, commit)[0] == 0 else 0
        other = next((v for v in ranked if self.side(v.base, commit)[0] == lead), None)
        if other is not None:
            alternative = self._plan([other, *(v for v in ranked if v is not other)], names)
            if alternative != found[0]:
                found.append(alternative)
        return found

    def _plan(self, order: Sequence[Version], names: Sequence[str]) -> Plan:
        segments: list[tuple[Version, list[str]]] = []
        for name in names:
            version = next(v for v in order if v.has(name))
            if segments and segments[-1][0] is version:
                segments[-1][1].append(name)
            else:
                segments.append((version, [name]))
        return Plan(tuple((v, tuple(names)) for v, names in segments))

    # -- building ------------------------------------------------------------------------------

    def build_at(self, commit: Oid, names: Sequence[str]) -> Attempt:
        """``names`` built at ``commit`` by the first plan that applies (remembered)."""
        key = (commit, tuple(names))
        if key in self._built:
            return self._built[key]
        while True:
            failed: list[tuple[Plan, Conflict]] = []
            try:
                plans = self.plans(commit, names)
                for plan in plans:
                    try:
                        tested = self.build(commit, plan)
                    except ConflictError as exc:
                        if not isinstance(exc.report, Conflict):
                            raise
                        failed.append((plan, exc.report))
                        continue
                    tried = tuple(p for p, _c in failed)
                    attempt = Attempt(commit, tested, plan, None, tried)
                    break
                else:
                    if not plans:  # the series now does not build where it was made
                        assert self.broken is not None
                        plan, conflict = self.broken
                    else:
                        plan, conflict = failed[0]
                    rest = tuple(p for p, _c in failed[1:])
                    attempt = Attempt(commit, None, plan, conflict, rest)
            except _Unusable as exc:
                self.versions = [v for v in self.versions if v is not exc.version]
                continue
            self._built[key] = attempt
            return attempt

    def build(self, commit: Oid, plan: Plan) -> Oid:
        """The commit "``commit`` + the plan's patches"; ConflictError when one does not
        apply there."""
        git = self.ws.git
        keep: list[AppliedPatch] = []
        head = commit
        for version, names in plan.segments:
            engine = self._engine(version)
            try:  # its own chain first: a failure there is the version's, not the commit's
                engine.extend(max(version.series.index(n) + 1 for n in names))
            except ConflictError as exc:
                if version.current and isinstance(exc.report, Conflict):
                    self.broken = (plan, exc.report)  # the others may still build
                raise _Unusable(version) from exc
            except PatchstackError as exc:
                if version.current:
                    raise
                raise _Unusable(version) from exc
            built = build_stack(engine, git, commit, names, keep)
            for name, made, tree in built.commits:
                entry = version.series.entry(name)
                keep.append(AppliedPatch(name, entry.tag, made, tree, head))
                head = made
        return head

    def _engine(self, version: Version) -> Engine:
        if version.current:
            return self.engine
        if version.key not in self._engines:
            self._engines[version.key] = self._make_engine(version)
        return self._engines[version.key]

    def _make_engine(self, version: Version) -> Engine:
        from ..engine.chain import Engine
        from ..engine.loaded import LoadedPatch

        reader = self._readers[version.reader]
        blobs = dict(version.blobs)
        in_tree = self.ws.in_tree

        def load(entry: Entry) -> LoadedPatch:
            data = reader.read_blob(blobs[entry.name])
            shown = f"{entry.name} ({version.label})"
            try:
                patch = parse_patch(data, shown, entry.strip_level)
                paths.check_patch(patch, shown, in_tree)
            except PatchstackError as exc:
                raise _Unusable(version) from exc
            return LoadedPatch(entry, data, patch, shown)

        engine = self.engine
        return Engine(
            self.ws.git, version.series, load, version.base, engine.default_author, engine.store
        )


# -- the versions ----------------------------------------------------------------------------


def collect(ws: Checkout, engine: Engine, readers: dict[str, Git]) -> list[Version]:
    """The series now, then every other version the operation log and the series folder's
    git history hold, newest first, one per content."""
    git = ws.git
    now = _now(ws, engine)
    found: dict[tuple[Any, ...], Version] = {now.key: now}
    bases: dict[str, Oid | None] = {}
    readers["log"] = git
    trees: set[str] = set()

    def add(label: str, tree: str, time: float, reader: str) -> None:
        if tree in trees:
            return
        trees.add(tree)
        version = _read(readers[reader], label, tree, time, reader, bases, git)
        if version is not None and version.key not in found:
            found[version.key] = version

    log = journal.entries(git)
    live = {e.seq for e in journal.effective(log)}  # an undone command's series is not history
    ours = [
        e
        for e in log
        if e.seq in live and all(_same(s.series_dir, ws) for s in (e.before, e.after) if s)
    ]  # (a log entry of another series folder, --dir, is not this series' history)
    # Named by the command that replaced it (the newest, when it was the series twice), else
    # by the one that made it.
    for e in ours:
        if e.before.series_exists and (e.after is None or e.after.series != e.before.series):
            add(f"the series before log #{e.seq} ({_what(e)})", e.before.series, e.time, "log")
    for e in ours:
        if e.after is not None and e.status == "done" and e.after.series_exists:
            add(f"the series of log #{e.seq} ({_what(e)})", e.after.series, e.time, "log")
    held = _holder(ws)
    if held is not None:
        holder, rel = held
        readers["git"] = holder
        head = holder.head()
        tracked = head is not None and (
            rel == "." or rel in holder.entries_at(holder.tree_of(head), [rel])
        )  # an untracked folder has no history: no walk of a long one for nothing
        for commit, tree, time in holder.path_history("HEAD", rel) if tracked else ():
            folder = tree if rel == "." else holder.entries_at(tree, [rel]).get(rel, ("", ""))[1]
            if folder:
                add(f"the series of commit {commit[:10]}", folder, time, "git")
    return list(found.values())


def _what(e: journal.Entry) -> str:
    """The command of a log entry from its verb on ("refresh --onto origin/main")."""
    words = e.command.split()
    if e.kind in words:
        words = words[words.index(e.kind) :]
    text = " ".join(words)
    return text if len(text) <= 40 else text[:39] + "…"


def _same(where: str | None, ws: Checkout) -> bool:
    """Is ``where`` (a snapshot's series folder) this series folder? The same path, or the
    same path inside the work tree (the repository may have moved since)."""
    if where is None or os.path.realpath(where) == os.path.realpath(ws.series_dir):
        return True
    inside = ws.in_tree
    parts = inside.split("/") if inside and inside != "." else []
    return bool(parts) and where.replace(os.sep, "/").rstrip("/").split("/")[-len(parts) :] == parts


def _now(ws: Checkout, engine: Engine) -> Version:
    series = engine.series
    fmt = ws.git.fmt
    blobs = tuple((e.name, str(fmt.blob_id(engine.patch(e.name).data))) for e in series.entries)
    return Version(NOW, engine.canonical_base, series, blobs, float("inf"))


def _read(
    reader: Git,
    label: str,
    tree: str,
    time: float,
    where: str,
    bases: dict[str, Oid | None],
    git: Git,
) -> Version | None:
    """The version a series folder's tree holds; None when it cannot be used (no series file,
    one that does not parse, a missing patch file, a base that is not a commit here)."""
    found = reader.read_object(f"{tree}:series")
    if found is None or found[0] != "blob":
        return None
    try:
        series = parse_series(found[1].decode("utf-8", "surrogateescape"), f"{label}: series")
    except PatchstackError:
        return None
    if not series.base or not series.entries:
        return None
    if series.base not in bases:
        bases[series.base] = git.rev_parse(series.base)
    base = bases[series.base]
    if base is None:
        return None
    names = list(series.names)
    entries = reader.entries_at(tree, names)
    if any(entries.get(n, ("",))[0] not in ("100644", "100755") for n in names):
        return None
    blobs = tuple((n, entries[n][1]) for n in names)
    return Version(label, base, series, blobs, time, where)


def _holder(ws: Checkout) -> tuple[Git, str] | None:
    """The repository whose history holds the series folder (this one, or a repository of
    its own), and the folder's path in it."""
    if ws.in_tree is not None:
        return ws.git, ws.in_tree
    try:
        other = find_repo(ws.series_dir)
    except PatchstackError:
        return None
    rel = os.path.relpath(os.path.realpath(ws.series_dir), os.path.realpath(other.top))
    return other, rel.replace(os.sep, "/")
