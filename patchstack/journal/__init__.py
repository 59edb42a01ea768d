"""The operation log: every state change recorded in git objects, for undo, redo and crash
recovery.

`snapshot` (the state as git objects), `oplog` (entries on ``refs/patchstack/oplog``),
`restore` (putting a recorded state back). Writing an entry is the business of `transaction`,
the one place that publishes state changes.
"""
