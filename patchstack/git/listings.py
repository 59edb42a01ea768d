"""Listings: differences and the work tree's state, every one read with ``-z`` (paths as
bytes, decoded one way, see `base.decode_path`); trees are read in `trees`, history in
`history`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import PatchstackError
from ..model.ids import Oid
from .base import decode_path, under_any
from .history import PATHSPEC_MAX, History, _diff_header
from .hunks import parse_hunks

PATHSPEC_BYTES = 20_000  # beyond, a diff is of every path (and the caller picks its own)
RawDiff = tuple[str, str, str, str, str]  # (old mode, new mode, old id, new id, path)


@dataclass(frozen=True)
class DirtyState:
    """Uncommitted state of the work tree relative to HEAD (series directory excluded)."""

    modified: tuple[str, ...]  # tracked paths whose index or work tree differs from HEAD
    untracked: tuple[str, ...]
    unmerged: tuple[str, ...]
    partly_staged: tuple[str, ...] = ()  # staged, then edited again: index != HEAD, work tree
    # submodules whose own files are edited or untracked while the commit they are at is the
    # one recorded: no patch can hold that (a patch holds only which commit a submodule is at)
    submodules: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not (self.modified or self.untracked or self.unmerged or self.submodules)


class Listings(History):
    # -- differences -----------------------------------------------------------------------------

    def changed_paths(self, a: str, b: str) -> list[str]:
        """Paths that differ between two trees or commits (walked in process through the
        folders that differ, `changed_entries`)."""
        old, new = self.trees_of([a, b])
        return [d[4] for d in self.changed_entries(old, new)]

    def raw_diffs(self, pairs: Sequence[tuple[str, str]]) -> list[list[RawDiff]]:
        """For each (old, new) pair of tree ids (not commits): [(old_mode, new_mode, old_id,
        new_id, path)], batched in one process; kept for the command by the two ids (a refresh
        asked its series' diffs twice, for the proofs and the replay)."""
        memo = self._memo
        todo = [p for p in dict.fromkeys(pairs) if ("raw-diff", *p) not in memo]
        got = dict(zip(todo, self._raw_diffs(todo), strict=True)) if todo else {}
        for (a, b), found in got.items():
            if self.is_id(a) and self.is_id(b):
                memo[("raw-diff", a, b)] = tuple(found)
        return [list(got[p] if p in got else memo[("raw-diff", *p)]) for p in pairs]

    def _raw_diffs(self, pairs: Sequence[tuple[str, str]]) -> list[list[RawDiff]]:
        stdin = "".join(f"{old} {new}\n" for old, new in pairs).encode()
        out = self.run(
            "diff-tree",
            "--stdin",
            "-r",
            "-z",
            "--no-renames",
            "--no-commit-id",
            "--full-index",
            input=stdin,
        ).stdout
        # For each input pair diff-tree echoes "<old> <new>\n", then NUL-separated raw records.
        result: list[list[RawDiff]] = []
        pos = 0
        while pos < len(out):
            if out[pos : pos + 1] == b":":
                meta_end = out.index(b"\0", pos)
                path_end = out.index(b"\0", meta_end + 1)
                om, nm, oo, no, _status = out[pos + 1 : meta_end].decode().split(" ")
                result[-1].append((om, nm, oo, no, decode_path(out[meta_end + 1 : path_end])))
                pos = path_end + 1
            else:
                pos = out.index(b"\n", pos) + 1
                result.append([])
        if len(result) != len(pairs):
            raise PatchstackError(f"git diff-tree answered {len(result)} of {len(pairs)} pairs")
        return result

    def commit_files(self, commits: Sequence[tuple[Oid, tuple[Oid, ...]]]) -> list[list[str]]:
        """The paths each commit changed against its first parent (all paths of a root)."""
        # raw_diffs takes trees: for a pair of commits diff-tree --stdin echoes nothing.
        wanted = list(dict.fromkeys(c for oid, parents in commits for c in (oid, *parents[:1])))
        tree = dict(zip(wanted, self.trees_of(wanted), strict=True))
        pairs = [
            (tree[parents[0]] if parents else self.fmt.empty_tree, tree[oid])
            for oid, parents in commits
        ]
        return [[d[4] for d in raw] for raw in self.raw_diffs(pairs)]

    def diff_patch(self, a: str, b: str, paths: Sequence[str] = ()) -> bytes:
        """The full-index binary patch from tree ``a`` to ``b`` (no renames); with ``paths``,
        of those paths (and what is under them) only."""
        limit = [] if not paths or sum(map(len, paths)) > PATHSPEC_BYTES else ["--", *paths]
        return self.run(
            "diff-tree",
            "-p",
            "--no-renames",
            "--full-index",
            "--binary",
            "--no-ext-diff",
            "--no-color",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            "--end-of-options",
            a,
            b,
            *limit,
        ).stdout

    def diff_patches(self, pairs: Sequence[tuple[str, str]], paths: Sequence[str]) -> list[bytes]:
        """`diff_patch` of each (old, new) pair of trees or commits, limited to ``paths`` (or
        not at all: the caller picks its files), all from one ``diff-tree --stdin``: git
        echoes each pair's two tree ids before its patch, a line no patch line can be (a
        patch's lines start with a space, ``+``, ``-``, ``\\`` or a header word; a binary
        one's base85 holds no space)."""
        if not pairs:
            return []
        trees = self.trees_of([x for pair in pairs for x in pair])
        echoes = [f"{trees[2 * k]} {trees[2 * k + 1]}\n".encode() for k in range(len(pairs))]
        wide = not paths or sum(map(len, paths)) > PATHSPEC_BYTES
        out = self.run(
            "diff-tree", "--stdin", "-p", "--no-renames", "--full-index", "--binary",
            "--no-ext-diff", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
            *([] if wide else ["--", *paths]), input=b"".join(echoes),
        ).stdout  # fmt: skip
        if not out.startswith(echoes[0]):
            raise PatchstackError("git diff-tree --stdin did not echo the first pair")
        starts = [0]
        for echo in echoes[1:]:
            at = out.find(b"\n" + echo, starts[-1] + len(echoes[len(starts) - 1]) - 1)
            if at < 0:
                raise PatchstackError(f"git diff-tree --stdin did not echo pair {len(starts)}")
            starts.append(at + 1)
        ends = [*starts[1:], len(out)]
        return [out[s + len(e) : t] for s, e, t in zip(starts, echoes, ends, strict=True)]

    def commit_diff(self, commit: str, paths: Sequence[str]) -> bytes:
        """What ``commit`` did to ``paths`` (against its first parent), as a text patch."""
        return self.run(
            "diff-tree", "-p", "--root", "--no-commit-id", "--first-parent", "--no-renames",
            "--no-ext-diff", "--no-textconv", "--no-color", "--end-of-options", commit, "--",
            *paths,
        ).stdout  # fmt: skip

    def line_hunks(
        self, a: str, b: str, paths: Sequence[str]
    ) -> dict[str, tuple[tuple[int, int, int, int], ...]]:
        """The ``-U0`` hunks of ``a`` to ``b`` (trees or commits) in each text file of ``paths``
        that differs, as (old start, old count, new start, new count) as git writes them; a
        binary file has none."""
        if not paths:
            return {}
        args = ["diff-tree", "-p", "-U0", "-r", "--no-renames", "--no-color", "--no-ext-diff"]
        args += ["--no-textconv", "--end-of-options", a, b, "--", *paths]
        out = self.run(*args).stdout
        headers = {_diff_header(p): p for p in paths}
        return {headers[h]: s for h, s in parse_hunks(out)[0].items() if h in headers}

    # -- the work tree ---------------------------------------------------------------------------

    def dirty(self, exclude: str | None = None, paths: Sequence[str] | None = None) -> DirtyState:
        """What is uncommitted; ``exclude`` is a folder (relative to top) to leave out.

        With ``paths``, only those are looked at (``status`` then refreshes only their stat
        information in the index, which is what a later ``read-tree -m -u`` of them needs).
        """
        if paths is not None and not paths:
            return DirtyState((), (), ())
        # git matches a long pathspec slowly (1,100 paths of a 6,000-file tree: 1.2 s, the
        # whole tree 0.15 s): beyond a few paths, everything is looked at and the records
        # kept as the literal pathspec would keep them (the path, or a path under it).
        asked = set(paths) if paths is not None and len(paths) > PATHSPEC_MAX else None
        out = self.run(
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=none",
            "--",
            *(paths if paths is not None and asked is None else ()),
        ).stdout
        modified, untracked, unmerged, partly, inside = [], [], [], [], []
        prefix = (exclude.rstrip("/") + "/") if exclude else None
        for rec in out.split(b"\0"):
            kind = rec[:2]
            if kind not in (b"1 ", b"u ", b"? "):
                continue  # (renames are off: no "2" records; ignored files are not asked)
            fields = rec.split(b" ", {b"1 ": 8, b"u ": 10, b"? ": 1}[kind])
            path = decode_path(fields[-1])
            if prefix and (path + "/").startswith(prefix):
                continue
            if asked is not None and not under_any(path, asked):
                continue
            if kind == b"? ":
                untracked.append(path)
                continue
            xy, sub = fields[1].decode(), fields[2].decode()
            if kind == b"u ":
                unmerged.append(path)
            elif sub.startswith("S") and sub[1] != "C" and xy[0] == ".":
                inside.append(path)  # only the submodule's own files changed
            else:
                modified.append(path)
                if xy[0] != "." and xy[1] != ".":
                    partly.append(path)
        return DirtyState(
            tuple(modified), tuple(untracked), tuple(unmerged), tuple(partly), tuple(inside)
        )
