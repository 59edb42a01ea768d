"""What a ``merge-tree`` reads besides the trees it merges, as one digest: a merge kept from
an earlier command is the merge this one would make when the digest is the same.

git 2.39's merge-tree takes each path's attributes (merge drivers, ``text``/``eol`` for
renormalizing) from the ``.gitattributes`` files of the *work tree* (a file the work tree
lacks: the index's), from ``$GIT_DIR/info/attributes`` and from ``core.attributesFile``
(default ``$XDG_CONFIG_HOME/git/attributes``); the rest is configuration and git itself. A
refresh's stop changes the work tree, so each of those goes into the digest: the version of
git, every configuration value (``config --list``: drivers, renormalization, the file's
place), the contents of the attributes files outside the work tree, and every file named
``.gitattributes`` that git can see there, tracked or untracked, and an ignored one in a
folder of such a file (the folders of the paths merge-tree merges: an ignored folder holding
nothing git sees is not walked), by its contents in the work tree, or by its index entry
where the work tree has none."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable

from .base import EARLY_LISTING, GitBase, decode_path, encode_path
from .process import version

NAME = ".gitattributes"
LISTING = ("ls-files", "-z", "-c", "-o", "--exclude-standard")
EARLY_OFF = "PATCHSTACK_NO_EARLY_INPUTS"  # set: the listing is made when `merge_inputs` asks
_STARTED = EARLY_LISTING  # the memo of a listing begun early (`start_listing`)


def start_listing(git: GitBase) -> None:
    """Begin `merge_inputs`' listing of the work tree now, for the next `merge_inputs` of the
    command: git walks the work tree while the command reads its state (a skip's untracked
    walk, 0.05-0.15 s, behind its start). Forgotten unread when the command publishes
    (`forget_listing`): a listing is of the work tree and index as they are before it."""
    if os.environ.get(EARLY_OFF) or (_STARTED,) in git._memo:
        return
    git._memo[(_STARTED,)] = git.start(LISTING)


def forget_listing(git: GitBase) -> None:
    """Drop a listing begun early and not read (the work tree and index are about to move;
    a publish drops it itself, importing nothing of this module)."""
    git._memo.pop((_STARTED,), None)


def _listing(git: GitBase) -> bytes:
    started: Callable[[], bytes] | None = git._memo.pop((_STARTED,), None)
    return started() if started is not None else git.run(*LISTING).stdout


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def merge_inputs(git: GitBase) -> str:
    """The digest of everything but the trees that decides what ``merge-tree`` makes here
    (see the module docstring)."""
    h = hashlib.sha256()

    def add(*parts: bytes) -> None:
        for part in parts:
            h.update(b"%d:" % len(part) + part)

    add(version()[1].encode())
    config = git.config_list()  # (the command's one reading: `GitBase.config`)
    # Hooks decide no merge nor diff; a command that only reads pins them off (`quiet_hooks`).
    add(b"\0".join(e for e in config.split(b"\0") if not e.lower().startswith(b"core.hookspath\n")))
    places = [os.path.join(git.common_dir, "info", "attributes")]
    own = [
        v
        for k, _nl, v in (e.partition(b"\n") for e in config.split(b"\0"))
        if k.lower() == b"core.attributesfile"
    ]
    if own and own[-1]:  # the last value wins; ``~/`` as ``config --path`` expands it
        places.append(os.path.expanduser(decode_path(own[-1])))
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        places.append(os.path.join(xdg, "git", "attributes"))
    # By role and contents, not by path: a repository moved or copied keeps what it kept
    # (``core.attributesFile``'s path is in the configuration already).
    for role, place in zip((b"info", b"global"), places, strict=True):
        add(role, _read(place) or b"\0absent")
    # Not a walk of the ignored folders (a virtualenv, node_modules): merge-tree reads the
    # ``.gitattributes`` of the folders of the paths it merges, so those of every folder that
    # holds a tracked or an untracked file, ignored or not, are looked at by name.
    out = _listing(git)
    listed = [decode_path(p) for p in out.split(b"\0") if p]
    found_set = {p for p in listed if p == NAME or p.endswith("/" + NAME)}
    for there in attribute_files(listed) or [NAME]:
        if there not in found_set and os.path.lexists(os.path.join(git.top, there)):
            found_set.add(there)
    for path in sorted(found_set, key=encode_path):  # (in bytes' order, as git lists)
        data = _read(os.path.join(git.top, path))
        if data is None:  # not in the work tree: git reads the index's
            staged = git.run("ls-files", "-z", "-s", "--", path, check=False).stdout
            data = b"\0index " + staged
        add(encode_path(path), data)
    return h.hexdigest()


def attribute_files(paths: Iterable[str]) -> list[str]:
    """The ``.gitattributes`` files that may hold rules for ``paths`` (one in each folder on
    their way, the top one included), sorted."""
    folders: set[str] = set()
    for p in paths:
        folder = p.rpartition("/")[0]
        while folder not in folders:
            folders.add(folder)
            if not folder:
                break
            folder = folder.rpartition("/")[0]
    return [f"{f}/{NAME}" if f else NAME for f in sorted(folders)]
