"""``patchstack doctor``: is what runs what the series says?

The interpreter is asked, in an isolated subprocess (``python -I``, started outside the
repository, so that nothing of the repository runs in it), where ``import NAME`` resolves for a
service started in the current folder (as ``python -m NAME`` would be): `doctor_probe` finds
the package without importing it, reads the installed distribution's metadata (PEP 610
``direct_url.json``, ``RECORD`` hashes) and lists compiled files imported instead of their
source. The rest happens here on plain values: which package and where it is in the tree
(`doctor_project`), where the import resolves against this work tree, which files of a copy
differ from the work tree (`doctor_copy`), and the series' own state (`status`, `drift`), read
while the interpreter looks. Nothing of the user's package is imported, here or there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from ..checkout import Checkout
from ..errors import PatchstackError
from ..git import Git
from .doctor_copy import Finding, compare_copy, pip_install
from .doctor_project import Project, find_project

T = TypeVar("T")


@dataclass(frozen=True)
class DoctorReport:
    python: str
    version: str
    module: str
    where: str  # "this work tree", "an installed copy", "another worktree", ... (see _where)
    location: str | None
    distribution: str | None  # "name version"
    editable: bool | None
    facts: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "differs" for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        """``version`` is the shape's (2: the interpreter's version moved to
        ``python_version``)."""
        data = asdict(self)
        data["python_version"] = data.pop("version")
        data["findings"] = [asdict(f) for f in self.findings]
        data["ok"] = self.ok
        return {"version": 2, **data}


def doctor(ws: Checkout, python: str | None, module: str | None) -> DoctorReport:
    git = ws.git
    exe = python or shutil.which("python") or shutil.which("python3") or sys.executable
    project = find_project(git, module)
    # The series is read (git status and log) while the interpreter looks for the package.
    probe, series = run_probe(exe, project, ws.cwd, lambda: series_findings(ws))
    roots = [str(r) for r in probe.get("roots") or []]
    dist = probe.get("dist") or None
    top = os.path.realpath(git.top)
    tree = os.path.realpath(os.path.join(top, project.package)) if project.package else None
    folder = project.folder
    pip = pip_install(
        exe, os.path.normpath(os.path.join(git.top, folder)) if folder is not None else None
    )
    facts = [f"python: {probe.get('executable') or exe} (Python {probe.get('version', '?')})"]
    findings: list[Finding] = []
    where = _where(git, roots, tree, str(probe.get("prefix") or ""))
    shown = _show(roots[0], top) if roots else None
    about = f"{dist['name']} {dist['version']}" if dist else None
    editable = dist.get("editable") if dist else None
    if about and where == "an installed copy":
        how = f"an installed copy of {about}"
    elif about and editable:
        how = f"{where}, an editable install: {about}"
    elif about:
        how = f"{where}, found on sys.path before the installed copy of {about}"
    else:
        how = f"{where}, on sys.path; not installed"
    facts.append(f"import {project.module}: {shown or 'not found'} ({how})")
    if not roots:
        detail = f" ({probe['error']})" if probe.get("error") else ""
        findings.append(
            Finding(
                "not-importable",
                "differs",
                f"{exe} cannot import {project.module}{detail}",
                pip or "install the package into this interpreter",
            )
        )
    elif where == "another worktree":
        findings.append(
            Finding(
                "other-worktree",
                "differs",
                f"import {project.module} resolves to another worktree of this repository: {shown}",
                f"run 'patchstack doctor' there, or {pip or 'install this work tree'}",
            )
        )
    elif where != "this work tree" and tree is not None and project.package is not None:
        findings += compare_copy(ws, roots[0], tree, project.package, dist, pip)
    elsewhere = [str(r) for r in probe.get("elsewhere") or []]
    if roots and elsewhere != roots:
        findings.append(_elsewhere(project.module, elsewhere, tree, top, pip))
    findings += [_shadowed(kind, used, source, top) for kind, used, source in probe["shadowed"]]
    facts += series[0]
    findings += series[1]
    return DoctorReport(
        str(probe.get("executable") or exe),
        str(probe.get("version", "")),
        project.module,
        where if roots else "not found",
        roots[0] if roots else None,
        about,
        editable,
        tuple(facts),
        tuple(findings),
    )


def _where(git: Git, roots: list[str], tree: str | None, prefix: str) -> str:
    if not roots:
        return "not found"
    if tree is not None and tree in roots:
        return "this work tree"
    here = os.path.realpath(git.top)
    for wt in git.worktrees():
        path = os.path.realpath(wt.path)
        if path != here and _inside(roots[0], path):
            return "another worktree"
    if prefix and _inside(roots[0], os.path.realpath(prefix)):
        return "an installed copy"
    if _inside(roots[0], here):
        return "a copy inside this work tree"  # a build folder, an old checkout in a subfolder
    return "a copy in another folder"


def _elsewhere(module: str, elsewhere: list[str], tree: str | None, top: str, pip: str) -> Finding:
    if not elsewhere:
        return Finding(
            "only-here",
            "note",
            f"import {module} works only from this folder (the current folder is on sys.path)",
            f"start the service from here, or {pip or 'install the package'}",
        )
    if tree is not None and tree in elsewhere:
        return Finding(
            "elsewhere",
            "note",
            f"from another folder, import {module} resolves to this work tree as well",
            "nothing to do",
        )
    return Finding(
        "elsewhere",
        "differs",
        f"started from another folder, import {module} resolves to {_show(elsewhere[0], top)}",
        f"{pip or 'install this work tree'}, or remove that copy",
        (elsewhere[0],),
    )


def _shadowed(kind: str, used: str, source: str, top: str) -> Finding:
    used_, source_ = _show(used, top), _show(source, top)
    if kind == "sourceless":
        message = f"{used_} is imported although {source_} does not exist"
        step = f"delete {used_}"
    elif kind == "extension":
        message = f"the compiled {used_} is imported instead of {source_}"
        step = f"rebuild it from the source, or delete {used_}"
    else:
        message = (
            f"{used_} (an unchecked hash-based .pyc) is imported instead of the changed {source_}"
        )
        step = f"delete {used_}"
    return Finding("shadowed", "differs", message, step, (used,))


def series_findings(ws: Checkout) -> tuple[list[str], list[Finding]]:
    """Facts and findings about the series' applied state and its base."""
    from ..journal.refusals import foreign_error
    from .refresh.drift import drift as read_drift
    from .status import status

    if not ws.exists():
        return [f"series: none at {ws.display(ws.series_path)}"], []

    st = status(ws)
    drift = read_drift(ws)
    applied = [p.name for p in st.patches if p.applied]
    base = (st.series_base or "?")[:10] + (f" ({st.base_ref})" if st.base_ref else "")
    if len(applied) == len(st.patches):
        which = f"all {len(applied)} patch(es) applied"
    else:
        which = f"{len(applied)} of {len(st.patches)} patch(es) applied" + (
            f" ({', '.join(applied)})" if applied else ""
        )
    facts = [f"series: {which}, base {base}"]
    found: list[Finding] = []
    problem = foreign_error(ws) if st.operation else None
    if problem is not None:
        todo = (problem.hint or "").split(", then run")[0]
        found.append(Finding("operation", "differs", problem.message, todo))
    for p in st.patches:
        if p.matches == "differs":
            found.append(
                Finding(
                    "commit-differs",
                    "differs",
                    f"the applied commit of {p.name} differs from its patch file (amended)",
                    f"adopt it: patchstack refresh --patch {p.name}; drop it: --discard-changes",
                )
            )
        elif p.matches == "edited":
            found.append(
                Finding(
                    "patch-edited",
                    "differs",
                    f"{p.name} was edited since it was applied: the work tree has the old version",
                    "apply the new version: pop it and push it again",
                )
            )
    if st.on_top_problem:
        what, todo = st.on_top_problem
        found.append(Finding("on-top", "differs", what, todo, tuple(st.on_top)))
    for name in st.unknown_applied:
        found.append(
            Finding(
                "unknown-applied",
                "differs",
                f"{name} is applied but not in the series",
                "put it back into the series file, or pop it",
            )
        )
    if st.edits:
        found.append(
            Finding(
                "edits",
                "differs",
                "uncommitted edits in no patch: " + _few(st.edits),
                "capture them: patchstack new NAME --tag TAG " + " ".join(st.edits[:3]),
                st.edits,
            )
        )
    if st.edits_in_patches:
        names = sorted({n for ns in st.edits_in_patches.values() for n in ns})
        found.append(
            Finding(
                "edits-in-patches",
                "differs",
                "uncommitted edits in files of applied patches: "
                + _few(list(st.edits_in_patches))
                + f" ({', '.join(names)})",
                "fold them: patchstack refresh [--patch NAME]",
                tuple(st.edits_in_patches),
            )
        )
    if st.series_base and st.stack_base != st.series_base:
        found.append(
            Finding(
                "base-moved",
                "differs",
                f"the applied patches sit on {st.stack_base[:10]}, the series base is"
                f" {st.series_base[:10]}",
                "patchstack refresh",
            )
        )
    if drift is not None and drift.commits:
        touching = f"; {len(drift.touching)} touch patched files" if drift.touching else ""
        found.append(
            Finding(
                "upstream-moved",
                "note",
                f"{drift.target_name} is {drift.commits} commit(s) past the series base{touching}",
                f"patchstack check --onto {drift.target_name}, then patchstack refresh --onto"
                f" {drift.target_name}",
            )
        )
    return facts, found


