"""The `mcp-subagents` command: serve | run | agents list/validate | tasks list/show/tail/stop/answer | dashboard."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import sys
import warnings
from collections.abc import Sequence

from ..config.settings import (
    AGENT_SERVER_MARKER,
    Settings,
    settings_from,
)
from ..core.errors import ConfigError
from ..render.inert import inert
from ..serve.early_answers import EarlyStart
from .arguments import ALL_OPTIONS, USAGE_ERROR, build_parser, parser_for, with_command
from .prescan import CatalogPrescan, start_prescan

THREAD_SWITCH_INTERVAL = 0.001
"""Seconds a thread waits at most for the interpreter while another holds it (Python's default is 0.005). Tool
work in worker threads (Read, Edit and Write of more than 1 MiB, rescans, creating task files) gives the interpreter
up at every system call, and with other subagents keeping the event loop busy it waited the whole interval to get
it back each time: a Read of 2000 lines took 670 ms instead of 9 ms, and 23 ms with 1 ms (bench/search.py)."""


def main(argv: Sequence[str] | None = None, *, early: EarlyStart | None = None) -> None:
    """Run the command `argv` names (the process's own by default); `early`: what a stdio server read and answered
    before this module loaded (`cli.entry`)."""
    try:
        _main(argv, early)
    except BrokenPipeError:  # `mcp-subagents agents list | head`: the reader left before we finished
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush cannot fail too
        raise SystemExit(1) from None


def _main(argv: Sequence[str] | None, early: EarlyStart | None) -> None:
    argv = with_command(sys.argv[1:] if argv is None else argv)
    namespace = parser_for(argv).parse_args(argv)
    settings = _settings(namespace)
    prescan = None
    if namespace.command == "serve":
        # Start-up builds ~130,000 objects (the MCP SDK's modules and models, ours) that nearly all live as long as
        # the process: the collector's passes over them while they are built cost about a tenth of the start-up and
        # find a few thousand objects (with 2000 agent files), which the freeze then keeps for good. It runs again
        # once start-up is frozen (`serve_command`).
        gc.disable()
        prescan = start_prescan(settings, argv)  # before the imports below, which it runs beside
    _log_to_stderr(settings, quiet=namespace.command == "run" and namespace.log_level is None)
    sys.setswitchinterval(THREAD_SWITCH_INTERVAL)
    _run_command(namespace, settings, prescan, early)


def _settings(namespace: argparse.Namespace) -> Settings:
    if namespace.command in ("serve", "run") and os.environ.get(AGENT_SERVER_MARKER):
        print(
            "mcp-subagents: refusing to start: an agent of another mcp-subagents server started this one as its MCP "
            "server, which would make the server start itself again and again. Remove mcp-subagents from the "
            "agent's mcpServers (or from the .mcp.json entry it names).",
            file=sys.stderr,
        )
        raise SystemExit(2)
    try:
        return settings_from(namespace, ALL_OPTIONS)
    except ConfigError as exc:
        # A flag's value is a mistake on the command line, which the command's --help explains; a variable's is not.
        command = f"mcp-subagents {namespace.command}"
        hint = f" (see {command} --help)" if exc.message.startswith("--") else ""
        print(f"{command}: {exc.message}{hint}", file=sys.stderr)
        raise SystemExit(USAGE_ERROR) from None


def _log_to_stderr(settings: Settings, *, quiet: bool) -> None:
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
    if quiet and "MCP_SUBAGENTS_LOG_LEVEL" not in os.environ:
        logging.getLogger().setLevel(logging.WARNING)  # a person reads the status line, not request logs


def _run_command(
    namespace: argparse.Namespace, settings: Settings, prescan: CatalogPrescan | None, early: EarlyStart | None
) -> None:
    """Each command's module loads when that command runs: `serve` never pays for the others."""
    match namespace.command:
        case "serve":
            from .serve import serve_command

            serve_command(settings, prescan, early)
        case "run":
            from .run import run_command

            raise SystemExit(run_command(settings, namespace.words, resume=namespace.resume, raw=namespace.raw))
        case "agents" if namespace.agents_command == "list":
            from .agents import list_agents

            if failed := list_agents(settings, as_json=namespace.json):
                raise SystemExit(failed)
        case "agents":
            from .agents import validate_command

            raise SystemExit(validate_command(namespace.paths, settings))
        case "dashboard":
            from .dashboard import dashboard_command

            raise SystemExit(dashboard_command(settings, namespace.port))
        case "tasks":
            from .tasks import tasks_command

            try:
                status = tasks_command(
                    namespace.tasks_command,
                    settings.state_dir,
                    task_id=getattr(namespace, "task_id", None),
                    as_json=getattr(namespace, "json", False),
                    answer=(getattr(namespace, "choice", None), getattr(namespace, "question", None)),
                    out=sys.stdout,
                    stall_after=settings.stall_after,
                    database_url=settings.database_url,
                )
            except KeyboardInterrupt:  # leaving `tasks tail` early
                status = 130
            raise SystemExit(status)
        case _:
            build_parser().print_help()


class _InertFormatter(logging.Formatter):
    """Log lines quote tool names, paths and agent files a model or a project chose: a person's terminal (or a
    host's log view) shows their control and bidi characters as escapes."""

    def format(self, record: logging.LogRecord) -> str:
        return inert(super().format(record))
