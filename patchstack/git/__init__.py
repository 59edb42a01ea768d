"""The git boundary: the only package that runs git.

Everything else sees object ids (`model.ids.Oid`) and plain values. Reads go through a
persistent ``git cat-file --batch`` where many objects are read; writes use plumbing:
``hash-object``, ``mktree``, ``commit-tree``, ``fast-import`` streams, ``apply --cached`` and
``write-tree`` against a temporary index, ``merge-tree --write-tree`` for three-way merges, and
``update-ref --stdin`` transactions with expected old values. The work tree is changed by
``read-tree -m -u`` from the old tree to the new one, which carries the user's uncommitted edits
and refuses to overwrite them.

Every listing is read with ``-z``; paths are bytes decoded one way (UTF-8 with surrogate
escapes, `base.decode_path`); pathspecs are literal; the user's configuration cannot change what
plumbing prints (`process`); the object format (SHA-1 or SHA-256) is read from the repository.
This package holds no domain logic: no trailers, no series, no conflict-marker rules.

Parts: `process` (running git), `objects` (reading and writing objects), `scratch` (a store for
throwaway objects), `trees` (listing and
reading trees), `listings` (diffs, status, history), `refs` (refs, configuration, transactions),
`worktree` (the real index and work tree), `linked` (linked worktrees), `index` (temporary
indexes), `merge` (merge-tree), `fastimport`, `mail` (format-patch, mailsplit, mailinfo), `repo`
(the `Git` class that joins them).
"""

from ..model.ids import Oid
from .fastimport import FastImport
from .history import CommitMeta, CommitRecord
from .index import TempIndex
from .linked import WorktreeInfo
from .listings import DirtyState, RawDiff
from .merge import MergeResult
from .process import check_version
from .refs import RefTransactionFailed, RefUpdate
from .repo import Git, clone, find_repo, ident_env, init_repo
from .worktree import HeldIndex, index_locked

__all__ = [
    "CommitMeta",
    "CommitRecord",
    "DirtyState",
    "FastImport",
    "Git",
    "HeldIndex",
    "MergeResult",
    "Oid",
    "RawDiff",
    "RefTransactionFailed",
    "RefUpdate",
    "TempIndex",
    "WorktreeInfo",
    "check_version",
    "clone",
    "find_repo",
    "index_locked",
    "ident_env",
    "init_repo",
]
