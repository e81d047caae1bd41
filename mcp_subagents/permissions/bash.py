"""The command model for permission checks: the simple commands of a command line, and the texts deny and ask
rules are matched against (wrappers such as `sudo` or `env` removed, code inside substitutions and `sh -c`).

The lexer itself lives in `shell_lexer`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .shell_lexer import Redirect, ShellSyntaxError, SimpleCommand, split_command

__all__ = ["WRAPPERS", "Redirect", "ShellSyntaxError", "SimpleCommand", "matching_variants", "split_command"]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_MAX_NESTING = 3

WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "time": frozenset({"-f", "-o"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-a", "-E", "-e"}),
    "watch": frozenset({"-n", "-d"}),
}
"""Commands that run the command after them; option names that take a value are listed."""


def matching_variants(command: SimpleCommand, *, depth: int = 0) -> Iterator[str]:
    """Texts a deny or ask rule is matched against: the command, the command without quotes, the command
    after wrappers such as `sudo`, `env X=1`, `timeout 5`, and the commands inside substitutions, `sh -c '...'`
    and `eval`."""
    yield command.text
    yield command.value_text
    for start in _wrapped_starts(command.values):
        yield " ".join(command.words[start:])
        yield " ".join(command.values[start:])
    if depth >= _MAX_NESTING:
        return
    shell_script = _inner_script(command.values)
    for script in (*command.scripts, *([shell_script] if shell_script is not None else [])):
        try:
            inner = split_command(script)
        except ShellSyntaxError:
            continue
        for piece in inner:
            yield from matching_variants(piece, depth=depth + 1)


def _wrapped_starts(values: tuple[str, ...]) -> Iterator[int]:
    index = 0
    while index < len(values):
        word = values[index]
        if _ASSIGNMENT.match(word):
            index += 1
            yield index
            continue
        options = WRAPPERS.get(word)
        if options is None:
            return
        index += 1
        while index < len(values) and values[index].startswith("-") and values[index] != "-":
            option = values[index]
            index += 1
            if option == "--":
                break
            if option in options and index < len(values):
                index += 1
        if word == "timeout" and index < len(values):
            index += 1
        yield index


def _inner_script(values: tuple[str, ...]) -> str | None:
    starts = [0, *_wrapped_starts(values)]
    for start in starts:
        rest = list(values[start:])
        if not rest:
            continue
        if rest[0] == "eval" and len(rest) > 1:
            return " ".join(rest[1:])
        if rest[0].rsplit("/", 1)[-1] in _SHELLS:
            for index, word in enumerate(rest[1:-1], start=1):
                if not word.startswith("-"):
                    break
                if not word.startswith("--") and "c" in word:
                    return rest[index + 1]
    return None
