"""``patchstack completion SHELL``: the shell completion script, for ``patchstack`` and for
``git patchstack`` (git's own completion calls ``_git_patchstack`` in bash and
``_git-patchstack`` in zsh for a command it does not know)."""

from __future__ import annotations

import click

from .app import cli

# The git side of each shell: hand click the words from "patchstack" on.
GIT_WRAPPERS = {
    "bash": r"""
_git_patchstack() {
    local IFS=$'\n'
    local response completion type value
    response=$(env COMP_WORDS="${words[*]:1}" COMP_CWORD=$((cword - 1)) \
        _PATCHSTACK_COMPLETE=bash_complete patchstack)
    for completion in $response; do
        IFS=',' read -r type value <<< "$completion"
        case $type in
            dir) COMPREPLY=(); compopt -o dirnames 2>/dev/null ;;
            file) COMPREPLY=(); compopt -o default 2>/dev/null ;;
            plain) COMPREPLY+=("$value ") ;;
        esac
    done
}
""",
    "zsh": r"""
_git-patchstack() {
    _patchstack_completion
}
zstyle ':completion:*:*:git:*' user-commands patchstack:'keep a patch series on a fork'
""",
    "fish": r"""
function _patchstack_git_completion
    set -l line (string replace -r '^\s*git\s+' '' -- (commandline -cp))
    env _PATCHSTACK_COMPLETE=fish_complete COMP_WORDS=$line COMP_CWORD=(commandline -t) \
        patchstack | string replace -r '^plain,' '' | string match -v -r '^(dir|file),'
end
complete --no-files --command git --condition '__fish_seen_subcommand_from patchstack' \
    --arguments '(_patchstack_git_completion)'
""",
}


@cli.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the completion script for SHELL: commands, options, patch names and tags, for
    'patchstack' and 'git patchstack'.

    \b
    Example:
      eval "$(patchstack completion bash)"         # in ~/.bashrc
      eval "$(patchstack completion zsh)"          # in ~/.zshrc
      patchstack completion fish | source          # in ~/.config/fish/config.fish
    """
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    assert cls is not None
    script = cls(cli, {}, "patchstack", "_PATCHSTACK_COMPLETE").source()
    click.echo(script.rstrip("\n") + "\n" + GIT_WRAPPERS[shell])
