"""Trees: listed by ``ls-tree -z``, or read through the persistent ``cat-file`` and parsed here
(a tree's entries never change, so what one command read once it does not read again)."""

from __future__ import annotations

import bisect
import os
import stat
from collections.abc import Container, Mapping, Sequence

from ..errors import PatchstackError
from ..model.ids import Oid
from .base import decode_path, encode_path
from .index import TempIndex
from .objects import Objects, staged_mode, tree_records


def _ls_records(out: bytes) -> dict[str, tuple[str, str]]:
    result = {}
    for rec in out.split(b"\0"):
        if rec:
            meta, name = rec.split(b"\t", 1)
            mode, _kind, oid = meta.decode().split()
            result[decode_path(name)] = (mode, oid)
    return result


_OFF = ("core.autocrlf", "core.ignorecase", "core.precomposeunicode")
_ON = ("core.filemode", "core.symlinks")


def _plain_folders(top: str, path: str) -> bool:
    """Whether each folder on the way to ``path`` is a real folder or missing (not a file, not
    a symbolic link: git refuses a path beyond one)."""
    at = top
    for part in path.split("/")[:-1]:
        at = os.path.join(at, part)
        try:
            st = os.lstat(at)
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(st.st_mode):
            return False
    return True


TREES_IN_PROCESS = 64  # trees `changed_entries` reads itself; a larger change is asked of git
_HEXDIGITS = frozenset("0123456789abcdef")
# set: a tree written in process is read back from git when wanted, not from what was written
WRITTEN_OFF = "PATCHSTACK_NO_WRITTEN_TREES"
# set: a folder edited the same way again is written again (`_edit` keeps what it made)
EDITS_OFF = "PATCHSTACK_NO_SAME_EDITS"


def _sort_key(name: bytes, mode: str) -> bytes:
    """Where git sorts an entry: a folder as if its name ended with a slash."""
    return name + b"/" if mode == "040000" else name


def _serialize(name: bytes, entry: tuple[str, str]) -> bytes:
    return entry[0].lstrip("0").encode() + b" " + name + b"\0" + bytes.fromhex(entry[1])


