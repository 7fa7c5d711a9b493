"""``gpu-wizard completion bash|zsh|fish``: shell completion generated from the command line's own parser.

Every command, subcommand, option and choice comes from :func:`wizard.cli.main.build_parser` (and the
demo server's parser for ``demo serve``), so completion never lags behind the flags. What is only
known at run time is asked when the user presses TAB: context names from the kubeconfig
(``gpu-wizard completion --list contexts``, merged like kubectl, honouring ``--kubeconfig`` and
``$KUBECONFIG``: a fraction of a second, nothing heavy is imported); scenario names are the bundled
ones, written into the script. Options that take a file complete file names.
zsh uses the bash function through ``bashcompinit`` (the function is the same); fish gets its own
``complete`` lines. ``kubectl gpu-wizard …<TAB>`` asks ``kubectl_complete-gpu_wizard`` (an entry point of the
package), which walks the same tree in Python and answers in the format kubectl reads from plugins.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from wizard.cli.common import EXIT_OK, UsageError, subparsers

SHELLS = ("bash", "zsh", "fish")
Kind = Literal["contexts", "files", "dirs", "words", "text"]


@dataclass
class Option:
    """One option of one command: its spellings, whether it takes a value, and what completes that value."""

    strings: list[str]
    help: str
    takes_value: bool
    kind: Kind = "text"
    words: list[str] = field(default_factory=list)


@dataclass
class Command:
    """A command path (``""`` for the top level, ``"answers init"``), its subcommands and options."""

    path: str
    help: str = ""
    subcommands: dict[str, str] = field(default_factory=dict)
    options: list[Option] = field(default_factory=list)
    arguments: list[str] = field(default_factory=list)
    """The choices of its positional arguments (``completion bash|zsh|fish``)."""


def _kind(action: argparse.Action) -> tuple[Kind, list[str]]:
    strings = set(action.option_strings)
    metavar = str(action.metavar or "")
    if action.choices:
        return "words", [str(c) for c in action.choices]
    if "--context" in strings:
        return "contexts", []
    if strings & {"--demo", "--scenario"}:  # bundled: written into the script, no program runs at TAB
        return "words", _scenario_names()
    if metavar == "DIR":
        return "dirs", []
    if "--kubeconfig" in strings or metavar.startswith("FILE") or metavar in {"PATH", "NODELIST.json"}:
        return "files", []
    return "text", []


def _options(parser: argparse.ArgumentParser) -> list[Option]:
    found = []
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        kind, words = _kind(action)
        takes = action.nargs != 0
        found.append(Option(list(action.option_strings), action.help or "", takes, kind if takes else "text", words))
    return found


def commands(parser: argparse.ArgumentParser) -> list[Command]:
    """Every command path of ``parser``, the top level first."""
    out: list[Command] = []

    def walk(path: str, node: argparse.ArgumentParser, help_text: str) -> None:
        command = Command(path, help_text, options=_options(node) if node.prefix_chars == "-" else [])
        if path == "demo serve":  # its options are the demo server's own parser's
            from wizard.demo.serve import parser as demo_parser

            command.options = _options(demo_parser())
        helps = _help_by_name(node)
        children = subparsers(node)
        command.subcommands = {name: helps.get(name, "") for name in children}
        command.arguments = [
            str(choice)
            for action in node._actions
            if not action.option_strings and action.choices and not isinstance(action, argparse._SubParsersAction)
            for choice in action.choices
        ]
        out.append(command)
        for name, child in children.items():
            walk(f"{path} {name}".strip(), child, helps.get(name, ""))

    walk("", parser, "")
    return out


def _help_by_name(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _words(names: list[str]) -> str:
    return " ".join(names)


def _bash_value(option: Option) -> str:
    if option.kind == "contexts":
        return '_gpu_wizard_reply "$(_gpu_wizard_list contexts)"'
    if option.kind == "files":
        return 'COMPREPLY=($(compgen -f -- "$cur"))'
    if option.kind == "dirs":
        return 'COMPREPLY=($(compgen -d -- "$cur"))'
    if option.kind == "words":
        return f'_gpu_wizard_reply "{_words(option.words)}"'
    return "COMPREPLY=()"


def bash_script(parser: argparse.ArgumentParser) -> str:
    """The bash completion function ``_gpu_wizard`` and its ``complete`` line."""
    tree = commands(parser)
    values, subs, opts, arguments = [], [], [], []
    for command in tree:
        for option in command.options:
            if option.takes_value:
                keys = "|".join(f'"{command.path}|{s}"' for s in option.strings)
                values.append(f"        {keys}) {_bash_value(option)}; return 0 ;;")
        if command.subcommands:
            subs.append(f'        "{command.path}") subs="{_words(list(command.subcommands))}" ;;')
        if command.arguments:
            arguments.append(f'        "{command.path}") subs="{_words(command.arguments)}" ;;')
        flags = [s for o in command.options for s in o.strings]
        opts.append(f'        "{command.path}") opts="{_words(flags)}" ;;')
    takes = ";".join(sorted({f"{c.path}|{s}" for c in tree for o in c.options if o.takes_value for s in o.strings}))
    return f"""# bash completion for gpu-wizard (generated by `gpu-wizard completion bash`; load it with
