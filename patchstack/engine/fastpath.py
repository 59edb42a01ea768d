"""The fast path: a file's hunks applied in Python to its preimage, proven by blob ids, and
consecutive patches committed in one fast-import stream.

This is not a replacement for ``git apply``: a patch file written
by patchstack carries full ``index <old>..<new>`` lines, so when the preimage blob is exactly
``<old>`` and the text the hunks produce hashes to ``<new>``, the result is proven to be the one
the patch was made with. Anything else (no full index line, a different preimage, a hash that
does not match, binary data, renames) is left to ``git apply`` by returning None.

Each hunk must match at its stated line, or at the nearest place up or down (as git allows an
offset); never with fuzz. The hash check makes a match at a wrong place harmless: the result
would not hash to the expected id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..git import FastImport, Git, RawDiff
from ..git.fastimport import Change
from ..model import paths
from ..model.ids import ObjectFormat, Oid
from ..model.patchfile import FileDiff, Hunk
from .committer import Committer
from .loaded import LoadedPatch

PREFETCH_BYTES = 64 << 20  # file contents a stream reads ahead, at most
PREFETCH_WINDOW = 64  # patches a stream reads ahead for, at once
REGULAR = ("100644", "100755")


def _split(data: bytes) -> list[bytes]:
    """Lines with their newline; the last line may lack one."""
    lines = data.split(b"\n")
    last = lines.pop()
    out = [ln + b"\n" for ln in lines]
    if last:
        out.append(last)
    return out


def _hunk_sides(hunk: Hunk) -> tuple[list[bytes], list[bytes]]:
    pre: list[bytes] = []
    post: list[bytes] = []
    prev_kind = " "
    for raw in hunk.lines:
        if raw.startswith("\\"):
            # "\ No newline at end of file" applies to the line just before it.
            for side, kinds in ((pre, " -"), (post, " +")):
                if side and prev_kind in kinds and side[-1].endswith(b"\n"):
                    side[-1] = side[-1][:-1]
            continue
        prev_kind = raw[:1] or " "
        line = raw[1:].encode("utf-8", "surrogateescape") + b"\n"
        if prev_kind in " -":
            pre.append(line)
        if prev_kind in " +":
            post.append(line)
    return pre, post


def apply_hunks(old: bytes, hunks: Sequence[Hunk]) -> bytes | None:
    """The postimage, or None when a hunk's preimage is not found exactly."""
    lines = _split(old)
    out: list[bytes] = []
    pos = 0  # next unread line of ``lines``
    offset = 0
    for hunk in hunks:
        pre, post = _hunk_sides(hunk)
        want = hunk.old_start - 1 + offset if hunk.old_len else hunk.old_start + offset
        if not pre:
            at = max(want, pos)
            if at > len(lines):
                return None
        else:
            found = _find(lines, pre, max(want, pos), pos)
            if found is None:
                return None
            at = found
        out.extend(lines[pos:at])
        out.extend(post)
        pos = at + len(pre)
        offset = at - (hunk.old_start - 1 if hunk.old_len else hunk.old_start)
    out.extend(lines[pos:])
    return b"".join(out)


def _find(lines: list[bytes], pre: list[bytes], want: int, floor: int) -> int | None:
    n = len(pre)
    limit = len(lines) - n
    if limit < floor:
        return None
    want = min(max(want, floor), limit)  # a line number past the end starts at the end
    for delta in range(0, limit - floor + 1):
        for at in (want + delta, want - delta) if delta else (want,):
            if floor <= at <= limit and lines[at : at + n] == pre:
                return at
        if want + delta > limit and want - delta < floor:
            break
    return None


def provable(fd: FileDiff, fmt: ObjectFormat) -> bool:
    """Whether blob ids can prove what ``fd`` makes: text, no rename or copy, full index line."""
    return not (fd.binary or fd.renamed or fd.copied) and bool(
        fmt.is_full(fd.old_id) and fmt.is_full(fd.new_id)
    )


def proven_postimage(fd: FileDiff, old: bytes | None, fmt: ObjectFormat) -> bytes | None:
    """The new content of ``fd`` applied to ``old`` (None: absent), when the ids prove it."""
    if not provable(fd, fmt) or not fd.old_id or not fd.new_id:
        return None
    if fmt.is_null(fd.old_id):
        if old is not None:
            return None
        old = b""
    elif old is None or fmt.blob_id(old) != fd.old_id:
        return None
    new = apply_hunks(old, fd.hunks) if fd.hunks else old
    if new is None:
        return None
    if fmt.is_null(fd.new_id):
        return b"" if not new else None
    return new if fmt.blob_id(new) == fd.new_id else None


