"""The operation log's entries: one commit per state change on ``refs/patchstack/oplog``.

A linked worktree has its own log, ``refs/patchstack/worktrees/<id>/oplog``; the refs live with
the other refs, so entries and everything they point at survive ``git gc``. An entry's message
is one line naming the command, a blank line, and a JSON record: sequence number, command line,
kind, status (``running``, ``done``, ``failed``, ``interrupted``), time, process id, and the
`Snapshot` of the state *before* and *after*. The commit's tree holds the snapshots' trees (so
they stay reachable), as its parents hold the previous entry and both HEADs.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import GitFailure, PatchstackError, RefusedError
from ..files import write_atomic
from ..git import Git
from ..model.ids import Oid
from .snapshot import Snapshot
from .trees import TreeChange, describe_planned, log_ref

IDENT = "patchstack <patchstack@invalid>"
RESTORING = ("undo", "redo")  # kinds whose entries are written even when nothing changed


def oplog_ref(git: Git) -> str:
    if os.path.realpath(git.git_dir) == os.path.realpath(git.common_dir):
        return "refs/patchstack/oplog"
    return log_ref(git.git_dir)


@dataclass(frozen=True)
class Entry:
    oid: str
    seq: int
    command: str
    kind: str  # the verb: push, pop, new, init, undo, redo, refresh, ...
    status: str  # running, done, failed, interrupted
    time: int
    pid: int
    before: Snapshot
    after: Snapshot | None
    planned_head: str | None = None
    undoes: tuple[int, ...] = ()
    redoes: int | None = None
    trees: tuple[TreeChange, ...] = ()  # experiment trees made or removed (`journal.trees`)
    keep: tuple[str, ...] = ()  # commits the state names by id only (a deferred patch's)
    writes: tuple[str, ...] = ()  # the files of the series directory it writes (relative)
    notes: tuple[str, ...] = ()  # why, in words: "NAME: dropped, upstream took it in ..."

    @property
    def is_undo(self) -> bool:
        return self.kind == "undo" and self.status == "done"

    @property
    def is_redo(self) -> bool:
        return self.kind == "redo" and self.status == "done"

    @property
    def state(self) -> Snapshot:
        """The state this entry left (the one before it, if it never finished)."""
        return self.after or self.before

    def meta(self) -> dict[str, Any]:
        return {
            "patchstack-oplog": 1,
            "seq": self.seq,
            "command": self.command,
            "kind": self.kind,
            "status": self.status,
            "time": self.time,
            "pid": self.pid,
            "planned_head": self.planned_head,
            "undoes": list(self.undoes),
            "redoes": self.redoes,
            "writes": list(self.writes),
            "before": self.before.to_json(),
            "after": self.after.to_json() if self.after else None,
            **({"trees": [c.to_json() for c in self.trees]} if self.trees else {}),
            **({"notes": list(self.notes)} if self.notes else {}),
        }


def parse_entry(oid: str, message: str) -> Entry | None:
    _subject, _, body = message.partition("\n\n")
    try:
        data = json.loads(body)
        return Entry(
            oid,
            int(data["seq"]),
            data["command"],
            data.get("kind", ""),
            data["status"],
            int(data.get("time", 0)),
            int(data.get("pid", 0)),
            Snapshot.from_json(data["before"]),
            Snapshot.from_json(data["after"]) if data.get("after") else None,
            data.get("planned_head"),
            tuple(data.get("undoes", ())),
            data.get("redoes"),
            tuple(TreeChange.from_json(c) for c in data.get("trees") or ()),
            writes=tuple(data.get("writes", ())),
            notes=tuple(str(n) for n in data.get("notes") or ()),
        )
    except (ValueError, KeyError, TypeError):
        return None


class BrokenLog(RefusedError):
    """The operation log's ref cannot be read: every command names it and the way out."""


def read_log(git: Git, limit: int | None = None) -> list[tuple[Oid, str]]:
    """(entry, message) along the log, newest first; `BrokenLog` when git cannot read it."""
    ref = oplog_ref(git)
    try:
        return git.messages(ref, limit)
    except GitFailure as exc:
        raise broken_log(git, ref, exc.message) from None