#   source <(gpu-wizard completion bash)    or save it in ~/.local/share/bash-completion/completions/gpu-wizard)
_gpu_wizard_list() {{
    [[ -n ${{ZSH_VERSION-}} ]] && setopt localoptions ksharrays  # zsh's bashcompinit: arrays from 0, as in bash
    local kubeconfig="" i
    for ((i=1; i<${{#COMP_WORDS[@]}}; i++)); do
        if [[ "${{COMP_WORDS[i]}}" == --kubeconfig ]]; then kubeconfig="${{COMP_WORDS[i+1]}}"; fi
    done
    "${{COMP_WORDS[0]}}" completion --list "$1" ${{kubeconfig:+--kubeconfig "$kubeconfig"}} 2>/dev/null
}}
_gpu_wizard_reply() {{
    local IFS=$' \\t\\n'
    COMPREPLY=($(compgen -W "$1" -- "$cur"))
}}
_gpu_wizard() {{
    [[ -n ${{ZSH_VERSION-}} ]] && setopt localoptions ksharrays
    # not "path": zsh ties that name to $PATH
    local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="" cmdpath="" word i
    local takes=";{takes};"
    (( COMP_CWORD > 1 )) && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    for ((i=1; i<COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        [[ "$word" == -* ]] && continue
        [[ $i -gt 1 && "$takes" == *";$cmdpath|${{COMP_WORDS[i-1]}};"* ]] && continue
        local subs=""
        case "$cmdpath" in
{chr(10).join(subs)}
        esac
        [[ " $subs " == *" $word "* ]] && cmdpath="${{cmdpath:+$cmdpath }}$word"
    done
    case "$cmdpath|$prev" in
{chr(10).join(values)}
    esac
    if [[ "$cur" == -* ]]; then
        local opts=""
        case "$cmdpath" in
{chr(10).join(opts)}
        esac
        _gpu_wizard_reply "$opts"
        return 0
    fi
    local subs=""
    case "$cmdpath" in
{chr(10).join(subs)}
{chr(10).join(arguments)}
    esac
    if [[ -n "$subs" ]]; then _gpu_wizard_reply "$subs"; else COMPREPLY=($(compgen -f -- "$cur")); fi
    return 0
}}
complete -F _gpu_wizard gpu-wizard
complete -F _gpu_wizard kubectl-gpu_wizard
"""


def zsh_script(parser: argparse.ArgumentParser) -> str:
    """zsh: the bash function through ``bashcompinit`` (one implementation for both shells)."""
    return (
        "#compdef gpu-wizard\n# zsh completion for gpu-wizard (generated by `gpu-wizard completion zsh`; load it with\n"
        "#   source <(gpu-wizard completion zsh))\n"
        "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n" + bash_script(parser)
    )


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish_script(parser: argparse.ArgumentParser) -> str:
    """fish: one ``complete`` line per subcommand and option, conditioned on the words typed so far."""
    lines = [
        "# fish completion for gpu-wizard (generated by `gpu-wizard completion fish`; load it with",
        "#   gpu-wizard completion fish | source)",
        "function __gpu_wizard_path",
        "    set -l words (commandline -opc)",
        "    set -e words[1]",
        "    set -l path",
        "    for word in $words",
        "        string match -q -- '-*' $word; and continue",
        "        set -a path $word",
        "    end",
        '    echo (string join " " -- $path)',
        "end",
        "function __gpu_wizard_at",
        "    set -l path (__gpu_wizard_path)",
        "    for candidate in $argv",
        '        test "$path" = "$candidate"; and return 0',
        "    end",
        "    return 1",
        "end",
        "complete -c gpu-wizard -f",
    ]
    for command in commands(parser):
        at = f"__gpu_wizard_at {_fish_quote(command.path)}"
        for name, help_text in command.subcommands.items():
            lines.append(f"complete -c gpu-wizard -n {_fish_quote(at)} -a {name} -d {_fish_quote(help_text[:60])}")
        if command.arguments:
            lines.append(f"complete -c gpu-wizard -n {_fish_quote(at)} -a {_fish_quote(' '.join(command.arguments))}")
        for option in command.options:
            spec = " ".join(f"-l {s[2:]}" if s.startswith("--") else f"-s {s[1:]}" for s in option.strings)
            value = ""
            if option.kind == "contexts":
                value = " -x -a '(gpu-wizard completion --list contexts)'"
            elif option.kind in ("files", "dirs"):
                value = " -r -F"
            elif option.kind == "words":
                value = f" -x -a {_fish_quote(' '.join(option.words))}"
            elif option.takes_value:
                value = " -x"
            lines.append(
                f"complete -c gpu-wizard -n {_fish_quote(at)} {spec}{value} -d {_fish_quote(option.help[:60])}"
            )
    return "\n".join(lines) + "\n"


@functools.cache
def _scenario_names() -> list[str]:
    """The bundled demo scenarios, once per script (the facade loads the Kubernetes client: seconds at every TAB)."""
    from wizard.cluster.facade import demo_scenarios

    return demo_scenarios()


def list_names(what: str, kubeconfig: str | None) -> list[str]:
    """Context names for a completion (read at TAB, like kubectl); ``[]`` when unreadable (a TAB never errors)."""
    if what == "scenarios":
        return _scenario_names()
    from wizard.cluster.access.kubeconfig import list_contexts
    from wizard.cluster.errors import ClusterError

    try:
        return list_contexts(kubeconfig)[0]
    except (ClusterError, OSError, ValueError):
        return []


NO_FILES, FILES, DIRS = 4, 0, 16
"""cobra's completion directives, which kubectl reads from a plugin's completer: none, files, folders."""


def complete(parser: argparse.ArgumentParser, words: list[str]) -> tuple[list[tuple[str, str]], int]:
    """What ``WORDS<TAB>`` offers (the last word is the one being typed): ``(name, help)`` pairs and a directive.

    The same tree as the shell scripts (:func:`commands`), walked in Python: what kubectl asks a plugin's
    completer (``kubectl gpu-wizard …<TAB>`` runs ``kubectl_complete-gpu_wizard WORDS``).
    """
    *typed, current = words or [""]
    tree = {command.path: command for command in commands(parser)}
    path, pending, kubeconfig = "", None, None
    for word in typed:
        if pending is not None:
            kubeconfig = word if "--kubeconfig" in pending.strings else kubeconfig
            pending = None
        elif word.startswith("-"):
            option = next((o for o in tree[path].options if word in o.strings), None)
            pending = option if option is not None and option.takes_value else None
        elif word in tree[path].subcommands:
            path = f"{path} {word}".strip()
    command = tree[path]
    if pending is not None:
        if pending.kind == "files":
            return [], FILES
        if pending.kind == "dirs":
            return [], DIRS
        names = list_names("contexts", kubeconfig) if pending.kind == "contexts" else pending.words
        return [(n, "") for n in names if n.startswith(current)], NO_FILES
    if current.startswith("-"):
        offered = [(s, o.help) for o in command.options for s in o.strings if s.startswith(current)]
        return offered, NO_FILES
    choices = {**command.subcommands, **{argument: "" for argument in command.arguments}}
    if choices:
        return [(name, text) for name, text in choices.items() if name.startswith(current)], NO_FILES
    return [], FILES


def kubectl_answer(parser: argparse.ArgumentParser, words: list[str]) -> str:
    """What a kubectl plugin's completer prints for ``WORDS``: one ``name<TAB>help`` line each, then ``:directive``."""
    offered, directive = complete(parser, words)
    lines = [f"{name}\t{text.splitlines()[0][:80]}" if text else name for name, text in offered]
    return "".join(f"{line}\n" for line in lines) + f":{directive}\n"


def cmd_completion(args: argparse.Namespace) -> int:
    """``gpu-wizard completion SHELL`` (or ``--list contexts|scenarios``, what the scripts call)."""
    if args.list:
        names = list_names(args.list, args.kubeconfig)
        sys.stdout.write("".join(f"{name}\n" for name in names))
        return EXIT_OK
    if args.shell is None:
        raise UsageError(f"completion: name a shell: {', '.join(SHELLS)}")
    parser = args.build_parser()
    script = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}[args.shell](parser)
    sys.stdout.write(script)
    return EXIT_OK


def register(sub: Any, build_parser: Callable[[], argparse.ArgumentParser]) -> None:
    """Add ``completion`` to ``gpu-wizard``'s subparsers (called by :mod:`wizard.cli.main`, which hands over its
    parser builder: the script describes the whole command line)."""
    completion = sub.add_parser("completion", help="print the shell completion script for bash, zsh or fish")
    completion.add_argument("shell", nargs="?", choices=SHELLS, help="the shell (bash, zsh or fish)")
    completion.add_argument("--list", choices=("contexts", "scenarios"), help=argparse.SUPPRESS)
    completion.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    completion.set_defaults(handler=cmd_completion, build_parser=build_parser)