# -- finding the project and asking the interpreter -------------------------------------------


def run_probe(
    python: str, project: Project, cwd: str, meanwhile: Callable[[], T]
) -> tuple[dict[str, Any], T]:
    """Run `doctor_probe` in ``python``, isolated and from an empty folder, asking about a
    service started in ``cwd``; and ``meanwhile()`` here while it runs: (its JSON answer, what
    ``meanwhile`` returned)."""
    with open(os.path.join(os.path.dirname(__file__), "doctor_probe.py"), encoding="utf-8") as f:
        source = f.read()
    args = [python, "-I", "-c", source, project.module, project.dist or "", cwd]
    with tempfile.TemporaryDirectory(prefix="patchstack-doctor-") as empty:
        return _probe(python, project, args, empty, meanwhile)


def _probe(
    python: str, project: Project, args: list[str], cwd: str, meanwhile: Callable[[], T]
) -> tuple[dict[str, Any], T]:
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise PatchstackError(
            f"cannot run the interpreter {python}: {exc}", "give the service's one: --python PATH"
        ) from exc
    try:
        extra = meanwhile()
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise PatchstackError(
            f"{python} did not answer within 120 s", "give the service's one: --python PATH"
        ) from exc
    finally:
        if proc.returncode is None:
            proc.kill()
            proc.communicate()
    try:
        answer = json.loads(out) if proc.returncode == 0 else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        last = err.decode("utf-8", "replace").strip().splitlines()
        raise PatchstackError(
            f"{python} could not answer where {project.module} is"
            + (f": {last[-1]}" if last else f" (exit {proc.returncode})"),
            "doctor needs Python 3.8 or later: give the service's interpreter with --python PATH",
        )
    return answer, extra


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _show(path: str, top: str) -> str:
    return os.path.relpath(path, top) if _inside(path, top) else path


def _few(paths: list[str] | tuple[str, ...], n: int = 5) -> str:
    more = f" and {len(paths) - n} more" if len(paths) > n else ""
    return ", ".join(paths[:n]) + more
