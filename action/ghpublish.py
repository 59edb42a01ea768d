"""The refresh bot's ``publish: ff``: the refreshed fork published as a fast-forward of the
fork's branch, so that every consumer (a teammate, CI, a deployment) follows the fork with
``git pull --ff-only`` across refreshes, once the bot's pull request is merged.

The fork's branch holds the series folder and the code, in one of two layouts, told apart by
its tree: the series applied (the upstream base plus every patch that is not deferred, as
``patchstack push --all`` makes it) or the upstream base alone (the patches kept only as
files). The bot publishes the same layout on the new base: a merge whose first parent is the
refreshed fork (the new base, and the patch commits in the applied layout), whose second parent
is the branch's tip plus the series commits, and whose tree is the refreshed code with the
refreshed series folder. A tip with anything else (a commit that is no patch) is refused:
its change would be dropped from the tree, and nothing a user had is ever lost.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable

WAYS = ("ff", "series")


class LayoutError(Exception):
    """The fork's branch holds more than the series and its code: refused."""


def _git(*args: str, env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], capture_output=True, text=True, cwd=cwd, env={**os.environ, **(env or {})}
    )
    if proc.returncode != 0:
        raise LayoutError(f"git {args[0]} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def without(tree: str, folder: str, tmp: str, graft: str | None = None) -> str:
    """``tree`` without ``folder`` (with ``graft``'s ``folder`` in its place, when given)."""
    env = {"GIT_INDEX_FILE": os.path.join(tmp, "publish-index")}
    _git("read-tree", tree, env=env)
    _git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", folder, env=env)
    if graft is not None:
        _git("read-tree", f"--prefix={folder}/", f"{graft}:{folder}", env=env)
    return _git("write-tree", env=env)


def layout(tip: str, folder: str, base: str, applied: str, tmp: str) -> str:
    """'applied' or 'base': which of the two the branch's tip is (its tree without the series
    folder is the old fork's ``applied`` tree, or the series ``base``'s)."""
    code = without(tip, folder, tmp)
    if code == without(applied, folder, tmp):
        return "applied"
    if code == without(base, folder, tmp):
        return "base"
    changed = _git("diff-tree", "-r", "--name-only", without(applied, folder, tmp), code)
    shown = ", ".join(changed.splitlines()[:5]) + (" ..." if changed.count("\n") >= 5 else "")
    raise LayoutError(
        f"the fork's branch is not the series on its base: {shown} differ from the base with the"
        f" series applied (a commit that is no patch, or a patch file changed without its code);"
        f" make such a commit a patch ('patchstack new NAME --from-commit REV') and push the"
        f" series' code with it, or use publish: series: nothing of it is dropped"
    )


def fast_forward(
    commit: Callable[[str, list[str], str], str],
    refreshed: str,
    line: str,
    folder: str,
    target: str,
    tmp: str,
) -> str:
    """The merge that publishes ``refreshed`` (the new base with the patches, as the layout
    has them) with ``line``'s series folder (the tip plus the series commits) as a
    fast-forward of that line."""
    tree = without(refreshed, folder, tmp, graft=line)
    short = target[:12]
    message = (
        f"patchstack: refresh onto {short}: publish the refreshed fork\n\n"
        f"The tree: {short} with the series applied (deferred patches left out) and the\n"
        f"refreshed series folder; a merge of the branch before the refresh, so that\n"
        f"'git pull --ff-only' follows it."
    )
    return commit(tree, [refreshed, line], message)
