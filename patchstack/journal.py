"""The operation log: every state change recorded in git objects, undo and redo, crash recovery.

**What an entry holds.** Each command that changes state is one commit on the ref
``refs/patchstack/oplog`` (a linked worktree has its own,
``refs/patchstack/worktrees/<id>/oplog``); the refs live with the other refs, so entries and
everything they point at survive ``git gc``. The commit's message is a line naming the command
and a JSON record: sequence number, command line, status, time, process id, and for the state
*before* and *after*: the branch and HEAD, the applied stack, and three trees, which the
commit's tree also holds (so they stay reachable), as do its parents (the previous entry and
both HEADs):

- ``index``: the user's index as it was (absent when it had unmerged entries);
- ``worktree``: the work tree as it was, every tracked and untracked (not ignored) file with
  its exact bytes, mode and symlink target, built in a temporary index copied from the real
  one, so only files whose stat data changed and untracked files are hashed, with
  ``hash-object --no-filters`` (no eol conversion, no clean filter: undo writes back the very
  bytes). The series directory is not part of it; untracked files larger than
  ``patchstack.snapshotMaxSize`` (64 MiB) are left out of snapshots, and so never touched by
  a restore either. Never ``git stash``: nothing of the user's is moved to take a snapshot;
- ``series``: the files of the series directory.

**Recording.** `recording` wraps the one place that publishes (`service.publish`) and
`restore`. Inside a critical section (`lock.critical`: Ctrl-C and SIGTERM wait until it ends)
it snapshots the state, writes a ``running`` entry and moves the ref to it, runs the step,
snapshots again and replaces the running entry by a ``done`` one (one ``update-ref`` expecting
the running entry). A step that fails having changed nothing leaves no entry; one that fails
having changed something leaves a ``failed`` entry, which undo reverses like any other.

**Interrupted commands.** A process killed inside the section leaves the ``running`` entry on
top. Commands hold the repository lock while they record, so the next command to take the lock
knows its writer is dead: it names the command that was interrupted and ``patchstack undo``,
which restores the state before it exactly, uncommitted edits and untracked files included.

**Undo and redo.** ``undo`` restores the *before* state of the newest operation not yet undone
(``undo N``: of the N newest, at once); ``redo`` reverts the newest undo, as long as no other
operation came after it. Both are recorded like any command, so an undo can itself be undone
and nothing a restore replaces is lost. Before restoring, the current state is compared with
the state the log last recorded: commits made on top since, a moved HEAD, or edits and staged
changes made since make undo refuse, naming what it would drop, unless ``--force`` (even then
what it replaces stays in the log, and ``redo`` brings it back).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

from . import lock
from .errors import PatchstackError, RefusedError
from .git import EMPTY_TREE, Git, Oid
from .stack import stack_from_history
from .workspace import Workspace, write_atomic

IDENT = "patchstack <patchstack@invalid>"
DEFAULT_MAX_UNTRACKED = 64 * 1024 * 1024
_ZERO = "0" * 40


def oplog_ref(git: Git) -> str:
    if os.path.realpath(git.git_dir) == os.path.realpath(git.common_dir):
        return "refs/patchstack/oplog"
    return f"refs/patchstack/worktrees/{os.path.basename(git.git_dir.rstrip('/'))}/oplog"


# -- snapshots ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    branch: str | None  # refs/heads/..., None when detached
    head: str
    index: str | None
    worktree: str
    series: str
    series_exists: bool
    stack: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()  # untracked files too large to snapshot

    def key(self) -> tuple:
        return (self.branch, self.head, self.index, self.worktree, self.series, self.series_exists)

    @staticmethod
    def from_json(data: dict) -> Snapshot:
        return Snapshot(
            data.get("branch"),
            data["head"],
            data.get("index"),
            data["worktree"],
            data["series"],
            bool(data.get("series_exists", True)),
            tuple(data.get("stack", ())),
            tuple(data.get("left_out", ())),
        )


def _max_untracked(git: Git) -> int:
    value = git.config("patchstack.snapshotMaxSize")
    if value:
        units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
        mult = units.get(value[-1].lower(), 1)
        with contextlib.suppress(ValueError):
            return int(value.rstrip("kKmMgG")) * mult
    return DEFAULT_MAX_UNTRACKED


def _inside(path: str, folder: str | None) -> bool:
    return bool(folder) and (path + "/").startswith(folder.rstrip("/") + "/")  # type: ignore[union-attr]


def _mode_of(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "120000"
    return "100755" if st.st_mode & 0o111 else "100644"


def _hash_paths(git: Git, top: str, rel_paths: Sequence[str]) -> dict[str, tuple[str, str]]:
    """path -> (mode, blob) for files and symlinks (the link text), bytes exactly as they are."""
    result: dict[str, tuple[str, str]] = {}
    regular: list[tuple[str, str]] = []
    link_files: list[tuple[str, str]] = []
    temps: list[str] = []
    try:
        for rel in rel_paths:
            full = os.path.join(top, rel)
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                fd, tmp = tempfile.mkstemp(prefix="patchstack-link-", dir=git.git_dir)
                with os.fdopen(fd, "wb") as f:
                    f.write(os.fsencode(os.readlink(full)))
                temps.append(tmp)
                link_files.append((rel, tmp))
            elif stat.S_ISREG(st.st_mode):
                regular.append((rel, _mode_of(st)))
        oids = git.hash_files(
            [tmp for _rel, tmp in link_files] + [os.path.join(top, r) for r, _m in regular]
        )
        for (rel, _tmp), oid in zip(link_files, oids, strict=False):
            result[rel] = ("120000", oid)
        for (rel, mode), oid in zip(regular, oids[len(link_files) :], strict=False):
            result[rel] = (mode, oid)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return result


def _series_tree(ws: Workspace) -> tuple[str, bool]:
    """The series directory as a tree. Blob ids are cached by stat data (like git's index),
    so a long series is not re-hashed by every command; entries younger than two seconds are
    hashed again, and cached ids are checked to exist."""
    git = ws.git
    folder = ws.series_dir
    if not os.path.isdir(folder):
        return git.mktree([]), False  # written, not only known: git fsck checks entries
    cache_path = os.path.join(git.common_dir, "patchstack", "series-stat-cache")
    try:
        with open(cache_path, encoding="utf-8") as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    if cache.get("folder") != folder:
        cache = {"folder": folder, "files": {}}
    now = time.time()
    found: dict[str, tuple[str, str]] = {}
    todo = []
    stats = {}
    for name in sorted(os.listdir(folder)):
        full = os.path.join(folder, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode) or _is_temp_name(name):
            continue
        key = [st.st_size, st.st_mtime_ns, st.st_ino, _mode_of(st)]
        stats[name] = key
        hit = cache["files"].get(name)
        if hit and hit[0] == key and now - st.st_mtime > 2:
            found[name] = (key[3], hit[1])
        else:
            todo.append(name)
    present = git.has_objects([oid for _m, oid in found.values()])
    for name, (_m, oid) in list(found.items()):
        if not present.get(oid):
            del found[name]
            todo.append(name)
    found.update(_hash_paths(git, folder, todo))
    files = {n: [stats[n], found[n][1]] for n in found if n in stats}
    if files != cache["files"]:
        with contextlib.suppress(OSError):
            write_atomic(
                cache_path, json.dumps({"folder": folder, "files": files}).encode(), sync=False
            )
    return git.mktree((m, o, n) for n, (m, o) in sorted(found.items())), True


def _is_temp_name(name: str) -> bool:
    """write_atomic's temporary files: '.<name>.<8 random characters>'."""
    return name.startswith(".") and len(name.rpartition(".")[2]) == 8 and name.count(".") >= 2


def take_snapshot(ws: Workspace) -> Snapshot:
    git = ws.git
    head = git.head()
    if head is None:
        raise PatchstackError("the repository has no commits yet", "commit the upstream tree first")
    exclude = ws.in_tree
    left_out: list[str] = []
    with git.temp_index() as idx:
        idx.copy_from(os.path.join(git.git_dir, "index"))
        index_tree = idx.try_write_tree()
        records: list[tuple[str, str, str]] = []
        candidates: list[str] = []
        for mode, path in idx.stat_dirty():
            if mode == "160000" or _inside(path, exclude):
                continue
            candidates.append(path)
            records.append(("0", _ZERO, path))  # removed unless it is there (set below)
        limit = _max_untracked(git)
        for path in idx.untracked(exclude):
            if path.endswith("/"):
                continue  # a nested repository: never touched, not ours to snapshot
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(os.path.join(git.top, path)).st_size > limit:
                    left_out.append(path)
                    continue
            candidates.append(path)
        hashed = _hash_paths(git, git.top, candidates)
        if index_tree is None:  # unmerged entries: drop every stage, keep the files
            records = [("0", _ZERO, p) for p in candidates] + records
        records += [(mode, oid, p) for p, (mode, oid) in hashed.items()]
        idx.set_entries(records)
        worktree = idx.write_tree()
    series, exists = _series_tree(ws)
    branch = git.head_ref()
    try:
        names = stack_from_history(head, git.iter_stack(head)).names
    except ValueError:
        names = ()
    return Snapshot(branch, head, index_tree, worktree, series, exists, names, tuple(left_out))


# -- entries ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    oid: str
    seq: int
    command: str
    kind: str  # the verb: push, pop, new, init, undo, redo, ...
    status: str  # running, done, failed, interrupted
    time: int
    pid: int
    before: Snapshot
    after: Snapshot | None
    planned_head: str | None = None
    undoes: tuple[int, ...] = ()
    redoes: int | None = None

    @property
    def is_undo(self) -> bool:
        return self.kind == "undo" and self.status == "done"

    @property
    def is_redo(self) -> bool:
        return self.kind == "redo" and self.status == "done"


def _parse_entry(oid: str, message: str) -> Entry | None:
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
        )
    except (ValueError, KeyError, TypeError):
        return None


