"""Run by ``patchstack doctor`` inside the interpreter under examination, isolated: ``python -I
-c`` from a folder outside the repository, so that no file of the repository (a ``typing.py``
in the user's folder, a folder on ``PYTHONPATH``) is imported by the probe itself.

It is told the user's folder, and searches the ``sys.path`` that ``python -m NAME`` started
there would have (`service_path`: that folder, ``PYTHONPATH``, the user site, which ``-I``
leaves out, then the interpreter's own). It finds where ``import NAME`` resolves without
importing it (``find_spec`` of a top-level name executes no code of the package), reads the
installed distribution's metadata (PEP 610 ``direct_url.json``, ``RECORD`` hashes), and lists
compiled files that are imported instead of their source. It prints one JSON object. Python
3.8 or later, standard library only: it runs in whatever interpreter the service uses
(annotations stay strings there). Every module it uses is imported before the search, while
``sys.path`` is still the isolated one.
"""

from __future__ import annotations

import _imp
import csv
import importlib.machinery
import importlib.util
import json
import os
import re
import site
import sys
from typing import Any


def service_path(here: str, environ: dict[str, str]) -> list[str]:
    """``sys.path`` as ``python -m NAME`` started in ``here`` would have it: ``here`` (unless
    ``PYTHONSAFEPATH``), ``PYTHONPATH``, then this interpreter's own path with the user site
    (and the folders its ``.pth`` files name; their ``import`` lines are not run) before the
    site packages."""
    found = [] if environ.get("PYTHONSAFEPATH") else [here]
    for entry in (environ.get("PYTHONPATH") or "").split(os.pathsep):
        if entry:
            found.append(os.path.join(here, entry))
    rest = list(sys.path)
    user = _user_site(environ)
    if user and user not in rest:
        sites = set(site.getsitepackages()) if hasattr(site, "getsitepackages") else set()
        at = next((i for i, p in enumerate(rest) if p in sites), len(rest))
        rest[at:at] = [user, *_pth_folders(user)]
    return found + [p for p in rest if p not in found]


def _user_site(environ: dict[str, str]) -> str | None:
    """The user site folder that a run without ``-I`` would use, if any."""
    if environ.get("PYTHONNOUSERSITE") or not hasattr(os, "getuid"):
        return None
    if os.getuid() != os.geteuid() or os.getgid() != os.getegid():
        return None
    if sys.prefix != sys.base_prefix:  # a virtual environment: only with the system site
        cfg = _read(os.path.join(sys.prefix, "pyvenv.cfg")) or ""
        if not re.search(r"(?mi)^\s*include-system-site-packages\s*=\s*true\s*$", cfg):
            return None
    user = site.getusersitepackages()
    return user if os.path.isdir(user) else None


def _pth_folders(folder: str) -> list[str]:
    found = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".pth"):
            for line in (_read(os.path.join(folder, name)) or "").splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    path = os.path.join(folder, line)
                    if os.path.exists(path):
                        found.append(os.path.normpath(path))
    return found