class ReadAhead:
    """How far a stream has read ahead over a list of patches: when it first opens, for every
    remaining patch; once a patch went another way (the stream closed), a window at a time, read
    again as the patches pass its end (a series mixing the two ways would otherwise read ahead
    for every remaining patch at each switch)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.end = 0
        self.window = total

    def due(self, at: int) -> range | None:
        """The patches to read ahead for now that patch ``at`` is next, or None."""
        if at < self.end:
            return None
        self.end = min(at + self.window, self.total)
        return range(at, self.end)

    def closed(self) -> None:
        """The stream closed: what it read is gone, and from now on a window at a time."""
        self.end = 0
        self.window = PREFETCH_WINDOW


class ProvenStream:
    """The fast path: consecutive patches as commits in one fast-import stream.

    The tree state is the start commit plus an overlay of the files patches changed; every file
    change is proven by its blob ids (`apply.proven_postimage`), so the commits are the very
    ones ``git apply`` plus ``commit-tree`` would make.
    """

    def __init__(self, git: Git, start: Oid, named: bool = True) -> None:
        """``named=False``: commits are returned as the stream's marks (`FastImport.commit`),
        and the stream's objects are throwaway ones until published (`git.scratch`)."""
        self.git = git
        self.named = named
        self.root = f"{start}^{{tree}}"  # the tree the stream last knew from outside
        self.base: dict[str, tuple[str, str]] = {}  # path -> (mode, id) in ``root``
        self.listed: set[str] = set()  # paths looked up in ``root`` (found or not)
        self.blobs: dict[str, bytes] = {}  # contents read ahead, by blob id
        # path -> (mode, id, contents when read) the stream's commits left; None: deleted
        self.overlay: dict[str, tuple[str, str, bytes | None] | None] = {}
        self.stream = FastImport(git, throwaway=not named)

    def close(self) -> None:
        self.stream.close()

    def moved(self, tree: Oid, upcoming: Iterable[str]) -> None:
        """The tree is now ``tree`` (readable by git): a commit made outside the proven path,
        such as a merge's result. What was looked up for the ``upcoming`` paths (the next
        patches') stays known: only their entries that differ between the two trees are read
        again (a merge changes a few paths); the rest is forgotten, and looked up again if a
        later patch needs it."""
        keep = {q for p in upcoming for q in (p, *paths.leading_dirs(p))}
        self.listed &= keep  # still closed under leading folders, as `tree_changes` needs
        self.base = {p: e for p, e in self.base.items() if p in self.listed}
        for path, entry in self.git.tree_changes(self.root, tree, self.listed).items():
            if entry is None:
                self.base.pop(path, None)
            else:
                self.base[path] = entry
        self.root = tree
        self.overlay.clear()

    def prefetch(self, wanted: Iterable[str]) -> None:
        """Look up the paths the coming patches change, and read the files they change, in a
        few pipelined batches instead of a round trip each (up to `PREFETCH_BYTES`)."""
        wanted = sorted(set(wanted))
        self._look_up(wanted)
        oids = [
            found[1]
            for found in (self.base.get(p) for p in wanted)
            if found is not None and found[0] in ("100644", "100755") and found[1] not in self.blobs
        ]
        sizes = self.git.object_sizes(list(dict.fromkeys(oids)))
        budget = PREFETCH_BYTES - sum(len(b) for b in self.blobs.values())
        chosen = []
        for oid, size in sizes.items():
            if size is not None and size <= budget:
                chosen.append(oid)
                budget -= size
        for oid, found in zip(chosen, self.git.read_objects(chosen), strict=True):
            if found is not None and found[0] == "blob":
                self.blobs[oid] = found[1]

    def look_up(self, wanted: Iterable[str]) -> None:
        """Look the paths the coming patches change up at once (and not their files)."""
        self._look_up(sorted(set(wanted)))

    def _look_up(self, wanted: Sequence[str]) -> None:
        """Look paths (and their folders) up in ``root``, the ones not known yet, at once."""
        todo = {q for p in wanted for q in (p, *paths.leading_dirs(p))}
        todo -= self.listed
        todo -= self.overlay.keys()
        if todo:
            self.base.update(self.git.entries_at(self.root, sorted(todo)))
            self.listed |= todo

    def _blob(self, oid: str) -> bytes:
        found = self.blobs.get(oid)
        return found if found is not None else self.git.read_blob(oid)

    def _through_non_tree(
        self, path: str, staged: Mapping[str, tuple[str, str, bytes | None] | None]
    ) -> bool:
        modes: dict[str, str | None] = {}
        for d in paths.leading_dirs(path):
            cur = staged[d] if d in staged else self._current(d)
            modes[d] = cur[0] if cur else None
        return paths.through_problem(path, modes) is not None

    def _current(self, path: str) -> tuple[str, str, bytes | None] | None:
        if path in self.overlay:
            return self.overlay[path]
        if path not in self.listed:
            self._look_up([path])
        found = self.base.get(path)
        return (found[0], found[1], None) if found else None

    def commit_tree(
        self, parent: Oid, lp: LoadedPatch, committer: Committer, tree: Oid
    ) -> Oid | None:
        """The commit of ``lp`` with the whole tree ``tree`` (a merge's result) on ``parent``,
        the same commit `Committer.commit` makes; None when only commit-tree may write its
        identity. The caller tells the stream what moved (`moved`)."""
        return committer.stream_commit(self.stream, parent, lp, [("040000", tree, "")], self.named)

    def commit_entries(
        self,
        parent: Oid,
        lp: LoadedPatch,
        committer: Committer,
        entries: Sequence[tuple[str, str, str]],
    ) -> Oid:
        """The commit of ``lp`` on ``parent`` that sets each (mode, id, path) of ``entries``
        (files a merge wrote, already in the object database); the caller made sure a stream
        may write its identity, and tells the stream what moved (`moved`)."""
        commit = committer.stream_commit(self.stream, parent, lp, list(entries), self.named)
        assert commit is not None
        return commit

    def _folder_mode(self, folder: str) -> str | None:
        """The mode of ``folder`` in the stream's tree; None when absent, or when a commit of
        the stream deleted something under it (it may be gone: not known without a read)."""
        prefix = folder + "/"
        if any(v is None and p.startswith(prefix) for p, v in self.overlay.items()):
            return None
        cur = self._current(folder)
        return cur[0] if cur else None

    def carry(
        self,
        parent: Oid,
        lp: LoadedPatch,
        committer: Committer,
        diff: Sequence[RawDiff],
        base: Oid,
    ) -> Oid | None:
        """The commit of ``lp`` on ``parent`` when each file it changes is, in the stream's
        tree, what it was before it in the old chain (``diff``: the raw diff of ``lp`` there,
        ``base = C[k] -> C[k+1]``), and no rename can reach across its paths
        (`contract.rename_free`); None otherwise. Then the three-way merge of ``lp`` sees
        "ours" equal to "base" on every path ``lp`` changes and takes ``lp``'s side, and on
        every other path ``lp`` changes nothing: the new entries are the old chain's, with no
        file read, no hunk applied (so a patch without full index lines needs no merge
        either). Renames, copies and anything but regular files are left to the merge."""
        if not diff or not committer.streamable(lp):
            return None
        if any(f.renamed or f.copied for f in lp.head.files):
            return None
        self._look_up([d[4] for d in diff])
        changes: list[Change] = []
        staged: dict[str, tuple[str, str, bytes | None] | None] = {}
        for old_mode, new_mode, old_id, new_id, path in diff:
            if self._through_non_tree(path, staged):
                return None
            cur = self._current(path)
            if old_mode == "000000":
                if cur is not None:
                    return None
            elif cur is None or (cur[0], cur[1]) != (old_mode, old_id) or cur[0] not in REGULAR:
                return None
            if new_mode == "000000":
                changes.append(("D", path))
                staged[path] = None
            elif new_mode in REGULAR:
                changes.append((new_mode, new_id, path))
                staged[path] = (new_mode, new_id, None)
            else:
                return None

        from .contract import TREE_MODE, rename_free  # (merging's imports: not for status)

        def trees_in_base(folders: Iterable[str]) -> set[str]:
            found = self.git.entries_at(base, list(folders))
            return {f for f, (mode, _oid) in found.items() if mode == TREE_MODE}

        if not rename_free(diff, self._folder_mode, trees_in_base):
            return None
        commit = committer.stream_commit(self.stream, parent, lp, changes, self.named)
        assert commit is not None
        self.overlay.update(staged)
        return commit

    def commit(self, parent: Oid, lp: LoadedPatch, committer: Committer) -> Oid | None:
        """The commit of ``lp`` applied exactly where it was made (the canonical chain: the
        stream's tree is ``C[k]``), proven by blob ids; None when they cannot prove it."""
        if not committer.streamable(lp):
            return None
        changes: list[Change] = []
        staged: dict[str, tuple[str, str, bytes] | None] = {}
        self._look_up(lp.patch.paths)
        for fd in lp.patch.files:
            if fd.renamed or fd.copied or fd.binary or (fd.old_path and fd.old_path != fd.path):
                return None
            path = fd.path
            if self._through_non_tree(path, staged):
                return None  # git apply's path, which refuses it with the file and line
            cur = staged[path] if path in staged else self._current(path)
            if fd.old_path is None:
                if cur is not None:
                    return None
                old = None
            else:
                if cur is None or cur[0] not in ("100644", "100755"):
                    return None
                if fd.old_mode and fd.old_mode != cur[0]:
                    return None
                old = cur[2] if cur[2] is not None else self._blob(cur[1])
            new = proven_postimage(fd, old, self.git.fmt)
            if new is None:
                return None
            if fd.new_path is None:
                changes.append(("D", path))
                staged[path] = None
                continue
            mode = fd.new_mode or (cur[0] if cur else None)
            if mode not in ("100644", "100755"):
                return None
            ref = self.stream.blob(new) if new != old else (cur[1] if cur else "")
            changes.append((mode, ref, path))
            staged[path] = (mode, fd.new_id or "", new)
        commit = committer.stream_commit(self.stream, parent, lp, changes, self.named)
        assert commit is not None
        self.overlay.update(staged)
        return commit
