"""The floor of a real drift: what the plain algorithm's merges alone cost.

    python tools/bench/merge_floor.py CLONE BASE TIP ONTO [--each]

Each commit of BASE..TIP (a linear branch) is merged onto ONTO's tree in turn with merge-ort
(`Git.merge_trees`: one ``merge-tree --stdin`` process, or with ``--each`` a process per
merge), a conflicting one left out, as ``git rebase`` skipping its stops does. Prints the
conflicts, the final tree (rebase's, for the same stops) and the CPU seconds of the merges
(user+sys of the git processes), against which ``check --onto`` and ``refresh --onto`` can be
read: no tool that merges every patch can take less."""

from __future__ import annotations

import os
import resource
import sys
import time


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--each"]
    if len(args) != 4:
        sys.exit(__doc__)
    if "--each" in sys.argv:
        os.environ["PATCHSTACK_NO_MERGE_BATCH"] = "1"
    from patchstack.git import find_repo

    clone, base, tip, onto = args
    git = find_repo(clone)
    git.use_scratch()  # the merges' objects in memory, as a replay writes them
    out = git.run("rev-list", "--reverse", f"{base}..{tip}").stdout.decode().split()
    tree = git.tree_of(onto)
    pairs = [(git.tree_of(c + "^"), git.tree_of(c)) for c in out]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    conflicts = []
    for commit, (b, a) in zip(out, pairs, strict=True):
        merged = git.merge_trees(b, tree, a, ("ours", "theirs"))
        if merged.clean:
            tree = merged.tree
        else:
            conflicts.append(commit)
    git.drop_scratch()
    git.close()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(
        f"{len(out)} commits, {len(conflicts)} conflicts, tree {tree}:"
        f" merges {cpu:.2f} CPU s, {time.perf_counter() - start:.2f} s wall"
    )


if __name__ == "__main__":
    main()