def entries(git: Git, limit: int | None = None) -> list[Entry]:
    """The log, newest first (entries that cannot be read are skipped)."""
    result = []
    for oid, message in git.log_entries(oplog_ref(git), limit):
        entry = _parse_entry(oid, message)
        if entry is not None:
            result.append(entry)
    return result


def _snapshot_tree(git: Git, snap: Snapshot) -> str:
    items = [("040000", snap.worktree, "worktree"), ("040000", snap.series, "series")]
    if snap.index:
        items.append(("040000", snap.index, "index"))
    return git.mktree(sorted(items, key=lambda t: t[2]))


def _write_entry(git: Git, parent: str | None, meta: dict) -> Oid:
    before = Snapshot.from_json(meta["before"])
    after = Snapshot.from_json(meta["after"]) if meta.get("after") else None
    items = [("040000", _snapshot_tree(git, before), "before")]
    if after:
        items.insert(0, ("040000", _snapshot_tree(git, after), "after"))
    tree = git.mktree(items)
    parents = [p for p in (parent, before.head, after.head if after else None) if p]
    message = f"patchstack: {meta['command']}\n\n{json.dumps(meta, indent=1, sort_keys=True)}\n"
    return git.commit_tree(
        tree, list(dict.fromkeys(parents)), message, IDENT, f"{meta['time']} +0000"
    )


