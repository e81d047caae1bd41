"""The `mcp-subagents` command: serve | run | agents list/validate | tasks list/show/tail/stop | dashboard."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

import anyio

from .. import __version__
from ..config.settings import (
    AGENT_SERVER_MARKER,
    RUN_OPTIONS,
    SERVE_OPTIONS,
    SOURCE_OPTIONS,
    Option,
    Settings,
    add_options,
    settings_from,
)
from ..core.errors import ConfigError
from ..render.inert import inert

if TYPE_CHECKING:
    from ..definitions.prescan import CatalogPrescan

ALL_OPTIONS = (*SOURCE_OPTIONS, *RUN_OPTIONS, *SERVE_OPTIONS)
STATE_DIR_OPTIONS = tuple(option for option in RUN_OPTIONS if option.flag == "--state-dir")
THREAD_SWITCH_INTERVAL = 0.001
"""Seconds a thread waits at most for the interpreter while another holds it (Python's default is 0.005). Tool
work in worker threads (Read, Edit and Write of more than 1 MiB, rescans, creating task files) gives the interpreter
up at every system call, and with other subagents keeping the event loop busy it waited the whole interval to get
it back each time: a Read of 2000 lines took 670 ms instead of 9 ms, and 23 ms with 1 ms (bench/search.py)."""


def _parser(command_line: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for `command_line` (which names its command first, see `_with_command`): only that command gets
    its options (some fifty flags for each command took 26 ms to add, on every start of the server)."""
    chosen = command_line[0] if command_line else None

    def add_options_if_chosen(command: str, parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
        if command == chosen:
            add_options(parser, options)

    parser = argparse.ArgumentParser(
        prog="mcp-subagents",
        description="Claude-Code-style subagents for any MCP host. Without a command, `serve` is assumed.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    add_options_if_chosen("serve", serve, (*SERVE_OPTIONS, *SOURCE_OPTIONS, *RUN_OPTIONS))

    run = commands.add_parser(
        "run",
        help="run one subagent from the shell and print its result",
        usage='%(prog)s AGENT "PROMPT" [options]  |  %(prog)s --resume ID "PROMPT" [options]',
    )
    run.add_argument("words", nargs="+", metavar="AGENT PROMPT", help="subagent type (e.g. Explore), then the task")
    run.add_argument("--resume", metavar="ID", help="continue an earlier task's conversation with PROMPT")
    run.add_argument("--raw", action="store_true", help="print the <task_result> envelope a host gets")
    run.add_argument("--max-turns-for-run", dest="task_max_turns", type=int, help=argparse.SUPPRESS)
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
    dashboard.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: 0, any free port)")
    add_options_if_chosen("dashboard", dashboard, (*SOURCE_OPTIONS, *RUN_OPTIONS))

    tasks = commands.add_parser("tasks", help="list, show, follow or stop the tasks of a state directory")
    task_commands = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)
    task_list = task_commands.add_parser("list", help="every task of the state directory, newest first")
    task_list.add_argument("--json", action="store_true", help="print a JSON list of tasks")
    add_options_if_chosen("tasks", task_list, STATE_DIR_OPTIONS)
    for action, help_text in (
        ("show", "a task's state, tokens, cost and result (or its output so far)"),
        ("tail", "print a task's output and follow it until the task ends"),
        ("stop", "stop a running task, whichever server process runs it"),
    ):
        command = task_commands.add_parser(action, help=help_text)
        command.add_argument("task_id", metavar="ID", help="the task id (or its first 6 or more characters)")
        add_options_if_chosen("tasks", command, STATE_DIR_OPTIONS)
    return parser


def command_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every option of `command` (None: the commands alone); the docs' CLI reference reads it."""
    return _parser([command] if command else ())


def main(argv: Sequence[str] | None = None) -> None:
    try:
        _main(argv)
    except BrokenPipeError:  # `mcp-subagents agents list | head`: the reader left before we finished
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush cannot fail too
        raise SystemExit(1) from None


def _with_command(argv: Sequence[str]) -> list[str]:
    """`argv` naming its command: none (or only options) means `serve`."""
    argv = list(argv)
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--help", "--version")):
        argv.insert(0, "serve")
    return argv


def settings_for_command_line(argv: Sequence[str]) -> Settings | None:
    """The settings a command line (and this environment) gives; None when they are not valid."""
    try:
        command_line = _with_command(argv)
        return settings_from(_parser(command_line).parse_args(command_line), ALL_OPTIONS)
    except (ConfigError, SystemExit):
        return None


def _main(argv: Sequence[str] | None) -> None:
    argv = _with_command(sys.argv[1:] if argv is None else argv)
    namespace = _parser(argv).parse_args(argv)
    if namespace.command in ("serve", "run") and os.environ.get(AGENT_SERVER_MARKER):
        print(
            "mcp-subagents: refusing to start: an agent of another mcp-subagents server started this one as its MCP "
            "server, which would make the server start itself again and again. Remove mcp-subagents from the "
            "agent's mcpServers (or from the .mcp.json entry it names).",
            file=sys.stderr,
        )
        raise SystemExit(2)
    try:
        settings = settings_from(namespace, ALL_OPTIONS)
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    prescan = None
    if namespace.command == "serve":
        # Start-up builds ~130,000 objects (the MCP SDK's modules and models, ours) that nearly all live as long as
        # the process: the collector's passes over them while they are built cost about a tenth of the start-up and
        # find a few thousand objects (with 2000 agent files), which the freeze then keeps for good. It runs again
        # once start-up is frozen (`_serve`).
        gc.disable()
        from ..definitions.prescan import start_prescan

        prescan = start_prescan(settings, argv)  # before the imports below, which it runs beside
    # Log notifications and roots are deprecated in the 2026 protocol era but still what 2025-era hosts use.
    from mcp import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_InertFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=settings.log_level, handlers=[handler])
    if settings.log_level != "DEBUG":
        # The HTTP clients log every request at INFO: a line per model round trip is noise in a host's log, and
        # writing it cost 5 % of the server's CPU with many Tasks at once. Their warnings still show.
        for name in ("httpx", "httpx2"):
            logging.getLogger(name).setLevel(logging.WARNING)
    if namespace.command == "run" and namespace.log_level is None and "MCP_SUBAGENTS_LOG_LEVEL" not in os.environ:
        logging.getLogger().setLevel(logging.WARNING)  # a person reads the status line, not request logs
    sys.setswitchinterval(THREAD_SWITCH_INTERVAL)
    match namespace.command:
        case "serve":
            _serve(settings, prescan)
        case "run":
            from .run import run_command

            raise SystemExit(run_command(settings, namespace.words, resume=namespace.resume, raw=namespace.raw))
        case "agents" if namespace.agents_command == "list":
            _list_agents(settings, as_json=namespace.json)
        case "agents":
            raise SystemExit(_validate(namespace.paths, settings))
        case "dashboard":
            from .dashboard import dashboard_command

            raise SystemExit(dashboard_command(settings, namespace.port))
        case "tasks":
            from .tasks import tasks_command

            task_id = getattr(namespace, "task_id", None)
            as_json = getattr(namespace, "json", False)
            try:
                status = tasks_command(
                    namespace.tasks_command, settings.state_dir, task_id=task_id, as_json=as_json, out=sys.stdout
                )
            except KeyboardInterrupt:  # leaving `tasks tail` early
                status = 130
            raise SystemExit(status)
        case _:
            _parser().print_help()


