"""The JSON of ``review --json`` and ``show --json``: plain values, shapes documented in the
README. ``version`` counts incompatible changes of a shape; keys are only ever added."""

from __future__ import annotations

from typing import Any

from .compare import PatchReview, Review, Version
from .graph import to_json
from .states import MarkView, ResolutionChange

VERSION = 1


def version_json(v: Version) -> dict[str, Any]:
    return {
        "name": v.name,
        "tag": v.tag,
        "labels": list(v.labels),
        "position": v.position,
        "subject": v.subject,
        "description": v.description,
        "author": v.author,
        "added": v.added,
        "removed": v.removed,
        "files": [{"path": p, "added": a, "removed": r} for p, a, r in v.files],
        "diff": list(v.diff),
        "probe": v.probe,
    }


def show_json(v: Version) -> dict[str, Any]:
    return {"version": VERSION, **version_json(v)}


def _patch_json(p: PatchReview) -> dict[str, Any]:
    return {
        "name": p.name,
        "words": list(p.words),
        "change": p.change,
        "moved": p.moved,
        "renamed": p.renamed,
        "retagged": p.retagged,
        "description_changed": p.description_changed,
        "old": version_json(p.old) if p.old else None,
        "new": version_json(p.new) if p.new else None,
        "interdiff": list(p.interdiff),
        "description_diff": list(p.description_diff),
        "probe_diff": list(p.probe_diff),
        "moves": list(p.moves),
        "state": p.state,
        "old_mark": _mark_json(p.old_mark),
        "new_mark": _mark_json(p.new_mark),
        "reused_hunks": list(p.reused),
    }


def _mark_json(m: MarkView | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        "kind": m.kind,
        "commit": m.commit,
        "root": m.root,
        "evidence": m.evidence,
        "evidence_subject": m.subject or None,
    }


def _resolution_json(r: ResolutionChange) -> dict[str, Any]:
    return {
        "change": r.change,
        "file": r.file,
        "patch": r.patch or None,
        "path": r.path or None,
        "mode": r.mode or None,
        "note": r.note,
        "diff": list(r.diff),
        "by": r.by or None,
    }


def review_json(r: Review) -> dict[str, Any]:
    b = r.base
    return {
        "version": VERSION,
        "old": r.old_label,
        "new": r.new_label,
        "base": {
            "old": b.old,
            "new": b.new,
            "old_ref": b.old_ref,
            "new_ref": b.new_ref,
            "moved": b.moved,
            "ahead": b.ahead,
            "behind": b.behind,
            "hits": [
                {"commit": h.oid, "subject": h.subject, "patches": list(h.patches)} for h in b.hits
            ],
        },
        "summary": dict(r.summary),
        "marked": dict(r.marked),
        "patches": [_patch_json(p) for p in r.patches],
        "graph": to_json(r.graph),
        "resolutions": [_resolution_json(x) for x in r.resolutions],
    }