@dataclass
class Recording:
    """What `recording` yields: the state before, and (once finished) the entry written."""

    before: Snapshot
    entry: Oid | None = None
    meta: dict = field(default_factory=dict)


def _finish(
    git: Git, ref: str, running: str, parent: str | None, meta: dict, after: Snapshot, status: str
) -> Oid | None:
    before = Snapshot.from_json(meta["before"])
    if after.key() == before.key() and meta["kind"] not in ("undo", "redo"):
        git.set_ref(ref, parent, running)  # nothing changed: no entry
        return None
    final = dict(meta, status=status, after=asdict(after))
    oid = _write_entry(git, parent, final)
    git.set_ref(ref, oid, running)
    return oid


@contextlib.contextmanager
def recording(
    ws: Workspace,
    kind: str,
    planned_head: str | None = None,
    undoes: Sequence[int] = (),
    redoes: int | None = None,
    before: Snapshot | None = None,
) -> Iterator[Recording]:
    """Record the step run inside as one entry of the log (see the module docstring).

    ``before``: a snapshot the caller just took under the same lock, to save taking another.
    """
    git = ws.git
    ref = oplog_ref(git)
    with lock.critical():
        newest = git.log_entries(ref, 1)
        parent = newest[0][0] if newest else None
        last = _parse_entry(*newest[0]) if newest else None
        before = before or take_snapshot(ws)
        meta = {
            "patchstack-oplog": 1,
            "seq": (last.seq + 1) if last else 1,
            "command": ws.command or kind,
            "kind": kind,
            "status": "running",
            "time": int(time.time()),
            "pid": os.getpid(),
            "planned_head": planned_head,
            "undoes": list(undoes),
            "redoes": redoes,
            "before": asdict(before),
            "after": None,
        }
        running = _write_entry(git, parent, meta)
        if not git.set_ref(ref, running, parent):
            raise RefusedError(
                "the operation log moved while this command ran", "run the command again"
            )
        lock.point("journal-running")
        rec = Recording(before, meta=meta)
        try:
            yield rec
        except BaseException:
            _finish(git, ref, running, parent, meta, take_snapshot(ws), "failed")
            raise
        lock.point("journal-finishing")
        rec.entry = _finish(git, ref, running, parent, meta, take_snapshot(ws), "done")
        lock.point("journal-done")


