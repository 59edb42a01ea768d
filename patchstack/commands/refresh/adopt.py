"""``new NAME --tag T --from-commit REV``: a commit made by hand on top of the applied patches
becomes a patch at its place: the patch commit has its tree, author, date and (unless ``-m``)
message, plus the trailers; commits made by hand above it stay on top, with their trees. The
work tree does not change. Commits on top are adopted from the bottom up, one at a time."""

from __future__ import annotations

from ...checkout import Checkout
from ...errors import PatchstackError
from ...git import Git
from ...model import message, trailers
from ...model.ids import Oid
from ...model.patchfile import parse_patch
from ...model.series import Entry, parse_tags
from ...model.stack import Stack, stack_from_history
from ...transaction import Plan, publish
from ..naming import new_patch_name, require_free
from ..new import NewResult, patch_files
from ..reword import reparent
from ..state import read_stack, require_base, resolve_rev


def adopt(ws: Checkout, name: str, tag_text: str, rev: str, text: str | None) -> NewResult:
    git = ws.git
    name = new_patch_name(name)
    tag, labels = parse_tags(tag_text, "--tag", 0)
    series = ws.load_series()
    require_free(ws, series, name)
    head = read_stack(git).head
    commit = resolve_rev(git, rev)
    above = _plain_line(git, head, commit, rev)
    meta = git.commit_range(f"{commit}~1..{commit}")[0]
    parent = meta.parents[0]
    below = stack_from_history(parent, git.iter_first_parent(parent))
    _require_on_top(series.base, below, rev)
    require_base(series, below)
    subject, description = message.split(text or meta.message)
    if not subject:
        raise PatchstackError(f"'{rev}' has no message", "give one with -m")
    own = trailers.write(message.join(subject, description), name, tag)
    patch_commit = reparent(git, parent, [meta], {meta.oid: (own, meta.author)})
    rest = git.commit_range(f"{commit}..{head}") if above else []
    new_head = reparent(git, patch_commit, rest, {}) if rest else patch_commit
    data = trailers.strip_from_mail(git.format_patch(patch_commit))
    patch = parse_patch(data, name)  # what we write must read back
    files, moved = patch_files(ws, series, below, Entry(name, tag, labels), data)
    publish(ws, Plan("new", head, new_head, files))
    return NewResult(name, tag, patch_commit, patch.paths, (), ws.patch_path(name), moved)


def _plain_line(git: Git, head: Oid, commit: Oid, rev: str) -> list[Oid]:
    """The commits above ``commit`` on HEAD's first-parent line (refused unless each, and
    ``commit`` itself, is a plain commit with one parent)."""
    above: list[Oid] = []
    for info in git.iter_first_parent(head):
        plain = trailers.read(info.message).patch is None and len(info.parents) == 1
        if info.oid == commit:
            if not plain:
                raise PatchstackError(
                    f"'{rev}' is already a patch or a merge", "name a plain commit with one parent"
                )
            return above
        if not plain:
            break
        above.append(info.oid)
    raise PatchstackError(
        f"'{rev}' is not a commit made on top of the applied patches",
        "name one of the plain commits between the top applied patch and HEAD",
    )


def _require_on_top(base: str | None, below: Stack, rev: str) -> None:
    if (below.applied and not below.on_top) or (not below.applied and below.head == base):
        return
    raise PatchstackError(
        f"'{rev}' is not right above the top applied patch or the series base",
        "turn the commits on top into patches from the bottom up, the lowest first",
    )