class Trees(Objects):
    def ls_tree(self, tree: str, path: str | None = None) -> dict[str, tuple[str, str]]:
        """path -> (mode, id) for the files of a tree (recursively), or of one folder of it."""
        args = ["ls-tree", "-r", "-z", "--full-tree", "--end-of-options", tree]
        if path:
            args += ["--", path]
        return _ls_records(self.run(*args).stdout)

    def ls_tree_paths(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """path -> (mode, object id) for exactly these paths of a tree or commit (missing ones
        left out), read through the persistent ``cat-file`` (`entries_at`), not a process."""
        if not paths:
            return {}
        return self.entries_at(self.trees_of([tree])[0], list(paths))

    def show_file(self, rev: str, path: str) -> bytes | None:
        """The bytes of ``path`` in ``rev``, or None when it has no such file: one question
        to the persistent ``cat-file`` (``<rev>:<path>``), answered with the object (a tree
        or a gitlink's commit is no file)."""
        if "\n" in path or path.startswith(("./", "../")) or not path:
            found = self.ls_tree_paths(rev, [path]).get(path)
            if found is None or found[0] == "040000" or found[0] == "160000":
                return None
            return self.read_blob(found[1])
        got = self.read_object(f"{rev}:{path}")
        return got[1] if got is not None and got[0] == "blob" else None

    def entries_at(self, tree: str, paths: Sequence[str]) -> dict[str, tuple[str, str]]:
        """path -> (mode, id) of these paths in ``tree`` (folders too; missing ones left out),
        read through the persistent ``cat-file``, one pipelined batch of trees per depth."""
        return self.entries_in([tree], paths)[0]

    def entries_in(
        self, trees: Sequence[str], paths: Sequence[str]
    ) -> list[dict[str, tuple[str, str]]]:
        """`entries_at` of each of ``trees``, all read together: one batch per depth."""
        found: list[dict[str, tuple[str, str]]] = [{} for _ in trees]
        memo = self._memo
        split = [(p, encode_path(p).split(b"/")) for p in paths]
        pending = [(k, p, parts, 0, t) for k, t in enumerate(trees) for p, parts in split]
        while pending:
            self._read_trees([t for *_, t in pending])
            deeper = []
            for k, path, parts, i, at in pending:
                entry = memo[("tree-records", at)].get(parts[i])
                if entry is None:
                    continue
                if i == len(parts) - 1:
                    found[k][path] = entry
                elif entry[0] == "040000":
                    deeper.append((k, path, parts, i + 1, entry[1]))
            pending = deeper
        return found

    def tree_changes(
        self, old: str, new: str, within: Container[str]
    ) -> dict[str, tuple[str, str] | None]:
        """path -> its entry in ``new`` (None: absent) for the paths of ``within`` whose entry
        differs between the trees ``old`` and ``new``. ``within`` must hold every folder of
        each of its paths (as `entries_at`'s callers keep them): only folders it holds are
        entered, and only where the two trees differ, so the cost is that of the change."""
        changed: dict[str, tuple[str, str] | None] = {}
        pending: list[tuple[str, str | None, str | None]] = [("", old, new)]
        while pending:
            self._read_trees([t for _, a, b in pending for t in (a, b) if t is not None])
            deeper: list[tuple[str, str | None, str | None]] = []
            for prefix, a, b in pending:
                left, right = self._tree_records(a), self._tree_records(b)
                for name in left.keys() | right.keys():
                    was, now = left.get(name), right.get(name)
                    if was == now:
                        continue
                    path = prefix + decode_path(name)
                    if path not in within:
                        continue
                    changed[path] = now
                    sub_a = was[1] if was is not None and was[0] == "040000" else None
                    sub_b = now[1] if now is not None and now[0] == "040000" else None
                    if sub_a is not None or sub_b is not None:
                        deeper.append((path + "/", sub_a, sub_b))
            pending = deeper
        return changed

    def changed_entries(self, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
        """The raw diff of two trees (``diff-tree -r --no-renames``: (old mode, new mode, old
        id, new id, path), "000000" and the null id for a side that has no such file), walked
        in process through the folders that differ: for a patch's change, a few trees; asked
        of git once more than ``TREES_IN_PROCESS`` trees would be read (a pop of 300 patches
        differs in ~760: 0.1 s in Python, a few milliseconds in ``diff-tree``). Kept for the
        command by the two ids (a refresh's stop asks the move's diff three times), either way
        round: the diff of ``new`` to ``old`` is this one's sides swapped (a stop's publish
        asks its index's diff one way, the snapshot derived after it the other)."""
        fixed = self.is_id(old) and self.is_id(new)
        if fixed and ("changed-entries", old, new) in self._memo:
            return list(self._memo[("changed-entries", old, new)])
        if fixed and ("changed-entries", new, old) in self._memo:
            swapped = self._memo[("changed-entries", new, old)]
            return [(nm, om, no, oo, path) for om, nm, oo, no, path in swapped]
        found = self._changed_entries(old, new)
        if fixed:
            self._memo[("changed-entries", old, new)] = tuple(found)
        return found

    def folder_for_file(self, old: str, new: str) -> bool:
        """Has the tree ``new`` a folder at a path where ``old`` has a file (a blob, a link or a
        gitlink)? Walked in process through the folders that differ, level by level; each pair
        of folders found to have none is remembered for the command, so that the trees of one
        replay (which share most of their folders with its two bases) are compared once."""
        clean: set[tuple[str, str]] = self._memo.setdefault(("folder-for-file",), set())
        pending = [(old, new)]
        seen: list[tuple[str, str]] = []
        while pending:
            pending = [p for p in dict.fromkeys(pending) if p not in clean and p[0] != p[1]]
            self._read_trees([t for pair in pending for t in pair])
            deeper: list[tuple[str, str]] = []
            for a, b in pending:
                right = self._tree_records(b)
                for name, was in self._tree_records(a).items():
                    now = right.get(name)
                    if now is None or now == was or now[0] != "040000":
                        continue
                    if was[0] != "040000":
                        return True
                    deeper.append((was[1], now[1]))
            seen += pending
            pending = deeper
        clean.update(seen)
        return False

    def is_id(self, name: str) -> bool:
        """Is ``name`` an object id (what it names never changes), not a ref or a revision?"""
        return len(name) == self.fmt.hexsz and _HEXDIGITS.issuperset(name)

    def _changed_entries(self, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
        null_mode, null = "000000", self.fmt.null
        out: list[tuple[str, str, str, str, str]] = []
        pending: list[tuple[str, str | None, str | None]] = [("", old, new)]
        budget = TREES_IN_PROCESS
        while pending:
            budget -= 2 * len(pending)
            if budget < 0:
                return self._diff_tree(old, new)
            self._read_trees([t for _p, a, b in pending for t in (a, b) if t is not None])
            deeper: list[tuple[str, str | None, str | None]] = []
            for prefix, a, b in pending:
                left, right = self._tree_records(a), self._tree_records(b)
                for name in sorted(left.keys() | right.keys()):
                    was, now = left.get(name), right.get(name)
                    if was == now:
                        continue
                    path = prefix + decode_path(name)
                    was_dir = was is not None and was[0] == "040000"
                    now_dir = now is not None and now[0] == "040000"
                    if was_dir or now_dir:
                        deeper.append(
                            (
                                path + "/",
                                was[1] if was_dir and was else None,
                                now[1] if now_dir and now else None,
                            )
                        )
                    if was is not None and not was_dir and (now is None or now_dir):
                        out.append((was[0], null_mode, was[1], null, path))
                    elif now is not None and not now_dir and (was is None or was_dir):
                        out.append((null_mode, now[0], null, now[1], path))
                    elif was is not None and now is not None and not was_dir and not now_dir:
                        out.append((was[0], now[0], was[1], now[1], path))
            pending = deeper
        return sorted(out, key=lambda d: d[4])

    def _diff_tree(self, old: str, new: str) -> list[tuple[str, str, str, str, str]]:
        """`changed_entries` as git's ``diff-tree -r`` gives it."""
        out = self.run(
            "diff-tree", "-r", "-z", "--no-renames", "--full-index", "--end-of-options", old, new
        ).stdout
        found: list[tuple[str, str, str, str, str]] = []
        fields = out.split(b"\0")
        for k in range(0, len(fields) - 1, 2):
            om, nm, oo, no, _status = fields[k][1:].decode().split(" ")
            found.append((om, nm, oo, no, decode_path(fields[k + 1])))
        return sorted(found, key=lambda d: d[4])

    def files_of(self, tree: str) -> dict[str, tuple[str, str]]:
        """path -> (mode, id) of every entry but folders under ``tree``, read through the
        persistent ``cat-file`` (for small trees: no ``ls-tree`` process)."""
        found: dict[str, tuple[str, str]] = {}
        pending = [("", tree)]
        while pending:
            self._read_trees([t for _p, t in pending])
            deeper = []
            for prefix, at in pending:
                for name, (mode, oid) in self._tree_records(at).items():
                    path = prefix + decode_path(name)
                    if mode == "040000":
                        deeper.append((path + "/", oid))
                    else:
                        found[path] = (mode, oid)
            pending = deeper
        return found

    def _read_trees(self, trees: Sequence[str]) -> None:
        """Read and remember the entries of these trees (a tree's entries never change)."""
        memo = self._memo
        wanted = [t for t in dict.fromkeys(trees) if ("tree-records", t) not in memo]
        if not wanted:
            return
        for tree, found in zip(wanted, self.read_objects(wanted), strict=True):
            if found is None or found[0] != "tree":
                raise PatchstackError(f"not a tree: {tree}")
            self._memo[("tree-records", tree)] = tree_records(found[1], self.fmt.hexsz // 2)

    def _tree_records(self, tree: str | None) -> dict[bytes, tuple[str, str]]:
        if tree is None:
            return {}
        self._read_trees([tree])
        records: dict[bytes, tuple[str, str]] = self._memo[("tree-records", tree)]
        return records

    def edit_tree(self, tree: str, changes: Mapping[str, tuple[str, str] | None]) -> Oid:
        """``tree`` with each path of ``changes`` set to its (mode, id), or removed (None);
        folders are made as needed and a folder left empty goes. Written in process, as
        loose objects, from the trees already read (no temporary index, no process)."""
        if self.compat_format():
            return self._edit_with_index(tree, changes)
        edits = {tuple(encode_path(p).split(b"/")): e for p, e in changes.items()}
        return Oid(self._edit(tree, edits) or self.write_loose("tree", b""))

    def _edit(
        self, tree: str | None, edits: Mapping[tuple[bytes, ...], tuple[str, str] | None]
    ) -> str | None:
        # A folder given the same edits again is the tree made before: a check's proofs edit
        # the trees of consecutive patches at the same paths (`engine.needs`), and most of
        # their folders are the same (in the same object store: the scratch one, or none).
        key = ("edited", self.scratch, tree, frozenset(edits.items()))
        if key in self._memo and not os.environ.get(EDITS_OFF):
            made: str | None = self._memo[key]
            return made
        made = self._edited(tree, edits)
        self._memo[key] = made
        return made

    def _edited(
        self, tree: str | None, edits: Mapping[tuple[bytes, ...], tuple[str, str] | None]
    ) -> str | None:
        records = self._tree_records(tree)
        changes: dict[bytes, tuple[str, str] | None] = {}
        deeper: dict[bytes, dict[tuple[bytes, ...], tuple[str, str] | None]] = {}
        for parts, entry in edits.items():
            if len(parts) > 1:
                deeper.setdefault(parts[0], {})[parts[1:]] = entry
            elif entry is None:
                had = changes[parts[0]] if parts[0] in changes else records.get(parts[0])
                if had is not None and had[0] != "040000":  # (a folder: no file to remove)
                    changes[parts[0]] = None
            else:  # (as `tree_records` reads it back: six digits, lowercase)
                changes[parts[0]] = (entry[0].rjust(6, "0"), entry[1].lower())
        for name, sub in deeper.items():
            now = changes[name] if name in changes else records.get(name)
            folder = now is not None and now[0] == "040000"
            made = self._edit(now[1] if now is not None and folder else None, sub)
            if made is not None:
                changes[name] = ("040000", made)
            elif folder:  # (emptied; under a file, nothing was there to remove)
                changes[name] = None
        kept = dict(records)
        for name, entry in changes.items():
            if entry is None:
                kept.pop(name, None)
            else:
                kept[name] = entry
        if not kept:
            return None
        # The entries in git's order, each serialized once: an edit changes the few it names
        # (found by bisection), not all n sorted and written again (a replay's large folders).
        entries, keys = self._serialized(tree, records)
        entries, keys = list(entries), list(keys)
        for name, entry in changes.items():
            had = records.get(name)
            if had is not None:
                i = bisect.bisect_left(keys, _sort_key(name, had[0]))
                del entries[i], keys[i]
            if entry is not None:
                key = _sort_key(name, entry[0])
                i = bisect.bisect_left(keys, key)
                entries.insert(i, _serialize(name, entry))
                keys.insert(i, key)
        data = b"".join(entries)
        made = self.write_loose("tree", data)
        if not os.environ.get(WRITTEN_OFF):
            # Read back as `_read_trees` would (a replay's next step reads the tree it just
            # made, folder by folder): no ``cat-file`` round trip for what was just written.
            names = (k[:-1] if k.endswith(b"/") else k for k in keys)  # (names hold no /)
            self._memo[("tree-records", made)] = {n: kept[n] for n in names}  # git's order
            self._memo[("tree-serialized", made)] = (entries, keys)
        return made

    def _serialized(
        self, tree: str | None, records: Mapping[bytes, tuple[str, str]]
    ) -> tuple[list[bytes], list[bytes]]:
        """``records`` (``tree``'s) as the entries of a tree object, in git's order, with
        their sort keys: what `_edited` splices."""
        if tree is None:
            return [], []
        found: tuple[list[bytes], list[bytes]] | None = self._memo.get(("tree-serialized", tree))
        if found is None:
            ordered = sorted((_sort_key(n, r[0]), n, r) for n, r in records.items())
            found = ([_serialize(n, r) for _k, n, r in ordered], [k for k, _n, _r in ordered])
            self._memo[("tree-serialized", tree)] = found
        return found

    def tree_with_files(self, tree: str, paths: Sequence[str]) -> Oid | None:
        """``tree`` with ``paths`` as the work tree holds them (a missing one removed), the tree
        ``git add -A --force`` of them into an index of ``tree`` writes, made from the files'
        bytes and modes (one ``hash-object``, one ``check-attr``; no index of the whole tree).
        None where git's staging may be other than the bytes: an attribute of one of them
        (filters, end-of-line, ...), ``core.autocrlf``, ``core.fileMode``, ``core.symlinks``
        off, ``core.ignoreCase``; a folder, a submodule or a symbolic link in a path's way;
        or ``PATCHSTACK_NO_TOUCHED_TREE=1``: the caller stages them with git then."""
        if os.environ.get("PATCHSTACK_NO_TOUCHED_TREE") or not self._plain_staging():
            return None
        had = self.ls_tree_paths(tree, paths)
        if any(mode in ("040000", "160000") for mode, _oid in had.values()):
            return None
        changes: dict[str, tuple[str, str] | None] = {}
        files: list[tuple[str, str]] = []
        for path in dict.fromkeys(paths):
            full = os.path.join(self.top, path)
            if not _plain_folders(self.top, path):
                return None
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                if path in had:  # (one in neither place is no change: not a file it is under)
                    changes[path] = None
                continue
            mode = staged_mode(st)
            if mode is None:
                return None
            if mode == "120000":
                changes[path] = self.write_file(full, st)
            else:  # (one hash-object for them all)
                files.append((path, mode))
        if paths:
            asked = b"".join(encode_path(p) + b"\0" for p in paths)
            if self.run("check-attr", "-a", "-z", "--stdin", input=asked).stdout:
                return None
        oids = self.hash_files([os.path.join(self.top, p) for p, _mode in files])
        changes.update((p, (mode, oid)) for (p, mode), oid in zip(files, oids, strict=True))
        return self.edit_tree(tree, changes)

    def _plain_staging(self) -> bool:
        """Whether ``git add`` stores a file's bytes and mode as they are, but for attributes
        (a key set without a value, true to git, is read here as empty: not plain)."""

        def given(key: str, plain: tuple[str, ...]) -> bool:
            value = self.config(key)
            return value is None or value.lower() in plain  # (unset: git's default, plain)

        off, on = ("false", "no", "off", "0"), ("true", "yes", "on", "1")
        return all(given(k, off) for k in _OFF) and all(given(k, on) for k in _ON)

    def _edit_with_index(self, tree: str, changes: Mapping[str, tuple[str, str] | None]) -> Oid:
        records = [(e[0], e[1], p) if e else ("0", self.fmt.null, p) for p, e in changes.items()]
        with TempIndex(self) as idx:
            idx.read_tree(tree)
            idx.set_entries(records)
            return idx.write_tree()