def interrupted(git: Git) -> Entry | None:
    """The entry of a command that died while recording (call with the lock held)."""
    newest = entries(git, 1)
    return newest[0] if newest and newest[0].status == "running" else None


def interrupted_error(entry: Entry) -> RefusedError:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.time))
    return RefusedError(
        f"'{entry.command}' (#{entry.seq}, pid {entry.pid}, started {when}) was interrupted"
        " before it finished",
        "run 'patchstack undo' to restore the state before it exactly (uncommitted edits and"
        " untracked files included); 'patchstack log' shows it",
    )


# -- undo and redo ------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class RestoreResult:
    undone: tuple[Entry, ...]
    before: Snapshot  # the state the restore replaced
    target: Snapshot  # the state restored
    files: tuple[str, ...]  # work tree and series files written or removed


def undo(ws: Workspace, steps: int = 1, force: bool = False) -> RestoreResult:
    git = ws.git
    log = entries(git, None)
    if not log:
        raise PatchstackError("the operation log is empty: nothing to undo")
    newest = log[0]
    if newest.status == "running":
        if steps != 1:
            raise PatchstackError(
                f"'{newest.command}' was interrupted: undo it first (plain 'patchstack undo')"
            )
        current = take_snapshot(ws)
        _check_branch(current, newest.before)
        allowed = {newest.before.head, newest.planned_head}
        if current.head not in allowed and not force:
            _refuse_moved(git, current, newest.before.head, newest.command)
        parent = git.log_entries(oplog_ref(git), 2)
        _replace_running(git, newest, parent[1][0] if len(parent) > 1 else None, current)
        targets = [newest]
    else:
        ops = effective(log)
        if len(ops) < steps:
            raise PatchstackError(
                f"only {len(ops)} operation(s) to undo" if ops else "nothing left to undo",
                "'patchstack log' lists them",
            )
        targets = ops[:steps]
        current = _check_unchanged(ws, newest, force)
    target = targets[-1].before
    result = _restore(ws, "undo", target, current, undoes=[t.seq for t in targets])
    return RestoreResult(tuple(targets), result[0], target, result[1])


def redo(ws: Workspace, force: bool = False) -> RestoreResult:
    git = ws.git
    log = entries(git, None)
    if log and log[0].status == "running":
        raise interrupted_error(log[0])
    target = redo_target(log)
    if target is None:
        raise PatchstackError(
            "nothing to redo", "redo only follows an undo, before any other command"
        )
    current = _check_unchanged(ws, log[0], force)
    result = _restore(ws, "redo", target.before, current, redoes=target.seq)
    return RestoreResult((target,), result[0], target.before, result[1])