def broken_log(git: Git, ref: str, why: str) -> BrokenLog:
    """What is wrong with the log's ref, and the step that makes the log usable again: a new
    log (undo cannot go back past it; the work tree, the branch and the series stay)."""
    path = os.path.join(git.common_dir, *ref.split("/"))
    start_again = (
        "undo cannot go back past this point, and nothing else changes (work tree, branch, series)"
    )
    try:
        with open(path, "rb") as f:
            data = f.read(200).strip()
    except OSError:
        data = None
    if data is not None and not re.fullmatch(rb"[0-9a-f]{40}|[0-9a-f]{64}|ref: \S+", data):
        what = "is empty" if not data else "does not hold an object id"
        return BrokenLog(
            f"the operation log's ref {ref} is broken: its file {path} {what}",
            f"remove that file (rm '{path}') to start a new log; {start_again}",
        )
    oid = git.resolve(ref)
    kind = git.object_type(oid) if oid else None
    if oid and kind is None:
        problem = f"the operation log ({ref}) points at {oid[:12]}, an object the repository lacks"
    elif oid and kind != "commit":
        problem = f"the operation log ({ref}) points at a {kind} ({oid[:12]}), not at a commit"
    else:
        problem = f"git cannot read the operation log ({ref})" + (f": {why}" if why else "")
    return BrokenLog(problem, f"start a new log with 'git update-ref -d {ref}'; {start_again}")


def entries(git: Git, limit: int | None = None) -> list[Entry]:
    """The log, newest first (entries that cannot be read are skipped)."""
    result = []
    for oid, message in read_log(git, limit):
        entry = parse_entry(oid, message)
        if entry is not None:
            result.append(entry)
    return result


def newest(git: Git) -> Entry | None:
    found = read_log(git, 1)
    return parse_entry(*found[0]) if found else None


def _refused_path(git: Git) -> str:
    return os.path.join(git.git_dir, "patchstack", "refused.json")


def note_refused(git: Git, command: str) -> None:
    """Remember that ``command`` was refused (it changed nothing, so the log has no entry of
    it), with the log's newest entry then: ``undo`` right after it says it undoes the command
    before, not this one. Not a state change: a note beside the log, best effort."""
    tip = git.rev_parse(oplog_ref(git))
    data = json.dumps({"command": command, "after": tip}).encode()
    try:
        os.makedirs(os.path.dirname(_refused_path(git)), exist_ok=True)
        write_atomic(_refused_path(git), data, sync=False)
    except OSError:
        pass