def _serve(settings: Settings, prescan: CatalogPrescan | None = None) -> None:
    from ..core.processes import harden_server_process, kill_descendants
    from ..mcp.notifications import watch_catalog
    from ..mcp.server import build_server
    from ..runtime.service import Subagents
    from ..serve.transports import open_listener, serve

    terminal = settings.transport == "stdio" and sys.stdin.isatty()

    async def main() -> None:
        app = Subagents(settings, catalog_prescan=prescan)
        async with app.running(), anyio.create_task_group() as group:
            server = build_server(app)
            group.start_soon(_stop_on_sigterm, group.cancel_scope)
            gc.freeze()  # what start-up built lives as long as the process: keep it out of full collections
            gc.enable()
            if settings.watch_interval > 0:
                watch = partial(
                    watch_catalog,
                    app.rescan,
                    server.notifier,
                    interval=settings.watch_interval,
                    baseline=app.catalog(),
                )
                group.start_soon(watch)
            if settings.dashboard:
                from .dashboard import serve_dashboard

                group.start_soon(serve_dashboard, app, settings.dashboard_port)
            await serve(server, settings, listener)
            group.cancel_scope.cancel()

    harden_server_process()
    try:
        listener = open_listener(settings)  # HTTP start-up checks and the port, before anything runs
        if terminal:  # a person started the server by hand: say what it waits for, and let Ctrl-C stop it
            from .terminal import SERVE_NOTICE

            print(SERVE_NOTICE, file=sys.stderr, flush=True)
        anyio.run(main)
    except (ConfigError, BaseExceptionGroup) as exc:
        config_error = _config_error(exc)
        if config_error is None:
            raise
        logging.getLogger("mcp_subagents").error("%s", config_error.message)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        if terminal:
            print("\nmcp-subagents: stopped", file=sys.stderr)
    finally:
        gc.enable()  # also when start-up failed before the freeze
        if prescan is not None:
            prescan.stop()
        kill_descendants()  # whatever a command detached was re-parented to this process: it goes with it
    if _terminated.is_set():
        # A host's SIGTERM: the runtime has shut down cleanly; end the process here, whatever else still waits.
        logging.shutdown()
        os._exit(0)