def _replace_running(git: Git, entry: Entry, parent: str | None, current: Snapshot) -> None:
    """Close an interrupted entry, recording the state it left as its 'after'."""
    meta = {
        "patchstack-oplog": 1,
        "seq": entry.seq,
        "command": entry.command,
        "kind": entry.kind,
        "status": "interrupted",
        "time": entry.time,
        "pid": entry.pid,
        "planned_head": entry.planned_head,
        "undoes": list(entry.undoes),
        "redoes": entry.redoes,
        "before": asdict(entry.before),
        "after": asdict(current),
    }
    git.set_ref(oplog_ref(git), _write_entry(git, parent, meta), entry.oid)


def _check_branch(current: Snapshot, recorded: Snapshot) -> None:
    if current.branch != recorded.branch:

        def name(b: str | None) -> str:
            return b.removeprefix("refs/heads/") if b else "a detached HEAD"

        raise RefusedError(
            f"the log was recorded on {name(recorded.branch)}, and HEAD is on"
            f" {name(current.branch)} now",
            f"switch back first (git switch {name(recorded.branch)}); nothing was changed",
        )


def _refuse_moved(git: Git, current: Snapshot, recorded_head: str, command: str) -> None:
    if git.is_ancestor(recorded_head, current.head):
        commits = git.log_oneline(f"{recorded_head}..{current.head}")
        shown = "; ".join(f"{oid[:12]} {subject}" for oid, subject, _ in commits[:10])
        more = f" and {len(commits) - 10} more" if len(commits) > 10 else ""
        raise RefusedError(
            f"{len(commits)} commit(s) were made on top since '{command}': {shown}{more};"
            " undo would drop them from the branch",
            "keep them (cherry-pick them after undo), or pass --force: they stay in the"
            " operation log and 'patchstack redo' brings them back; nothing was changed",
        )
    raise RefusedError(
        f"HEAD moved since '{command}' (to {current.head[:12]}, not by patchstack)",
        "pass --force to restore anyway (what it replaces stays in the operation log);"
        " nothing was changed",
    )


def _check_unchanged(ws: Workspace, newest: Entry, force: bool) -> Snapshot:
    """Refuse when the state differs from what the log last recorded (unless ``force``)."""
    git = ws.git
    last = newest.after or newest.before
    current = take_snapshot(ws)
    _check_branch(current, last)
    if force:
        return current
    if current.head != last.head:
        _refuse_moved(git, current, last.head, newest.command)
    changed = []
    if current.worktree != last.worktree:
        changed += git.changed_paths(last.worktree, current.worktree)
    if current.series != last.series:
        changed += [
            os.path.join(ws.display(ws.series_dir), p)
            for p in git.changed_paths(last.series, current.series)
        ]
    if current.series_exists != last.series_exists:
        changed.append(ws.display(ws.series_dir))
    staged = current.index != last.index
    if changed or staged:
        what = ", ".join(changed[:10]) + (
            f" and {len(changed) - 10} more" if len(changed) > 10 else ""
        )
        raise RefusedError(
            "files changed since '"
            + newest.command
            + "': "
            + (what or "")
            + ("; " if what and staged else "")
            + ("the staged changes differ" if staged else ""),
            "commit or capture them first, or pass --force: they stay in the operation log and"
            " 'patchstack redo' brings them back; nothing was changed",
        )
    return current


def _restore(
    ws: Workspace,
    kind: str,
    target: Snapshot,
    current: Snapshot,
    undoes: Sequence[int] = (),
    redoes: int | None = None,
) -> tuple[Snapshot, tuple[str, ...]]:
    git = ws.git
    index_lock = os.path.join(git.git_dir, "index.lock")
    if os.path.exists(index_lock):
        raise RefusedError(
            f"git's index is locked ({index_lock})",
            "if no git command is running, remove that file and try again; nothing was changed",
        )
    with recording(ws, kind, target.head, undoes, redoes, before=current) as rec:
        current = rec.before
        _check_branch(current, target)
        files = restore_state(ws, current, target)
    return current, files


