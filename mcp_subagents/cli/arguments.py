"""The command line's grammar: the parser of each command with its options, and the settings a command line
gives. Each command's options are added only when that command runs (some fifty flags for each command took 26 ms
to add, on every start of the server)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar, cast

from ..config.settings import (
    DATABASE_OPTION,
    RUN_OPTIONS,
    SERVE_OPTIONS,
    SOURCE_OPTIONS,
    Option,
    Settings,
    add_options,
    port_number,
    settings_from,
)
from ..core.errors import ConfigError
from ..core.version import __version__

ALL_OPTIONS = (*SOURCE_OPTIONS, *RUN_OPTIONS, *SERVE_OPTIONS)
STATE_DIR_OPTIONS = tuple(option for option in RUN_OPTIONS if option.flag == "--state-dir")
TASKS_OPTIONS = (*STATE_DIR_OPTIONS, DATABASE_OPTION)
USAGE_ERROR = 2
"""The exit status of a command line that does not parse, as argparse and shells have it."""

_T = TypeVar("_T")


class CommandParser(argparse.ArgumentParser):
    """A parser whose errors are one line that says what is wrong in plain words and which `--help` tells more,
    instead of argparse's usage block (forty lines for `serve`)."""

    help_command: str | None = None
    """The command a mistake is reported for (`mcp-subagents serve`); None: this parser's own. The top parser
    reports the mistakes it finds after a command's parser ran (an unknown option) for that command."""

    def error(self, message: str) -> NoReturn:
        command = self.help_command or self.prog
        self.exit(USAGE_ERROR, f"{command}: {self._plain(message)} (see {command} --help)\n")

    def _plain(self, message: str) -> str:
        if message.startswith("unrecognized arguments: "):
            words = message.removeprefix("unrecognized arguments: ").split()
            options = [word for word in words if word.startswith("-")]
            return f"unknown option {options[0]}" if options else f"unexpected argument {words[0]!r}"
        if message.startswith("the following arguments are required: "):
            return f"missing {message.removeprefix('the following arguments are required: ')}{self._choices()}"
        if found := re.fullmatch(r"argument (\S+): expected one argument", message):
            return f"{found[1]} needs a value"
        if found := re.fullmatch(r"argument (\S+): invalid choice: (.+?) \(choose from .*\)", message, re.S):
            return f"unknown {found[1].lower()} {found[2]}{self._choices()}"
        if found := re.fullmatch(r"argument (\S+): not allowed with argument (\S+)", message):
            return f"{found[1]} and {found[2]} cannot go together"
        if found := re.fullmatch(r"argument (\S+): ignored explicit argument .*", message):
            return f"{found[1]} takes no value"
        if found := re.fullmatch(r"one of the arguments (.+) is required", message):
            *others, last = found[1].split()
            return f"give {', '.join(others)} or {last}"
        return message.removeprefix("argument ")

    def _choices(self) -> str:
        """`: one of serve, run, ...` for a parser of commands or actions."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
                commands = cast("argparse._SubParsersAction[CommandParser]", action)  # pyright: ignore[reportPrivateUsage]
                return f": one of {', '.join(commands.choices)}"
        return ""


def plain_argument(convert: Callable[[str], _T]) -> Callable[[str], _T]:
    """`convert` as an argparse `type` whose ValueError's own words are shown (argparse shows its own otherwise)."""

    def parse(raw: str) -> _T:
        try:
            return convert(raw)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def build_parser(command_line: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for `command_line` (which names its command first, see `with_command`): only that command gets
    its options (some fifty flags for each command took 26 ms to add, on every start of the server)."""
    chosen = command_line[0] if command_line else None

    def add_options_if_chosen(command: str, parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
        if command == chosen:
            add_options(parser, options)

    parser = CommandParser(
        prog="mcp-subagents",
        description="Claude-Code-style subagents for any MCP host. Without a command, `serve` is assumed.",
    )
    parser.help_command = _command_words(command_line)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    add_options_if_chosen("serve", serve, (*SERVE_OPTIONS, *SOURCE_OPTIONS, *RUN_OPTIONS))

    run = commands.add_parser(
        "run",
        help="run one subagent from the shell and print its result",
        usage='%(prog)s AGENT "PROMPT" [options]  |  %(prog)s --resume ID "PROMPT" [options]',
        description=(
            "Run one subagent from the shell and print its result. When stdin is a terminal, the task's permission "
            "questions are asked there: allow once, always allow or deny. Otherwise a question waits, as a "
            "background task's does, for `mcp-subagents tasks answer` or the dashboard, and is denied after "
            "--ask-timeout."
        ),
    )
    run.add_argument("words", nargs="+", metavar="AGENT PROMPT", help="subagent type (e.g. Explore), then the task")
    run.add_argument("--resume", metavar="ID", help="continue an earlier task's conversation with PROMPT")
    run.add_argument("--raw", action="store_true", help="print the <task_result> envelope a host gets")
    run.add_argument("--max-turns-for-run", dest="task_max_turns", type=plain_argument(_turns), help=argparse.SUPPRESS)
    add_options_if_chosen("run", run, (*SOURCE_OPTIONS, *RUN_OPTIONS))

    agents = commands.add_parser("agents", help="list or validate agent definitions")
    agent_commands = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    listing = agent_commands.add_parser("list", help="the active agents and the files that failed to load")
    listing.add_argument("--json", action="store_true", help='print JSON: {"agents": [...], "errors": [...]}')
    add_options_if_chosen("agents", listing, SOURCE_OPTIONS)
    validate = agent_commands.add_parser("validate", help="check agent files or folders; exit 1 if any has a problem")
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH")

    dashboard = commands.add_parser(
        "dashboard", help="the browser dashboard of a state directory, on 127.0.0.1 (every task, live)"
    )
    dashboard.add_argument(
        "--port", type=plain_argument(port_number), default=0, help="port on 127.0.0.1 (default: 0, any free port)"
    )
    add_options_if_chosen("dashboard", dashboard, (*SOURCE_OPTIONS, *RUN_OPTIONS))

    _add_tasks_parser(commands, chosen == "tasks")
    return parser


TASK_ACTION_HELP = {
    "show": "a task's state, tokens, cost and result (or its output so far)",
    "tail": "print a task's output and follow it until the task ends",
    "stop": "stop a running task, whichever server process runs it",
    "answer": "answer the permission question a task waits on, whichever server process runs it",
}
TASK_ACTIONS = ("list", *TASK_ACTION_HELP)


def _add_tasks_parser(commands: argparse._SubParsersAction[CommandParser], chosen: bool) -> None:  # pyright: ignore[reportPrivateUsage]
    def add_options_if_chosen(_command: str, parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
        if chosen:
            add_options(parser, options)

    tasks = commands.add_parser("tasks", help="list, show, follow, stop or answer the tasks of a state directory")
    task_commands = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    task_list = task_commands.add_parser("list", help="every task of the state directory, newest first")
    task_list.add_argument("--json", action="store_true", help="print a JSON list of tasks")
    add_options_if_chosen("tasks", task_list, TASKS_OPTIONS)
    for action, help_text in TASK_ACTION_HELP.items():
        command = task_commands.add_parser(action, help=help_text)
        command.add_argument("task_id", metavar="ID", help="the task id (or its first 6 or more characters)")
        if action == "answer":
            choice = command.add_mutually_exclusive_group(required=True)
            choice.add_argument("--allow", dest="choice", action="store_const", const="allow", help="allow this call")
            choice.add_argument(
                "--always",
                dest="choice",
                action="store_const",
                const="always",
                help="allow it, and add the question's rule to the project's .claude/settings.local.json",
            )
            choice.add_argument("--deny", dest="choice", action="store_const", const="deny", help="deny this call")
            command.add_argument("--question", metavar="QID", help="which question (default: the oldest open one)")
        add_options_if_chosen("tasks", command, TASKS_OPTIONS)


COMMANDS = {"serve": (), "run": (), "agents": ("list", "validate"), "dashboard": (), "tasks": TASK_ACTIONS}


def _command_words(command_line: Sequence[str]) -> str | None:
    """`mcp-subagents tasks show` for a command line that names a command (and its action): where a mistake the top
    parser finds after the command's own parser ran is reported."""
    if not command_line or command_line[0] not in COMMANDS:
        return None
    words = ["mcp-subagents", command_line[0]]
    if len(command_line) > 1 and command_line[1] in COMMANDS[command_line[0]]:
        words.append(command_line[1])
    return " ".join(words)


def _turns(raw: str) -> int:
    value = int(raw) if raw.strip().isdigit() else 0
    if value <= 0:
        raise ValueError(f"must be a positive number of turns, got {raw!r}")
    return value


def parser_for(command_line: Sequence[str]) -> argparse.ArgumentParser:
    """`build_parser(command_line)`, built once per command in a process (parsing leaves a parser as it was): the
    warm server builds the `serve` parser before it forks, and each server it forks parses with it (4.7 ms less)."""
    key = (command_line[0] if command_line else None, _command_words(command_line))
    parser = _PARSERS.get(key)
    if parser is None:
        parser = _PARSERS[key] = build_parser(command_line)
    return parser


_PARSERS: dict[tuple[str | None, str | None], argparse.ArgumentParser] = {}


def command_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every option of `command` (None: the commands alone); the docs' CLI reference reads it."""
    return build_parser([command] if command else ())


def with_command(argv: Sequence[str]) -> list[str]:
    """`argv` naming its command: none (or only options) means `serve`."""
    argv = list(argv)
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--help", "--version")):
        argv.insert(0, "serve")
    return argv


def settings_for_command_line(argv: Sequence[str]) -> Settings | None:
    """The settings a command line (and this environment) gives; None when they are not valid."""
    try:
        command_line = with_command(argv)
        return settings_from(build_parser(command_line).parse_args(command_line), ALL_OPTIONS)
    except (ConfigError, SystemExit):
        return None