def _config_error(exc: BaseException) -> ConfigError | None:
    """The ConfigError in `exc`, also when task groups wrapped it, so it prints as one line."""
    if isinstance(exc, ConfigError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
            if (found := _config_error(inner)) is not None:
                return found
    return None


_terminated = threading.Event()


async def _stop_on_sigterm(scope: anyio.CancelScope) -> None:
    """SIGTERM (how hosts and service managers stop a server) shuts down as cleanly as the end of stdin."""
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            logging.getLogger("mcp_subagents").info("SIGTERM: shutting down")
            _terminated.set()
            scope.cancel()
            return


class _InertFormatter(logging.Formatter):
    """Log lines quote tool names, paths and agent files a model or a project chose: a person's terminal (or a
    host's log view) shows their control and bidi characters as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return inert(super().format(record))


def _list_agents(settings: Settings, *, as_json: bool) -> None:
    from ..config.claude_settings import ClaudeSettingsFiles
    from ..config.trust import ProjectTrust, untrusted_project_warnings
    from ..definitions import CatalogLoader, missing_tools, no_usable_tools, tools_summary
    from ..runtime.service import definition_sources, settings_locations
    from ..tools import BUILTIN_TOOL_NAMES, PER_RUN_TOOL_NAMES

    settings_files = ClaudeSettingsFiles(settings_locations(settings))
    catalog = CatalogLoader(definition_sources(settings, settings_files)).load()
    trust = ProjectTrust(settings.claude_config_file, settings.trust_projects)
    project = settings.working_directory
    warnings = untrusted_project_warnings(trust, project, catalog.agents.values(), settings_files.load(project))
    available = {*BUILTIN_TOOL_NAMES, *PER_RUN_TOOL_NAMES}
    problems = {
        d.name: no_usable_tools(d, missing_tools(d, available), granted=d.memory is not None)
        for d in catalog.agents.values()
    }
    if as_json:
        agents = [
            {
                "name": d.name,
                "source": d.source,
                "model": d.model,
                "tools": list(d.tools) if d.tools is not None else None,
                "disallowedTools": list(d.disallowed_tools),
                "description": d.description,
                "file": str(d.path) if d.path else None,
                "problem": problems[d.name],
            }
            for d in catalog.agents.values()
        ]
        errors = [{"path": e.path, "error": e.error} for e in catalog.errors]
        print(json.dumps({"agents": agents, "errors": errors, "warnings": warnings}, indent=2))
        return
    lines: list[str] = []  # a project's agent files chose these names and texts: printed inert
    for d in catalog.agents.values():
        unusable = "  [NO USABLE TOOLS: Task refuses it]" if problems[d.name] else ""
        lines.append(f"{d.name}  [{d.source}]  model: {d.model}  tools: {tools_summary(d)}{unusable}")
        lines.append(f"    {' '.join(d.description.split())[:160]}")
        if d.path:
            lines.append(f"    {d.path}")
        if problems[d.name]:
            lines.append(f"    problem: {problems[d.name]}")
    lines += [f"{denied}  [denied by settings]" for denied in catalog.denied]
    if catalog.errors:
        lines.append(f"\n{len(catalog.errors)} file(s) failed to load:")
        lines += [f"  {error.path}: {error.error}" for error in catalog.errors]
    lines += [f"warning: {warning}" for warning in warnings]
    for line in lines:
        print(inert(line))


def _validate(paths: Sequence[Path], settings: Settings) -> int:
    from ..config.trust import ProjectTrust, untrusted_agent_file
    from ..definitions import validate_paths
    from ..tools import BUILTIN_TOOL_NAMES

    trust = ProjectTrust(settings.claude_config_file, settings.trust_projects)
    problems = validate_paths(paths, BUILTIN_TOOL_NAMES, untrusted=untrusted_agent_file(trust))
    for problem in problems:
        label = "" if problem.severity == "error" else "warning: "
        print(inert(f"{problem.path}: {label}{problem.message}"))
    failing = {p.path for p in problems if p.severity == "error"}
    warnings = len(problems) - sum(1 for p in problems if p.severity == "error")
    summary = f"{len(failing)} file(s) failed, {warnings} warning(s)" if problems else "all files are valid"
    print(summary, file=sys.stderr)
    return 1 if failing else 0