def restore_state(ws: Workspace, current: Snapshot, target: Snapshot) -> tuple[str, ...]:
    """Make the work tree, index, branch and series directory those of ``target``."""
    git = ws.git
    top = git.top
    skip = set(current.left_out) | set(target.left_out)
    diffs = [
        d
        for d in (git.raw_diffs([(current.worktree, target.worktree)]) or [[]])[0]
        if not _inside(d[4], ws.in_tree) and d[4] not in skip and "160000" not in d[:2]
    ]
    for _om, _nm, _oo, _no, path in diffs:
        if _om == "000000" and os.path.lexists(os.path.join(top, path)):
            raise RefusedError(
                f"'{path}' is in the way (an ignored file the restore would overwrite)",
                "move it away and run the command again; nothing was changed",
            )
    _write_files(git, top, diffs)
    lock.point("restore-worktree")
    git.reset_index(target.index or git.tree_of(target.head))
    lock.point("restore-index")
    if current.head != target.head:
        ref = current.branch or "HEAD"
        if not git.set_ref(ref, target.head, current.head):
            raise PatchstackError(
                f"could not move {ref} back to {target.head[:12]}",
                "another process moved it; run 'patchstack undo' again",
            )
    lock.point("restore-ref")
    series_files = _restore_series(ws, current, target)
    return tuple(d[4] for d in diffs) + series_files


def _write_files(git: Git, top: str, diffs: Sequence[tuple[str, str, str, str, str]]) -> None:
    # Removals first (a file may give way to a folder), deepest first, then writes.
    for _om, nm, _oo, _no, path in sorted(diffs, key=lambda d: d[4], reverse=True):
        full = os.path.join(top, path)
        if nm == "000000" or (_om != "000000" and _om[:2] != nm[:2]):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            _prune_dirs(top, os.path.dirname(path))
    for _om, nm, _oo, no, path in diffs:
        if nm == "000000":
            continue
        full = os.path.join(top, path)
        _make_parents(top, path)
        data = git.read_blob(no)
        if nm == "120000":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(full)
            os.symlink(os.fsdecode(data), full)
            continue
        if os.path.islink(full):
            os.unlink(full)
        write_atomic(full, data, sync=False)
        mode = os.stat(full).st_mode & 0o777
        os.chmod(full, (mode | 0o111) if nm == "100755" else (mode & ~0o111))


def _make_parents(top: str, path: str) -> None:
    parts = path.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        d = os.path.join(top, *parts[:i])
        if os.path.islink(d) or (os.path.lexists(d) and not os.path.isdir(d)):
            os.unlink(d)  # a file or link where the snapshot has a folder (it is in the log)
        if not os.path.isdir(d):
            os.mkdir(d)


def _prune_dirs(top: str, folder: str) -> None:
    while folder:
        try:
            os.rmdir(os.path.join(top, folder))
        except OSError:
            return
        folder = os.path.dirname(folder)


def _restore_series(ws: Workspace, current: Snapshot, target: Snapshot) -> tuple[str, ...]:
    git = ws.git
    have = git.ls_tree(current.series) if current.series != EMPTY_TREE else {}
    want = git.ls_tree(target.series) if target.series != EMPTY_TREE else {}
    touched = []
    if want:
        os.makedirs(ws.series_dir, exist_ok=True)
    for name, (mode, oid) in want.items():
        if have.get(name) != (mode, oid):
            path = ws.patch_path(name)
            write_atomic(path, git.read_blob(oid))
            cur = os.stat(path).st_mode & 0o777
            os.chmod(path, (cur | 0o111) if mode == "100755" else (cur & ~0o111))
            touched.append(ws.display(path))
    for name in have:
        if name not in want:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(ws.patch_path(name))
            touched.append(ws.display(ws.patch_path(name)))
    if os.path.isdir(ws.series_dir):  # a write_atomic cut short by a kill leaves its temp file
        for name in os.listdir(ws.series_dir):
            if _is_temp_name(name):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(ws.patch_path(name))
    if not target.series_exists:
        with contextlib.suppress(OSError):
            os.rmdir(ws.series_dir)
    return tuple(touched)
