"""The per-patch review of a change to a series: `side` (read one side, from a revision or a
folder), `compare` (what changed: added, dropped, reordered, retagged, rebased-only), `interdiff`
(the diff of two versions of a patch), `states` (the change of a patch's series mark, the
recorded resolutions), `graph` (which patches lean on which), `markup` and
`render` (Markdown, HTML, terminal), `jsondoc` (the JSON document)."""
