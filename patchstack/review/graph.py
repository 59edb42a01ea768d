"""Which patch leans on which: a graph of the series, computed from the patches' hunks.

Every patch of a series is made on the *canonical chain*: the series base plus the patches
before it. So the line numbers of a patch's hunks are line numbers of the files as the
earlier patches left them, and the lines each patch added or changed can be followed
through the whole series without git: for every file, a sorted list of intervals of lines
with the patch that last wrote them (a removal leaves an empty interval, a *point*, where
the lines were). A later patch *leans on* an earlier one when one of its change blocks
(the lines it removes, or the place it inserts at) overlaps or touches an interval of the
earlier patch: exactly the case in which git's three-way merge reports a conflict when the
earlier patch is left out (adjacent changes conflict too). A file deleted or replaced as a
binary leans on every patch that wrote to it; a rename carries the intervals to the new path.

The graph has an edge from the earlier patch to the later one. `subgraph` keeps some
patches and the ones they lean on or that lean on them (as *context*, drawn dashed), which
is what `graph --only TAGS` and the review comment show; `closure` is what a selection must
carry along (``push --with-deps``, ``pop --keep-deps``). Renderers: Mermaid (GitHub draws
it in Markdown), Graphviz dot, plain text, and a self-contained SVG for the HTML review.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model.patchfile import FileDiff, Hunk, Patch
from ..model.series import Entry

WHOLE = 1 << 40  # the end of an interval that covers a whole (binary) file

# Fill and stroke per category tag, GitHub's palette (the same in Mermaid, dot and SVG).
COLOURS = {
    "essential": ("#dafbe1", "#1a7f37"),
    "diagnostic": ("#ddf4ff", "#0969da"),
    "optimization": ("#fbefff", "#8250df"),
}
OTHER = ("#f6f8fa", "#59636e")


@dataclass(frozen=True)
class Node:
    name: str
    tag: str
    labels: tuple[str, ...]
    position: int  # 1-based place in the series
    context: bool = False  # shown only because a kept patch leans on it or it on one


@dataclass(frozen=True)
class Edge:
    earlier: str
    later: str
    files: tuple[str, ...]  # the files where the later patch touches the earlier one's lines


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...] = ()
    edges: tuple[Edge, ...] = ()

    def leans_on(self, name: str) -> tuple[str, ...]:
        return tuple(e.earlier for e in self.edges if e.later == name)


Interval = tuple[int, int, str]  # [start, end) in current line numbers, the patch that wrote it


def _blocks(hunk: Hunk) -> list[tuple[int, int, int]]:
    """Each change block of a hunk: (first line removed or insertion point, end, lines added),
    in line numbers of the file before the patch."""
    out: list[tuple[int, int, int]] = []
    line = hunk.old_start if hunk.old_len else hunk.old_start + 1
    start = end = added = -1
    for text in hunk.lines:
        kind = text[:1]
        if kind in ("-", "+"):
            if start < 0:
                start, end, added = line, line, 0
            if kind == "-":
                line += 1
                end = line
            else:
                added += 1
        elif kind != "\\":
            if start >= 0:
                out.append((start, end, added))
                start = -1
            line += 1
    if start >= 0:
        out.append((start, end, added))
    return out


def _touches(blocks: Sequence[tuple[int, int, int]], intervals: Iterable[Interval]) -> set[str]:
    owners = set()
    for c, d, owner in intervals:
        if any(a <= d and c <= b for a, b, _n in blocks):
            owners.add(owner)
    return owners


def _shift(blocks: Sequence[tuple[int, int, int]], p: int) -> int:
    return p + sum(n - (b - a) for a, b, n in blocks if b <= p)


def _apply(
    intervals: list[Interval], blocks: Sequence[tuple[int, int, int]], name: str
) -> list[Interval]:
    """The intervals after ``name`` replaced each block's lines with its own."""
    out: list[Interval] = []
    for c, d, owner in intervals:
        if c == d:  # a point: swallowed by a block at or around it, else shifted
            if not any(a <= c <= b for a, b, _n in blocks):
                out.append((_shift(blocks, c), _shift(blocks, c), owner))
            continue
        cur = c
        for a, b, _n in blocks:
            if b <= cur or a >= d:
                continue
            if a > cur:
                out.append((_shift(blocks, cur), _shift(blocks, cur) + a - cur, owner))
            cur = max(cur, b)
        if cur < d:
            out.append((_shift(blocks, cur), _shift(blocks, cur) + d - cur, owner))
    delta = 0
    for a, b, n in blocks:
        out.append((a + delta, a + delta + n, name))
        delta += n - (b - a)
    return sorted(out)


