"""``refresh`` and what it shares: `start` (where the new base comes from, the replay, a fold
of edits into a patch), `settle` (finish, or stop at a conflict), `stopped` (the stopped
state, kept in the journal), `resume` (``--continue`` and ``--abort``), `proof` (is each
applied commit still exactly its patch file: every command that moves the stack asks it),
`adopt` (a commit made by hand becomes a patch: ``new --from-commit``), `drift` (how far
upstream moved since the series base, for ``status``)."""
