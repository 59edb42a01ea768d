"""The JSON Schemas shipped in patchstack/schemas, and which one a command line's --json output
answers to. `Repo.ps` checks every --json output the tests produce against its schema."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

SCHEMAS = Path(__file__).resolve().parent.parent / "patchstack" / "schemas"

# Options of the group that take a value, and of commands whose value could look like a word.
_GROUP_VALUED = {"-C", "--dir"}
_VALUED = {"-n", "-o", "--output", "--format", "--dir", "--onto", "--rev", "--templates"}


@functools.cache
def _registry() -> Registry:
    resources = [
        (path.name, Resource.from_contents(json.loads(path.read_text()), DRAFT202012))
        for path in sorted(SCHEMAS.glob("*.json"))
    ]
    return Registry().with_resources(resources)


@functools.cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, registry=_registry())


def _words(args: Sequence[str]) -> list[str]:
    """The command's words: the group's options (and their values) left out."""
    words = list(args)
    while words and words[0].startswith("-"):
        first = words.pop(0)
        if first in _GROUP_VALUED and words:
            words.pop(0)
    return words


def _positionals(words: Sequence[str]) -> list[str]:
    found, skip = [], False
    for w in words:
        if skip:
            skip = False
        elif w == "--":
            break
        elif w.startswith("-"):
            skip = w in _VALUED
        else:
            found.append(w)
    return found


def schema_name(args: Sequence[str]) -> str | None:
    """The schema of the JSON this command line prints, or None when it prints no JSON."""
    words = _words(args)
    if not words:
        return None
    cmd, rest = words[0], words[1:]
    formatted = "--format=json" in rest or any(
        w == "--format" and nxt == "json" for w, nxt in zip(rest, rest[1:], strict=False)
    )
    options = rest[: rest.index("--")] if "--" in rest else rest  # not bisect's COMMAND
    if "--json" not in options and not (cmd == "graph" and formatted):
        return None
    if cmd == "list":
        return "series"
    if cmd == "log":
        return "patch-log" if _positionals(rest) else "log"
    if cmd == "worktree":
        return "worktree-list"
    if cmd == "import" and rest[:1] == ["branch"]:
        return "import-branch"
    if cmd == "bisect" and any(w == "--matrix" or w.startswith("--matrix=") for w in options):
        return "bisect-matrix"
    return cmd


def output_file(args: Sequence[str]) -> str | None:
    words = list(args)
    for i, w in enumerate(words[:-1]):
        if w in ("-o", "--output"):
            return words[i + 1]
    for w in words:
        if w.startswith("--output="):
            return w.split("=", 1)[1]
    return None


def check_output(args: Sequence[str], text: str) -> Any:
    """The document ``text`` (the output of ``args``), checked against its schema; an
    AssertionError naming every mismatch."""
    name = schema_name(args)
    assert name is not None, args
    assert (SCHEMAS / f"{name}.json").exists(), f"no schema for '{' '.join(args)}': {name}.json"
    doc = json.loads(text)
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, f"patchstack {' '.join(args)}: the output breaks {name}.json:\n" + "\n".join(
        f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:10]
    )
    return doc
