"""The series' marks are claims, checked where they are used (issue 34).

A mark names a commit whose change stands for a patch's (`model.marks`): ``# deferred: NAME
COMMIT`` (brought back by ``push NAME``) and ``# upstream: NAME COMMIT [in UPSTREAM]`` (placed
again by every replay). The series folder travels through pull requests, so a commit is taken
as a patch's only when building proves it: the patch file applied (``git apply``, exactly) to
the tree of COMMIT's parent gives COMMIT's tree. ``in UPSTREAM`` is taken only when the series
base holds UPSTREAM and UPSTREAM brought the change: it changes nothing on UPSTREAM's tree and
something on its first parent's. Anything else is refused naming the series file and line,
with the command that repairs it (exit 2), before anything is built or cached.
"""

from __future__ import annotations

from ..errors import ConflictError, InputError
from ..model.ids import Oid
from ..model.marks import Deferral, Mark, Upstream, parse_mark
from ..model.series import Other, Series
from .cache import Cache
from .chain import Engine
from .contract import enabled
from .evidence import brought, first_parent


def _line(series: Series, mark: Mark) -> int | None:
    for ln in series.lines:
        if isinstance(ln, Other) and parse_mark(ln.raw) == mark:
            return ln.lineno
    return None


def _refused(where: str, series: Series, mark: Mark, why: str) -> InputError:
    line = _line(series, mark)
    kind = "deferred" if isinstance(mark, Deferral) else "upstream"
    delete = f"sed -i '{line}d' {where}" if line else f"delete the '# {kind}:' line of {where}"
    if isinstance(mark, Deferral):
        repair = f"'{delete}', then 'patchstack push {mark.name}' applies its patch file itself"
    else:
        repair = f"'{delete}', then 'patchstack refresh' judges the patch again"
    return InputError(where, line, f"the {kind} mark of {mark.name}: {why}", repair)


def proven_change(engine: Engine, name: str, commit: str) -> tuple[Oid, Oid] | str:
    """(the tree of ``commit``'s parent, its tree) when the patch file of ``name`` applied to
    the first gives the second; otherwise why not."""
    git = engine.git
    if not git.has_objects([commit])[commit]:
        return f"{commit[:12]} is not in this repository"
    parent = first_parent(git, commit)
    if parent is None:
        return f"{commit[:12]} is not a commit with a parent"
    before, after = git.trees_of([parent, commit])
    try:
        built = engine.apply_exact(before, engine.patch(name))
    except ConflictError:
        return f"the patch file does not apply to the parent of {commit[:12]}"
    if built != after:
        return f"{commit[:12]}'s change is not the patch file's"
    return before, after


def deferred_change(engine: Engine, series: Series, where: str, mark: Deferral) -> tuple[Oid, Oid]:
    """The change of a deferred patch coming back, proven its file's (or refused)."""
    found = proven_change(engine, mark.name, mark.commit)
    if isinstance(found, str):
        raise _refused(where, series, mark, found)
    return found


def upstream_changes(engine: Engine, series: Series, where: str) -> dict[str, tuple[Oid, Oid]]:
    """The recorded change of each patch the series keeps as upstream's whose commit this
    repository has, each proven its file's, and its ``in UPSTREAM`` proven (or refused)."""
    git = engine.git
    out = {}
    for mark in series.upstream.values():
        if mark.name not in series or not git.has_objects([mark.commit])[mark.commit]:
            continue  # the patch file itself stands for it
        found = proven_change(engine, mark.name, mark.commit)
        if isinstance(found, str):
            raise _refused(where, series, mark, found)
        if mark.evidence:
            why = _not_brought(engine.cache, series.base, mark, *found)
            if why:
                raise _refused(where, series, mark, why)
        out[mark.name] = found
    return out


def _not_brought(cache: Cache, base: str | None, mark: Upstream, before: Oid, after: Oid) -> str:
    """Why ``in UPSTREAM`` does not hold: the base does not hold it, or it did not bring the
    change; "" when it holds. That a commit brought a change is a fact of their objects: once
    proven (two merges), it is kept in the engine's cache (read by the next check or refresh)."""
    git = cache.git
    upstream = mark.evidence or ""
    if not git.has_objects([upstream])[upstream]:
        return f"{upstream[:12]} is not in this repository"
    parent = first_parent(git, upstream)
    if parent is None or not base or not git.is_ancestor(upstream, base):
        return f"the series base does not hold {upstream[:12]}"
    key = f"brought {before} {after} {upstream}"
    if enabled() and cache.get(key) == upstream:
        return ""
    if not brought(git, before, after, upstream):
        return f"{upstream[:12]} did not bring its change"
    cache.put(key, upstream)
    return ""
