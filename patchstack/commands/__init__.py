"""One module per command: each reads the state, plans its change in the object database and
hands the plan to `transaction.publish` (or only reads, and returns values for the CLI)."""