def _file_blocks(f: FileDiff) -> list[tuple[int, int, int]]:
    return sorted(b for h in f.hunks for b in _blocks(h))


def build(patches: Sequence[tuple[Entry, Patch]]) -> Graph:
    """The graph of a whole series, in series order (see the module doc)."""
    owned: dict[str, list[Interval]] = {}
    edges: list[Edge] = []
    nodes = []
    positions = {entry.name: i for i, (entry, _p) in enumerate(patches)}
    for position, (entry, patch) in enumerate(patches, 1):
        name = entry.name
        nodes.append(Node(name, entry.tag, entry.labels, position))
        hits: dict[str, list[str]] = {}
        for f in patch.files:
            source = f.old_path or f.path
            intervals = list(owned.get(source, ())) if f.old_path else []
            if f.new_path is None or f.binary:
                touched = {owner for _c, _d, owner in intervals}
                after = [] if f.new_path is None else [(1, WHOLE, name)]
            else:
                blocks = _file_blocks(f)
                touched = _touches(blocks, intervals)
                after = _apply(intervals, blocks, name)
            for owner in touched - {name}:
                hits.setdefault(owner, []).append(f.path)
            if f.renamed and f.old_path:
                owned.pop(f.old_path, None)
            if f.new_path is None:
                owned.pop(f.path, None)
            else:
                owned[f.new_path] = after
        for earlier in sorted(hits, key=positions.__getitem__):
            edges.append(Edge(earlier, name, tuple(dict.fromkeys(hits[earlier]))))
    return Graph(tuple(nodes), tuple(edges))


def subgraph(graph: Graph, keep: Iterable[str], context: bool = True) -> Graph:
    """Only the patches in ``keep`` and, with ``context``, the ones they lean on or that lean
    on them (marked as context); the edges among those."""
    kept = set(keep)
    shown = set(kept)
    if context:
        for e in graph.edges:
            if e.later in kept:
                shown.add(e.earlier)
            if e.earlier in kept:
                shown.add(e.later)
    nodes = tuple(replace(n, context=n.name not in kept) for n in graph.nodes if n.name in shown)
    edges = tuple(e for e in graph.edges if e.earlier in shown and e.later in shown)
    return Graph(nodes, edges)


def closure(graph: Graph, start: Iterable[str], allowed: Iterable[str]) -> dict[str, str]:
    """The patches of ``allowed`` that the patches of ``start`` lean on, directly or through
    each other: {each one: a patch that leans on it}. Nothing else is added, so it is the
    smallest set that leaves no patch of the result leaning on a missing one of ``allowed``
    (what ``push --with-deps`` adds and ``pop --keep-deps`` keeps)."""
    earlier: dict[str, list[str]] = {}
    for e in graph.edges:
        earlier.setdefault(e.later, []).append(e.earlier)
    pool = set(allowed)
    have = set(start)
    added: dict[str, str] = {}
    todo = list(have)
    while todo:
        name = todo.pop()
        for dep in earlier.get(name, ()):
            if dep in pool and dep not in have:
                have.add(dep)
                added[dep] = name
                todo.append(dep)
    return added


# -- renderers --------------------------------------------------------------------------------


def _ids(graph: Graph) -> dict[str, str]:
    return {n.name: f"p{n.position}" for n in graph.nodes}


def _mermaid_text(text: str) -> str:
    for ch, code in (("&", "#amp;"), ('"', "#quot;"), ("<", "#lt;"), (">", "#gt;")):
        text = text.replace(ch, code)
    return text


