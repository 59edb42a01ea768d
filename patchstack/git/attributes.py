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

from .base import GitBase, decode_path
from .process import version

NAME = ".gitattributes"


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
    add(config)
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
    for place in places:
        add(place.encode("utf-8", "surrogateescape"), _read(place) or b"\0absent")
    # Not a walk of the ignored folders (a virtualenv, node_modules): merge-tree reads the
    # ``.gitattributes`` of the folders of the paths it merges, so those of every folder that
    # holds a tracked or an untracked file, ignored or not, are looked at by name.
    listed = git.run("ls-files", "-z", "-c", "-o", "--exclude-standard").stdout.split(b"\0")
    name = NAME.encode()
    found_set = {p for p in listed if p == name or p.endswith(b"/" + name)}
    folders = {b""}
    for p in listed:
        folder = p.rpartition(b"/")[0]
        while folder and folder not in folders:
            folders.add(folder)
            folder = folder.rpartition(b"/")[0]
    for folder in folders:
        there = folder + b"/" + name if folder else name
        if there not in found_set and os.path.lexists(os.path.join(git.top, decode_path(there))):
            found_set.add(there)
    found = sorted(found_set)
    for raw in found:
        path = decode_path(raw)
        data = _read(os.path.join(git.top, path))
        if data is None:  # not in the work tree: git reads the index's
            staged = git.run("ls-files", "-z", "-s", "--", path, check=False).stdout
            data = b"\0index " + staged
        add(raw, data)
    return h.hexdigest()
