"""Three-way merges of trees in the object database (``merge-tree --write-tree``, merge-ort):
no index, no work tree.

git < 2.40 has no ``merge-tree --merge-base``; two throwaway commits sharing a parent whose tree
is the wanted base make git find exactly that merge base. Their ids then label the conflict
markers inside merged files; `MergeResult.sides` maps them to the caller's labels, and putting
readable labels into the markers is the caller's business (see `engine.merging`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import GitFailure
from ..model.ids import Oid
from .base import decode_path
from .fastimport import FastImport
from .objects import Objects

# Who and when of the throwaway commits.
SYNTHETIC = ("patchstack <patchstack@invalid>", "1000000000 +0000")


@dataclass(frozen=True)
class MergeResult:
    tree: Oid
    clean: bool
    conflicted: tuple[str, ...]  # paths
    messages: str  # git's informational messages, one a line
    sides: tuple[tuple[str, str], ...] = ()  # (commit id in the markers, the caller's label)


class Merges(Objects):
    def merge_trees(
        self, base: str, ours: str, theirs: str, labels: tuple[str, str]
    ) -> MergeResult:
        """Merge ``base -> theirs`` into ``ours``; ``labels`` name ours and theirs."""
        ident, date = SYNTHETIC
        b = self._memo.get(("synthetic", base)) or self.commit_tree(base, [], "base\n", ident, date)
        t = self._memo.get(("synthetic", theirs, b, labels[1])) or self.commit_tree(
            theirs, [b], labels[1] + "\n", ident, date
        )
        o = self.commit_tree(ours, [b], labels[0] + "\n", ident, date)
        proc = self.run(
            "-c",
            "merge.conflictStyle=diff3",
            "-c",
            "merge.renames=true",
            "merge-tree",
            "--write-tree",
            "--messages",
            "--name-only",
            "-z",
            o,
            t,
            check=False,
        )
        if proc.returncode not in (0, 1):
            err = proc.stderr.decode("utf-8", "replace").strip()
            raise GitFailure(f"git merge-tree failed: {err}")
        tree, conflicted, messages = parse_merge_tree(proc.stdout)
        return MergeResult(
            tree, proc.returncode == 0, conflicted, messages, ((o, labels[0]), (t, labels[1]))
        )

    def prepare_merges(self, sides: Sequence[tuple[str, str, str]]) -> None:
        """Make the throwaway base and "theirs" commits of future `merge_trees` calls,
        (base tree, theirs tree, theirs label) each, in one fast-import stream."""
        ident, date = SYNTHETIC
        stream = FastImport(self)
        try:
            for base, theirs, label in sides:
                if ("synthetic", base) not in self._memo:
                    self._memo[("synthetic", base)] = stream.commit(
                        "", ident, date, b"base\n", [("040000", base, "")]
                    )
                b = self._memo[("synthetic", base)]
                self._memo[("synthetic", theirs, b, label)] = stream.commit(
                    b,
                    ident,
                    date,
                    label.encode("utf-8", "surrogateescape") + b"\n",
                    [("040000", theirs, "")],
                )
        finally:
            stream.close()


def parse_merge_tree(out: bytes) -> tuple[Oid, tuple[str, ...], str]:
    """(tree, conflicted paths, messages) of ``merge-tree --write-tree --messages --name-only
    -z`` output: ``<tree>NUL<path>NUL...NUL NUL`` then records of ``<n>NUL<path>NUL...<type>NUL
    <message>NUL``."""
    fields = out.split(b"\0")
    tree = Oid(fields[0].decode().strip())
    i = 1
    conflicted: list[str] = []
    while i < len(fields) and fields[i]:
        conflicted.append(decode_path(fields[i]))
        i += 1
    i += 1
    messages: list[str] = []
    while i < len(fields):
        if not fields[i].isdigit():
            i += 1
            continue
        n = int(fields[i])
        msg_at = i + 1 + n + 1
        if msg_at < len(fields):
            messages.append(fields[msg_at].decode("utf-8", "surrogateescape").rstrip("\n"))
        i = msg_at + 1
    return tree, tuple(dict.fromkeys(conflicted)), "\n".join(messages)