def refused_since(git: Git, tip: str | None) -> str | None:
    """The command refused after the log's entry ``tip`` (nothing logged since), if any."""
    try:
        with open(_refused_path(git), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("after") != tip:
        return None
    command = data.get("command")
    return command if isinstance(command, str) and command else None


def current_refresh(git: Git) -> str | None:
    """The blob of the stopped refresh the journal says the repository is in, if any."""
    last = newest(git)
    return last.state.refresh if last else None


def stopped_command(git: Git) -> str | None:
    """What goes on from the stopped refresh the journal holds, if any: 'patchstack import
    branch' for an import stopped at a conflict (its record's route), else 'patchstack
    refresh' (also when the record cannot be read: the refresh's own commands say why)."""
    blob = current_refresh(git)
    if blob is None:
        return None
    try:
        route = json.loads(git.read_blob(blob)).get("route")
    except (ValueError, AttributeError, PatchstackError):
        route = None
    return "patchstack import branch" if route == "import" else "patchstack refresh"


def _snapshot_tree(git: Git, snap: Snapshot) -> Oid:
    items = [("040000", snap.worktree, "worktree"), ("040000", snap.series, "series")]
    if snap.index:
        items.append(("040000", snap.index, "index"))
    if snap.refresh:
        items.append(("100644", snap.refresh, "refresh.json"))
    return git.mktree(items)


def one_line(text: str) -> str:
    """A command line as an entry's subject: one line, whatever the arguments held."""
    return " ".join(text.split())


def write_entry(git: Git, parent: str | None, entry: Entry) -> Oid:
    items = [("040000", _snapshot_tree(git, entry.before), "before")]
    if entry.after:
        items.append(("040000", _snapshot_tree(git, entry.after), "after"))
    # An experiment tree's HEAD, log and files are kept by the entry that made or removed it.
    kept = [s for c in entry.trees for s in c.states()]
    for i, state in enumerate(kept):
        if state.snapshot:
            items.append(("040000", _snapshot_tree(git, state.snapshot), f"tree-{i}"))
    tree = git.mktree(items)
    heads: tuple[str | None, ...] = (entry.before.head, entry.after.head if entry.after else None)
    heads += tuple(h for s in kept for h in (s.head, s.log))
    # The entry's parents keep them reachable: those this repository has (a mark merged from
    # a teammate's series names a commit of their clone).
    present = git.has_objects(entry.keep) if entry.keep else {}
    heads += tuple(k for k in entry.keep if present.get(k))
    parents = list(dict.fromkeys(p for p in (parent, *heads) if p))
    body = json.dumps(entry.meta(), indent=1, sort_keys=True)
    message = f"patchstack: {one_line(entry.command)}\n\n{body}\n"
    return git.commit_tree(tree, parents, message, IDENT, f"{entry.time} +0000")


def interrupted(git: Git) -> Entry | None:
    """The entry of a command that died while recording (call with the lock held)."""
    last = newest(git)
    return last if last and last.status == "running" else None


def half_made_error(git: Git) -> RefusedError | None:
    """In a linked worktree that an interrupted command was making or removing (its entry is
    in the log of the checkout it ran in): what happened, and where ``undo`` takes it back."""
    if os.path.realpath(git.git_dir) == os.path.realpath(git.common_dir):
        return None
    here = os.path.realpath(git.top)
    for ref, oid, message in git.tips_under("refs/patchstack/"):
        entry = parse_entry(oid, message) if ref.endswith("/oplog") else None
        if entry is None or entry.status != "running":
            continue
        for c in entry.trees:
            if os.path.realpath(c.path) != here:
                continue
            where = next(
                (wt.path for wt in git.worktrees() if _log_of(git, wt.git_dir) == ref), "?"
            )
            doing = ("removed", "removing") if c.after is None else ("made", "making")
            return RefusedError(
                f"this worktree is half-{doing[0]}: '{entry.command}' (#{entry.seq}) was"
                f" interrupted while {doing[1]} it",
                f"run 'patchstack undo' in {where}: it puts the worktree back as it was"
                + (" (removes it)" if c.before is None else ""),
            )
    return None


def _log_of(git: Git, git_dir: str) -> str:
    main = os.path.realpath(git_dir) == os.path.realpath(git.common_dir)
    return "refs/patchstack/oplog" if main else log_ref(git_dir)


def interrupted_error(entry: Entry) -> RefusedError:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.time))
    doing = f" ({describe_planned(entry.trees)})" if entry.trees else ""
    return RefusedError(
        f"'{entry.command}' (#{entry.seq}, pid {entry.pid}, started {when}) was interrupted"
        f" before it finished{doing}",
        "run 'patchstack undo' to restore the state before it exactly (uncommitted edits and"
        " untracked files included); 'patchstack log' shows it",
    )


def effective(log: Sequence[Entry]) -> list[Entry]:
    """Operations whose effect is in place now (not undone), newest first."""
    undone: set[int] = set()
    reverted: set[int] = set()
    result = []
    for e in log:
        if e.is_redo:
            if e.redoes is not None:
                reverted.add(e.redoes)
            continue
        if e.is_undo:
            if e.seq not in reverted:
                undone.update(e.undoes)
            continue
        if e.seq in undone:
            continue
        result.append(e)
    return result


def redo_target(log: Sequence[Entry]) -> Entry | None:
    reverted: set[int] = set()
    for e in log:
        if e.is_redo:
            if e.redoes is not None:
                reverted.add(e.redoes)
            continue
        if e.is_undo:
            if e.seq in reverted:
                continue
            return e
        return None
    return None
