"""The command-line interface: parse arguments, call a command, print, exit.

Exit statuses: 0 done; 1 conflict (a patch does not apply or merge; `check` found one);
2 bad input, usage, or a refusal that changed nothing. `app` holds the group, its options and
the one place where domain errors become exit statuses; `output` the terminal conventions;
the other modules the commands, by topic, each imported only when one of its commands runs
(`registry` names them). Heavy modules are imported inside the commands, so ``--help`` and
``--version`` start fast.
"""

from .app import cli, main

__all__ = ["cli", "main"]
