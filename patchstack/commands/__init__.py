"""One module per command: each plans its work and returns values; the CLI prints them."""
