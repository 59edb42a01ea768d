"""The build engine: patches as trees and commits in the object database.

`chain` (the canonical chain and placement by three-way merge), `fastpath` (hunks applied in
Python and proven by blob ids, committed in one fast-import stream), `cache` (results keyed by
their inputs), `merging` (merges with readable conflict markers and the conflict report),
`replay` (carrying a whole series onto a new base, for refresh and check).
"""
