"""The top-level commands by name, so that a command's module is imported only when it runs.

The group (`app.PatchstackGroup`) lists the commands from this table (``--help``, shell
completion) and imports ``patchstack.cli.MODULE`` for the one command it runs: ``status`` pays
for ``stack`` alone, not for review's renderer or refresh's engine. Each entry is the module
that registers the command and the first sentence of its help (what the command list shows);
`tests/test_fixed_costs.py` holds the table to the commands themselves.
"""

from __future__ import annotations

COMMANDS: dict[str, tuple[str, str]] = {
    "bisect": (
        "lab",
        "Find the first upstream commit after GOOD, up to BAD, at which COMMAND fails with the"
        " selected patches applied at every step.",
    ),
    "check": (
        "refresh",
        "Dry run: would the series apply on REV? Per-patch verdicts; nothing is touched.",
    ),
    "completion": (
        "completion",
        "Print the completion script for SHELL: commands, options, patch names and tags, for"
        " 'patchstack' and 'git patchstack'.",
    ),
    "delete": (
        "reorder",
        "Delete patches: out of the stack when applied, out of the series, and their files.",
    ),
    "demo": (
        "review",
        "Build a sandbox fork from the bundled example in DIR and walk the whole story.",
    ),
    "doctor": (
        "lab",
        "Is what runs what the series says? Where the interpreter imports the package from, and"
        " whether that matches this work tree and its patches.",
    ),
    "edit": (
        "edit",
        "Change a patch's subject and description (and author, and probe), applied or not.",
    ),
    "export": ("interop", "Export the series as a quilt tree or an mbox."),
    "fold": (
        "reorder",
        "Fold patch NAME into TARGET: one patch from two, with TARGET's name, tag and place.",
    ),
    "graph": (
        "review",
        "Which patch leans on which: an edge where a patch touches lines an earlier one wrote.",
    ),
    "help": ("manual", "Show the manual: the whole page, or the part about COMMAND."),
    "import": (
        "interop",
        "Import patches from a quilt series, a range of commits, a branch or an mbox.",
    ),
    "init": ("stack", "Create the series directory and its series file."),
    "log": (
        "oplog",
        "The operation log: every command that changed state, newest first; with NAME, the"
        " history of one patch (the commands that changed its file, its series line or whether"
        " it is applied, and what they changed).",
    ),
    "merge-driver": (
        "team",
        "Merge two maintainers' changes to the series file or a patch file (git runs it).",
    ),
    "move": ("reorder", "Move a patch to another place in the series, applied or not."),
    "new": ("edit", "Capture uncommitted edits (all, or those PATHs) as a new patch on top."),
    "pop": (
        "stack",
        "Unapply patches (NAME: it and every patch above it; default: the top one).",
    ),
    "push": (
        "stack",
        "Apply patches in series order (NAME: up to and including it; default: the next one).",
    ),
    "redo": ("oplog", "Revert the last undo (repeat to revert earlier undos)."),
    "refresh": (
        "refresh",
        "Make the patch files match reality after upstream moved, or fold edits into a patch.",
    ),
    "rename": (
        "edit",
        "Rename a patch: its file, its series line and, applied, its commit's trailer.",
    ),
    "resolutions": (
        "resolutions",
        "List the recorded conflict resolutions (of NAME only, when given), or --forget them.",
    ),
    "review": (
        "review",
        "Review a change to the series, patch by patch: OLD and NEW are revisions or directories.",
    ),
    "series": (
        "stack",
        "List the patches in order with their tags and whether each is applied.",
    ),
    "show": ("review", "Show one patch: its header, tag, place, line counts and diff."),
    "split": (
        "reorder",
        "Move files (PATHs), or hunks chosen interactively, of NAME into a new patch NEW placed"
        " right after it.",
    ),
    "status": (
        "stack",
        "Base, upstream drift, applied and unapplied patches, edits, and the next step.",
    ),
    "tag": (
        "edit",
        "Set a patch's tag (and labels), or add and remove labels; --names or --only/--except do"
        " it for several patches in one step (one 'patchstack undo' takes it back).",
    ),
    "undo": (
        "oplog",
        "Restore the state before the last command (STEPS: before the last STEPS commands).",
    ),
    "upstream": (
        "edit",
        "Record where a patch stands upstream, in DEP-3 fields of its header.",
    ),
    "worktree": (
        "lab",
        "Make a linked worktree at DIR with the selected patches applied onto REV, for"
        " side-by-side experiments; your own worktree is not touched.",
    ),
}

# Other names of a command, listed with it once ("delete, drop").
ALIASES: dict[str, str] = {"drop": "delete", "list": "series"}


def module_of(name: str) -> str | None:
    """The module (in ``patchstack.cli``) that registers the command NAME, if any does."""
    entry = COMMANDS.get(ALIASES.get(name, name))
    return entry[0] if entry else None
