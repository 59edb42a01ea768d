#!/usr/bin/env python3
"""What the conflict hunks a person is still asked are (issue 36, item 1), and the built-in
rule (`patchstack.commands.refresh.contained`) checked where the answer is known.

    python tools/bench/hunk_classes.py classes DUMP...      # DUMP: human_work.py --dump DIR/ps-N
    python tools/bench/hunk_classes.py merges REPO          # the rule against REPO's merges

``classes`` sorts every diff3 conflict hunk of the dumped stop files (upstream's side first,
the patch's last) into the classes of docs/benchmarks.md, and judges the rule's proposal
against the ``.truth`` file beside it (human_work's `hunk_verdict`). ``merges`` re-makes every
two-parent merge of REPO with merge-ort (``git merge-tree``, diff3), the second parent taken
as upstream, and judges the rule's proposal for each conflict hunk against the file the merge
committed.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from patchstack.commands.refresh import contained  # noqa: E402
from patchstack.commands.refresh.hunks import Hunk, apply_known, split  # noqa: E402

_spec = importlib.util.spec_from_file_location("human_work", HERE / "human_work.py")
assert _spec and _spec.loader
hw = importlib.util.module_from_spec(_spec)
sys.modules["human_work"] = hw
_spec.loader.exec_module(hw)

_IMPORT = re.compile(rb"^\s*(from\s+\S+\s+import\b|import\s+\S)")
_GOES_ON = re.compile(rb"^\s+[\w, ]+,?\s*$|^\s*\)\s*$")


def _imports(data: bytes) -> bool:
    lines = [x for x in data.splitlines() if x.strip()]
    return (
        bool(lines)
        and bool(_IMPORT.match(lines[0]))
        and all(_IMPORT.match(x) or _GOES_ON.match(x) for x in lines)
    )


def _blank(data: bytes) -> list[bytes]:
    return [re.sub(rb"\s+", b"", x) for x in data.splitlines() if x.strip()]


def _inserted_only(small: bytes, big: bytes) -> bool:
    a, at = small.splitlines(), 0
    for line in big.splitlines():
        if at < len(a) and line == a[at]:
            at += 1
    return at == len(a)


def classify(h: Hunk, whole_file: bool) -> str:
    """The hunk's class (docs/benchmarks.md, issue 36 item 5), first match wins."""
    o, b, t = h.ours, h.base, h.theirs
    if contained.resolve(h):
        return "A upstream's side holds the patch's change (the rule)"
    if not b.strip():
        if whole_file:
            return "B add/add: both created the file"
        if _imports(o) and _imports(t):
            return "D import lists"
        return "C both added at one place"
    if _blank(o) == _blank(b) or _blank(t) == _blank(b):
        return "W one side only re-indented or reformatted"
    if _imports(o) and _imports(t) and _imports(b):
        return "D import lists"
    if not o.strip():
        return "H upstream deleted lines the patch edited"
    if not t.strip():
        return "J the patch deleted lines upstream edited"
    if _inserted_only(b, t):
        return "F the patch inserted, upstream rewrote the lines around"
    if _inserted_only(b, o):
        return "G upstream inserted, the patch rewrote the lines around"
    return "E both edited the same lines"


def _judge(parts: list[object], h: Hunk, truth: bytes | None) -> str | None:
    got = contained.resolve(h)
    if got is None:
        return None
    shown, starts = apply_known(parts, {h.key: got[0]})  # type: ignore[arg-type]
    return str(hw.hunk_verdict(shown, starts[0], [got[0]], truth, truth is not None))


def classes(roots: list[str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for root in roots:
        for here, _dirs, names in os.walk(root):
            for name in names:
                if name.endswith(".truth"):
                    continue
                full = Path(here) / name
                parts = split(full.read_bytes())
                if parts is None:
                    out["(markers that do not read)"] += 1
                    continue
                truth_file = full.with_name(name + ".truth")
                truth = truth_file.read_bytes() if truth_file.is_file() else None
                for h in [p for p in parts if isinstance(p, Hunk)]:
                    out[classify(h, len(parts) == 1)] += 1
                    verdict = _judge(parts, h, truth)  # type: ignore[arg-type]
                    if verdict:
                        out[f"(the rule: {verdict})"] += 1
    return out


def merges(repo: str) -> Counter[str]:
    def git(*args: str) -> subprocess.CompletedProcess[bytes]:
        argv = ["git", "-C", repo, "-c", "merge.conflictStyle=diff3", *args]
        return subprocess.run(argv, capture_output=True)

    out: Counter[str] = Counter()
    listed = git("log", "--all", "--merges", "--format=%H %P").stdout.decode().splitlines()
    for merge, first, second in (m.split() for m in listed if len(m.split()) == 3):
        out["merges"] += 1
        made = git("merge-tree", "--write-tree", "--name-only", "-z", first, second)
        if made.returncode != 1:
            continue
        tree, *rest = made.stdout.decode("utf-8", "surrogateescape").split("\0")
        out["conflicted merges"] += 1
        for path in rest[: rest.index("")] if "" in rest else rest:
            blob = git("cat-file", "blob", f"{tree}:{path}")
            parts = split(blob.stdout) if blob.returncode == 0 else None
            if not parts:
                continue
            committed = git("cat-file", "blob", f"{merge}:{path}")
            truth = committed.stdout if committed.returncode == 0 else None
            for h in [p for p in parts if isinstance(p, Hunk)]:
                out["hunks"] += 1
                # in the merge the first parent is the fork: upstream's side is the second
                turned = Hunk(h.theirs, h.base, h.ours, h.line, h.raw)
                got = contained.resolve(turned)
                if got is None:
                    continue
                shown, starts = apply_known(parts, {h.key: got[0]})
                verdict = hw.hunk_verdict(shown, starts[0], [got[0]], truth, truth is not None)
                out[f"(the rule: {verdict})"] += 1
                if verdict == "refuted":
                    print(f"refuted: {merge[:9]} {path}:{h.line}", file=sys.stderr)
    return out


def main() -> int:
    if len(sys.argv) < 3 or sys.argv[1] not in ("classes", "merges"):
        print(__doc__, file=sys.stderr)
        return 2
    found = classes(sys.argv[2:]) if sys.argv[1] == "classes" else merges(sys.argv[2])
    for what, n in sorted(found.items()):
        print(f"{n:6d}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
