"""Import and export: quilt series, git commit ranges and mboxes.

Import reads patches from elsewhere and writes them into the series directory in patchstack's
own form. It never touches the work tree, the index or the branch: it plans in the object
database and writes only files of the series directory (patch files first, the series file last,
each atomically). ``patchstack push --all`` then applies them.

How a patch is imported. Every patch is made a commit on a throwaway chain that starts at the
series base (or, with ``--append``, at the base plus every patch already in the series): patch k
is applied on the tree after patch k-1 with ``git apply --cached`` on a temporary index, which
allows line offsets but never fuzz. The patch files are then regenerated from that chain with
one ``git format-patch`` (full index lines, ``-p1``), so an imported file says exactly what
its commit does, and the ``-pN`` of a quilt entry is no longer needed.

A patch that does not apply exactly (quilt would need fuzz) is never applied with fuzz. It is
merged three-way instead, and the import report names it:

1. when its ``index`` lines name blobs this repository has, those are its real preimage: apply
   the patch to them and merge the result into the chain with ``merge-tree`` (what ``git am -3``
   does);
2. otherwise the preimage is rebuilt from the patch itself: find where each hunk belongs the way
   ``patch --fuzz=2`` would (`locate_preimage`), put the hunk's own context and removed lines
   there, apply the patch to that exactly, and merge. The lines fuzz would have ignored are then
   a change on "our" side, and git's merge refuses when it touches the patch's own lines, where
   fuzz would silently apply the change to the wrong code.

Commits of a range are carried like a cherry-pick: the commit's tree is used as it is when the
chain is at its parent, and merged three-way otherwise.

Tags: a quilt entry's comment is read as patchstack tags (``# essential, nvidia``) or as
Mercurial MQ / guilt guards (``#+essential #-foo``: a positive guard that names a tag sets it,
other guards are kept as labels); a commit's or mail's ``Patchstack-Tag:`` trailer sets its tag
(and ``Patchstack-Patch:`` its name). Patches still without a tag get ``--tag``; without it the
import stops with exit status 2 and lists them, having written nothing.

A series that already has patches is never silently extended: ``--append`` says so.

Export writes what other tools apply: ``export quilt`` a series file (tags in comments, which
quilt ignores) and the patch files, after proving that each applies exactly on the base plus the
patches before it (so ``quilt push -a --fuzz=0`` applies them); ``export mbox`` one mail per
patch from the canonical chain, with the ``Patchstack-Patch``/``Patchstack-Tag`` trailers, so
``git am`` applies it and ``import mbox`` or ``import commits`` gets names and tags back.
"""

from ..model.imported import (
    comment_tags,
    locate_preimage,
    normalize_author,
    normalize_date,
    parse_quilt_series,
    quilt_name,
    slug,
)
from .exporting import ExportResult, export_mbox, export_quilt
from .importing import Imported, ImportResult, import_commits, import_mbox, import_quilt
from .sources import split_own_trailers

__all__ = [
    "ExportResult",
    "ImportResult",
    "Imported",
    "comment_tags",
    "export_mbox",
    "export_quilt",
    "import_commits",
    "import_mbox",
    "import_quilt",
    "locate_preimage",
    "normalize_author",
    "normalize_date",
    "parse_quilt_series",
    "quilt_name",
    "slug",
    "split_own_trailers",
]