def mermaid(graph: Graph) -> str:
    """A Mermaid flowchart (GitHub renders it from a ```mermaid fence)."""
    ids = _ids(graph)
    lines = ["flowchart TD"]
    for n in graph.nodes:
        cls = n.tag if n.tag in COLOURS else "other"
        lines.append(f'  {ids[n.name]}["{_mermaid_text(n.name)}"]:::{cls}')
    lines += [f"  {ids[e.earlier]} --> {ids[e.later]}" for e in graph.edges]
    for tag, (fill, stroke) in (*COLOURS.items(), ("other", OTHER)):
        lines.append(f"  classDef {tag} fill:{fill},stroke:{stroke},color:#1f2328")
    lines += [
        f"  style {ids[n.name]} stroke-dasharray:4 3,opacity:0.7" for n in graph.nodes if n.context
    ]
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    """Text inside a quoted DOT string: backslash, quote and line breaks escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def dot(graph: Graph) -> str:
    """A Graphviz digraph (``dot -Tsvg``)."""
    ids = _ids(graph)
    lines = [
        "digraph patchstack {",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
    ]
    for n in graph.nodes:
        fill, stroke = COLOURS.get(n.tag, OTHER)
        style = ', style="rounded,filled,dashed"' if n.context else ""
        label = _dot_text(n.name) + "\\n" + _dot_text(", ".join((n.tag, *n.labels)))
        lines.append(
            f'  {ids[n.name]} [label="{label}", fillcolor="{fill}", color="{stroke}"{style}];'
        )
    for e in graph.edges:
        files = _dot_text(", ".join(e.files))
        lines.append(f'  {ids[e.earlier]} -> {ids[e.later]} [tooltip="{files}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def text(graph: Graph) -> str:
    """One line a patch, then the patches it leans on and in which files."""
    width = max((len(n.name) for n in graph.nodes), default=0)
    out = []
    for n in graph.nodes:
        tags = ", ".join((n.tag, *n.labels))
        mark = "·" if n.context else " "
        out.append(f"{n.position:>4}{mark} {n.name:<{width}}  [{tags}]")
        for e in graph.edges:
            if e.later == n.name:
                out.append(f"{'':>6}leans on {e.earlier} ({', '.join(e.files)})")
    return "\n".join(out) + ("\n" if out else "")


def _xml(text: str) -> str:
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    )


def svg(graph: Graph) -> str:
    """A self-contained SVG: the patches stacked in series order, each edge an arc on the
    right from the earlier patch to the later one."""
    row, pad, char = 30, 8, 7.2
    width = max((len(n.name) for n in graph.nodes), default=1) * char + 2 * pad
    rows = {n.name: i for i, n in enumerate(graph.nodes)}
    span = max((rows[e.later] - rows[e.earlier] for e in graph.edges), default=0)
    total_w = int(width + 40 + 12 * min(span, 30))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{total_w}"'
        f' height="{len(graph.nodes) * row + 4}" role="img" aria-label="patch graph">',
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7"'
        ' markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#59636e"/>'
        "</marker></defs>",
    ]
    for i, n in enumerate(graph.nodes):
        fill, stroke = COLOURS.get(n.tag, OTHER)
        dash = ' stroke-dasharray="4 3" opacity="0.7"' if n.context else ""
        y = i * row + 2
        parts.append(
            f"<g><title>{_xml(n.name)} [{_xml(', '.join((n.tag, *n.labels)))}]</title>"
            f'<rect x="1" y="{y}" width="{width:.0f}" height="{row - 8}" rx="6" fill="{fill}"'
            f' stroke="{stroke}"{dash}/><text x="{pad}" y="{y + row / 2 + 1:.0f}"'
            f' font-family="ui-monospace, monospace" font-size="12">{_xml(n.name)}</text></g>'
        )
    for e in graph.edges:
        a, b = rows[e.earlier], rows[e.later]
        y1, y2 = a * row + row / 2 - 2, b * row + row / 2 - 2
        x = width + 1
        bend = x + 16 + 12 * min(b - a, 30)
        parts.append(
            f'<path d="M{x:.0f},{y1:.0f} C{bend:.0f},{y1:.0f} {bend:.0f},{y2:.0f}'
            f' {x + 2:.0f},{y2:.0f}" fill="none" stroke="#59636e" marker-end="url(#arrow)">'
            f"<title>{_xml(e.later)} leans on {_xml(e.earlier)}: {_xml(', '.join(e.files))}"
            "</title></path>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def to_json(graph: Graph) -> dict[str, Any]:
    return {
        "nodes": [
            {
                "name": n.name,
                "tag": n.tag,
                "labels": list(n.labels),
                "position": n.position,
                "context": n.context,
            }
            for n in graph.nodes
        ],
        "edges": [{"from": e.earlier, "to": e.later, "files": list(e.files)} for e in graph.edges],
    }


def json_text(graph: Graph) -> str:
    import json

    return json.dumps({"version": 1, **to_json(graph)}, indent=2) + "\n"


FORMATS: dict[str, Callable[[Graph], str]] = {
    "text": text,
    "mermaid": mermaid,
    "dot": dot,
    "json": json_text,
}
