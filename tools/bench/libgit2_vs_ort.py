#!/usr/bin/env python3
"""Does libgit2's three-way file merge (pygit2) give merge-ort's results? (issue 16)

    pip install pygit2 && python tools/bench/libgit2_vs_ort.py [--trials 3000] [--seed 1]

Random small C-like files (lines drawn from a few repetitive ones, as real code has braces and
returns), two random edits of each, merged by libgit2 (``Repository.merge_trees``, the merge
behind pygit2's ``merge_file_from_index``) and by git's ``merge-tree --write-tree`` (merge-ort).
merge-ort diffs with the histogram algorithm; libgit2's file merge offers Myers, minimal and
patience only, so some merges differ: libgit2 merges cleanly where merge-ort reports a conflict,
or both merge cleanly to different text. Prints the count and writes the first case found to
``base.c``/``ours.c``/``theirs.c`` in the scratch folder. Not part of the test suite; pygit2
is not a dependency of patchstack.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile

LINES = ["{", "}", "", "return x;", "x++;", "if (a) {", "y = 1;", "foo();", "bar();"]


def edit(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(lines) + 1)
        block = [rng.choice(LINES) for _ in range(rng.randint(1, 4))]
        roll = rng.random()
        if roll < 0.4:
            lines[at:at] = block
        elif roll < 0.7 and lines:
            del lines[at : at + rng.randint(1, 3)]
        else:
            lines[at : at + rng.randint(0, 2)] = block
    return lines


def main() -> int:
    import pygit2

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="libgit2-vs-ort-")
    subprocess.run(["git", "init", "-q", scratch], check=True)
    repo = pygit2.Repository(scratch)
    sig = pygit2.Signature("a", "a@example.invalid", 1, 0)
    rng = random.Random(a.seed)

    def tree(lines: list[str]) -> pygit2.Oid:
        builder = repo.TreeBuilder()
        builder.insert("f.c", repo.create_blob(("\n".join(lines) + "\n").encode()), 0o100644)
        return builder.write()

    clean_vs_conflict = different_text = 0
    first = None
    for _ in range(a.trials):
        base = [rng.choice(LINES) for _ in range(rng.randint(8, 25))]
        ours, theirs = edit(rng, base), edit(rng, base)
        tb, to, tt = tree(base), tree(ours), tree(theirs)
        index = repo.merge_trees(tb, to, tt)
        lib_clean = not index.conflicts
        lib_tree = str(index.write_tree(repo)) if lib_clean else None
        b = repo.create_commit(None, sig, sig, "b", tb, [])
        o = repo.create_commit(None, sig, sig, "o", to, [b])
        t = repo.create_commit(None, sig, sig, "t", tt, [b])
        proc = subprocess.run(
            ["git", "merge-tree", "--write-tree", str(o), str(t)],
            cwd=scratch,
            capture_output=True,
            text=True,
        )
        ort_clean = proc.returncode == 0
        ort_tree = proc.stdout.split()[0] if ort_clean else None
        if lib_clean != ort_clean:
            clean_vs_conflict += 1
        elif lib_clean and lib_tree != ort_tree:
            different_text += 1
        else:
            continue
        if first is None:
            first = (base, ours, theirs)
    print(
        f"{a.trials} merges: {clean_vs_conflict} clean in one and conflicting in the other, "
        f"{different_text} clean in both with different text"
    )
    if first:
        for name, lines in zip(("base.c", "ours.c", "theirs.c"), first, strict=True):
            with open(os.path.join(scratch, name), "w") as f:
                f.write("\n".join(lines) + "\n")
        print(f"first case: {scratch}/{{base,ours,theirs}}.c")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
