"""The JSON of ``review --json`` and ``show --json``: plain values, shapes documented in the
README. ``version`` counts incompatible changes of a shape; keys are only ever added."""

from __future__ import annotations

from typing import Any

from .compare import PatchReview, Review, Version
from .graph import to_json

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
        },
        "summary": dict(r.summary),
        "patches": [_patch_json(p) for p in r.patches],
        "graph": to_json(r.graph),
    }