def _spec(name: str, path: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    saved = sys.path[:]
    sys.path[:] = path
    sys.path_importer_cache.clear()
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        sys.path[:] = saved
        sys.path_importer_cache.clear()
    if spec is None:
        return None, None
    locations = list(spec.submodule_search_locations or [])
    origin = spec.origin if spec.has_location else None
    return {"origin": origin, "locations": locations, "namespace": origin is None}, None


def _roots(spec: dict[str, Any] | None) -> list[str]:
    if not spec:
        return []
    if spec["locations"]:
        return [os.path.realpath(p) for p in spec["locations"]]
    return [os.path.realpath(spec["origin"])] if spec["origin"] else []


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _distribution(names: list[str], roots: list[str], path: list[str]) -> dict[str, Any] | None:
    """The installed distribution of that name, read from its metadata folder as
    ``importlib.metadata`` would find it (first on ``sys.path``), one with a RECORD (installed
    by an installer) before build metadata lying in a source tree; its RECORD hashes of the
    files under ``roots``. Read directly: importing ``importlib.metadata`` costs more than
    the rest of the probe."""
    wanted = {_norm(n) for n in names}
    found = []
    links = []
    for folder in path:
        try:
            listing = os.listdir(folder)
        except OSError:
            continue
        for f in listing:
            stem, _, kind = f.rpartition(".")
            if kind in ("dist-info", "egg-info") and _norm(stem.split("-")[0]) in wanted:
                found.append((os.path.join(folder, f), folder))
            elif kind == "egg-link" and _norm(stem) in wanted:
                links.append(os.path.join(folder, f))
    found.sort(key=lambda p: not os.path.isfile(os.path.join(p[0], "RECORD")))
    if not found:
        return None
    meta, site = found[0]
    fields: dict[str, str] = {}
    for name in ("METADATA", "PKG-INFO"):
        text = _read(os.path.join(meta, name)) if os.path.isdir(meta) else _read(meta)
        if text:
            for line in text.splitlines():
                if not line.strip():
                    break
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
            break
    editable = url = None
    try:
        direct = json.loads(_read(os.path.join(meta, "direct_url.json")) or "null")
        url = direct.get("url")
        editable = bool((direct.get("dir_info") or {}).get("editable"))
    except (ValueError, AttributeError):
        pass
    if editable is None and links:
        editable, url = True, (_read(links[0]) or "").split("\n")[0].strip() or None
    base = os.path.realpath(site)
    prefixes = tuple(os.path.join(r, "") for r in roots)
    files = []
    for row in csv.reader((_read(os.path.join(meta, "RECORD")) or "").splitlines()):
        if len(row) >= 2 and row[1].startswith("sha256="):
            full = os.path.normpath(os.path.join(base, row[0]))
            if full.startswith(prefixes) or full in roots:
                files.append([full, row[1][len("sha256=") :]])
    return {
        "name": fields.get("Name", os.path.basename(meta).split("-")[0]),
        "version": fields.get("Version", ""),
        "editable": editable,
        "url": url,
        "files": files,
    }


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _stale_pyc(source: str) -> str | None:
    """The cached .pyc of ``source`` when it is hash-based, not checked on import, and made
    from other bytes (so Python imports it instead of the changed source)."""
    try:
        cached = importlib.util.cache_from_source(source)
        with open(cached, "rb") as f:
            head = f.read(16)
    except (OSError, ValueError, NotImplementedError):
        return None
    if len(head) < 16 or head[:4] != importlib.util.MAGIC_NUMBER:
        return None
    flags = int.from_bytes(head[4:8], "little")
    if not flags & 1 or flags & 2:
        return None  # timestamp-based, or checked against the source on every import
    if getattr(_imp, "check_hash_based_pycs", "default") == "always":
        return None
    with open(source, "rb") as f:
        if importlib.util.source_hash(f.read()) != head[8:16]:
            return cached
    return None


def _shadowed(roots: list[str]) -> list[list[str]]:
    """[kind, the file imported, the source it hides] under the package's folders."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    found = []
    for top in roots:
        for folder, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            names = set(files)
            for f in files:
                path = os.path.join(folder, f)
                if f.endswith(".py"):
                    stem = f[:-3]
                    for suffix in suffixes:
                        if stem + suffix in names:
                            found.append(["extension", os.path.join(folder, stem + suffix), path])
                    stale = _stale_pyc(path)
                    if stale:
                        found.append(["unchecked-pyc", stale, path])
                elif f.endswith(".pyc") and f[:-1] not in names:
                    found.append(["sourceless", path, path[:-1]])
    return found


def _module_shadowed(origin: str) -> list[list[str]]:
    """The same for a single-file module."""
    stem = os.path.join(os.path.dirname(origin), os.path.basename(origin).split(".")[0])
    if origin.endswith(".pyc"):
        return [["sourceless", origin, origin[:-1]]]
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    if origin.endswith(suffixes) and os.path.exists(stem + ".py"):
        return [["extension", origin, stem + ".py"]]
    return []


def main(argv: list[str]) -> None:
    module, dist_name, here = argv[0], argv[1], argv[2]
    path = service_path(here, dict(os.environ))
    spec, error = _spec(module, path)
    roots = _roots(spec)
    shadowed = _shadowed([r for r in roots if os.path.isdir(r)])
    if spec and not spec["locations"] and spec["origin"]:
        shadowed += _module_shadowed(spec["origin"])
    elsewhere = roots
    if path and path[0] == here:  # what a service started in another folder sees
        other, _ = _spec(module, path[1:])
        elsewhere = _roots(other)
    names = list(dict.fromkeys(n for n in (dist_name, module) if n))
    out = {
        "executable": sys.executable,
        "version": ".".join(str(n) for n in sys.version_info[:3]),
        "prefix": sys.prefix,
        "cwd": here,
        "spec": spec,
        "error": error,
        "roots": roots,
        "elsewhere": elsewhere,
        "dist": _distribution(names, roots, path) if roots else None,
        "shadowed": shadowed,
    }
    sys.stdout.write(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
