"""What a long command says while it works: its steps, and the count within a step.

A command (or the transaction that publishes it) names each step as it starts
(``progress.step("writing the work tree")``) and reports counts where it has them
(``progress(done, total)``, the callable the engine takes). `Progress` itself reports nothing;
the CLI gives each command one that draws on a terminal (`cli.progress`). Nothing here
prints, so the functional core stays free of the terminal.
"""

from __future__ import annotations


class Progress:
    """Reports nothing: the default, and what tests and library callers get."""

    def step(self, label: str, total: int | None = None) -> None:
        """A new step begins (the one before is done); ``total``: how many items it counts."""

    def __call__(self, done: int, total: int) -> None:
        """``done`` of ``total`` items of the current step."""

    def close(self) -> None:
        """The command's work is over (the last step is done)."""


QUIET = Progress()
