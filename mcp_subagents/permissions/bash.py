"""The command model for permission checks: the simple commands of a command line, and the texts deny and ask
rules are matched against (wrappers such as `sudo` or `env` removed, code inside substitutions and `sh -c`).

The lexer itself lives in `shell_lexer`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .shell_lexer import Redirect, ShellSyntaxError, SimpleCommand, split_command

__all__ = [
    "SHELLS",
    "WRAPPERS",
    "Redirect",
    "ShellSyntaxError",
    "SimpleCommand",
    "command_start",
    "inner_commands",
    "matching_variants",
    "printed_text",
    "program_name",
    "shell_input",
    "split_command",
]

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox-sh"})
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_FIND_RUNNERS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
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
    "busybox": frozenset(),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
}
"""Commands that run the command after them; option names that take a value are listed."""


def program_name(word: str) -> str:
    """The program a command word runs, as rules name it: `/bin/rm` and `./rm` are `rm`."""
    return word.rsplit("/", 1)[-1]


def matching_variants(command: SimpleCommand, *, fed: str | None = None, depth: int = 0) -> Iterator[str]:
    """Texts a deny or ask rule is matched against: the command, the command without quotes, the command
    after wrappers such as `sudo`, `env X=1`, `timeout 5`, with a path program written by its name (`/bin/rm` is
    `rm`), and the commands inside substitutions, `sh -c '...'`, `eval`, `find -exec` and what a shell reads
    from a here-document, a here-string or a pipe (`fed`: the text the command before it printed)."""
    yield command.text
    yield command.value_text
    for start in (0, *_wrapped_starts(command.values)):
        if start:
            yield " ".join(command.words[start:])
            yield " ".join(command.values[start:])
        if start < len(command.values) and "/" in command.values[start]:
            yield " ".join((program_name(command.values[start]), *command.values[start + 1 :]))
    if depth >= _MAX_NESTING:
        return
    for inner in inner_commands(command, fed=fed):
        yield from matching_variants(inner, depth=depth + 1)


def inner_commands(command: SimpleCommand, *, fed: str | None = None) -> Iterator[SimpleCommand]:
    """The commands this command runs in turn, as far as the command line shows them: those in its
    substitutions, `sh -c '...'`, `eval`, `find -exec`, and what a shell reads from a here-document, a here-string
    or a pipe (`fed`). Code that does not parse is skipped: the outer command is judged as opaque instead."""
    for inner_values in _found_commands(command.values):
        yield SimpleCommand(words=inner_values, values=inner_values)
    for script in (*command.scripts, *_inner_scripts(command, fed)):
        try:
            yield from split_command(script)
        except ShellSyntaxError:
            continue


def printed_text(command: SimpleCommand) -> str | None:
    """What `echo`, `printf` or `cat` with a here-document writes to a pipe, when the command line shows it."""
    values = command.values[command_start(command.values) :]
    if not values:
        return None
    program = program_name(values[0])
    if program in ("echo", "printf"):
        return " ".join(word for word in values[1:] if program == "printf" or word not in ("-n", "-e", "-E"))
    if program == "cat" and len(values) == 1 and command.stdin:
        return "\n".join(command.stdin)
    return None


def command_start(values: tuple[str, ...]) -> int:
    """Where the program that really runs starts, after variable assignments and wrappers such as `sudo`."""
    return max((0, *_wrapped_starts(values)))


def _wrapped_starts(values: tuple[str, ...]) -> Iterator[int]:
    index = 0
    while index < len(values):
        word = values[index]
        if _ASSIGNMENT.match(word):
            index += 1
            yield index
            continue
        options = WRAPPERS.get(program_name(word))
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
        if program_name(word) == "timeout" and index < len(values):
            index += 1
        yield index


def _inner_scripts(command: SimpleCommand, fed: str | None) -> Iterator[str]:
    """Code the command hands to a shell: `eval ...`, `sh -c '...'`, `env -S '...'`, `watch '...'`, and for a
    shell that reads its input, the here-documents, here-strings and piped text it would run."""
    values = command.values
    for start in (0, *_wrapped_starts(values)):
        rest = values[start:]
        if not rest:
            continue
        program = program_name(rest[0])
        if program == "eval" and len(rest) > 1:
            yield " ".join(rest[1:])
        elif program == "watch" and len(rest) > 1:
            yield " ".join(word for word in rest[1:] if not word.startswith("-"))
        elif program == "env":
            yield from _env_split_strings(rest)
        elif program in SHELLS:
            how, script = shell_input(rest)
            if how == "string" and script is not None:
                yield script
            elif how == "stdin":
                yield from command.stdin
                if fed is not None:
                    yield fed


def shell_input(values: tuple[str, ...]) -> tuple[str, str | None]:
    """How a shell invocation (`values[0]` is the shell) gets its code: ("string", code) for `-c`, ("file", path)
    for a script file, ("stdin", None) when it reads its input."""
    index, command_string = 1, False
    while index < len(values):
        word = values[index]
        if word == "--":
            index += 1
            break
        if word in _SHELL_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if word.startswith("--"):
            index += 1
            continue
        if len(word) > 1 and word[0] in "-+":
            command_string = command_string or (word[0] == "-" and "c" in word[1:])
            index += 1
            continue
        break
    operand = values[index] if index < len(values) else None
    if command_string:
        return "string", operand
    if operand is None or operand == "-":
        return "stdin", None
    return "file", operand


def _env_split_strings(values: tuple[str, ...]) -> Iterator[str]:
    for index, word in enumerate(values):
        if word in ("-S", "--split-string") and index + 1 < len(values):
            yield values[index + 1]
        elif word.startswith("--split-string="):
            yield word.partition("=")[2]
        elif word.startswith("-S") and len(word) > 2:
            yield word[2:]


def _found_commands(values: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The commands `find` runs: `-exec cmd ... ;` and its kin, and `-delete` as the `rm` it amounts to."""
    start = command_start(values)
    if start >= len(values) or program_name(values[start]) != "find":
        return
    rest = values[start + 1 :]
    places = tuple(word for word in _leading_operands(rest)) or (".",)
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in _FIND_RUNNERS:
            end = index + 1
            while end < len(rest) and rest[end] not in (";", "+"):
                end += 1
            if end > index + 1:
                yield rest[index + 1 : end]
            index = end
        elif word == "-delete":
            yield ("rm", "-rf", *places)
            yield ("rm", *places)
        index += 1


def _leading_operands(words: tuple[str, ...]) -> Iterator[str]:
    for word in words:
        if word.startswith(("-", "(", "!")) or word in ("(", ")", "!"):
            return
        yield word
