"""The `mcp-subagents` command: serve | run | agents list | agents validate."""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import warnings
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import cast

import anyio
from mcp import MCPDeprecationWarning

from . import __version__
from .errors import ConfigError, ProviderNotConfiguredError, SubagentsError
from .settings import RUN_OPTIONS, SERVE_OPTIONS, SOURCE_OPTIONS, Settings, add_options, settings_from

ALL_OPTIONS = (*SOURCE_OPTIONS, *RUN_OPTIONS, *SERVE_OPTIONS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-subagents",
        description="Claude-Code-style subagents for any MCP host. Without a command, `serve` is assumed.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the MCP server (stdio by default)")
    add_options(serve, SERVE_OPTIONS)
    add_options(serve, SOURCE_OPTIONS)
    add_options(serve, RUN_OPTIONS)

    run = commands.add_parser("run", help="run one subagent from the shell and print its result")
    run.add_argument("agent", help="subagent type, e.g. general-purpose")
    run.add_argument("prompt", help="the task for the subagent")
    run.add_argument("--max-turns-for-run", dest="task_max_turns", type=int, help=argparse.SUPPRESS)
    add_options(run, SOURCE_OPTIONS)
    add_options(run, RUN_OPTIONS)

    agents = commands.add_parser("agents", help="list or validate agent definitions")
    agent_commands = agents.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    listing = agent_commands.add_parser("list", help="the active agents and the files that failed to load")
    listing.add_argument("--json", action="store_true", help='print JSON: {"agents": [...], "errors": [...]}')
    add_options(listing, SOURCE_OPTIONS)
    validate = agent_commands.add_parser("validate", help="check agent files or folders; exit 1 if any has a problem")
    validate.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    try:
        _main(argv)
    except BrokenPipeError:  # `mcp-subagents agents list | head`: the reader left before we finished
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit-time flush cannot fail too
        raise SystemExit(1) from None


def _main(argv: Sequence[str] | None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--help", "--version")):
        argv.insert(0, "serve")
    namespace = _parser().parse_args(argv)
    try:
        settings = settings_from(namespace, ALL_OPTIONS)
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        raise SystemExit(2) from None
    # Log notifications and roots are deprecated in the 2026 protocol era but still what 2025-era hosts use.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
    logging.basicConfig(
        stream=sys.stderr, level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    match namespace.command:
        case "serve":
            _serve(settings)
        case "run":
            raise SystemExit(_run(settings, namespace.agent, namespace.prompt))
        case "agents" if namespace.agents_command == "list":
            _list_agents(settings, as_json=namespace.json)
        case "agents":
            raise SystemExit(_validate(namespace.paths))
        case _:
            _parser().print_help()


def _serve(settings: Settings) -> None:
    from .notifications import watch_catalog
    from .server import build_server
    from .service import Subagents
    from .transports import open_listener, serve

    async def main() -> None:
        app = Subagents(settings)
        async with app.running(), anyio.create_task_group() as group:
            server = build_server(app)
            gc.freeze()  # what start-up built lives as long as the process: keep it out of full collections
            if settings.watch_interval > 0:
                watch = partial(
                    watch_catalog,
                    app.rescan,
                    server.notifier,
                    interval=settings.watch_interval,
                    baseline=app.catalog(),
                )
                group.start_soon(watch)
            await serve(server, settings, listener)
            group.cancel_scope.cancel()

    try:
        listener = open_listener(settings)  # HTTP start-up checks and the port, before anything runs
        anyio.run(main)
    except (ConfigError, BaseExceptionGroup) as exc:
        config_error = _config_error(exc)
        if config_error is None:
            raise
        logging.getLogger("mcp_subagents").error("%s", config_error.message)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        pass


def _config_error(exc: BaseException) -> ConfigError | None:
    """The ConfigError in `exc`, also when task groups wrapped it, so it prints as one line."""
    if isinstance(exc, ConfigError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in cast("BaseExceptionGroup[BaseException]", exc).exceptions:
            if (found := _config_error(inner)) is not None:
                return found
    return None


def _run(settings: Settings, agent: str, prompt: str) -> int:
    from .render import outcome_text, task_error
    from .service import Subagents, TaskArguments

    async def main() -> int:
        app = Subagents(settings)
        async with app.running():
            try:
                record = app.launch(TaskArguments(description="run from the shell", prompt=prompt, subagent_type=agent))
            except ProviderNotConfiguredError as exc:
                print(task_error(agent, exc.message))
                return 1
            except SubagentsError as exc:
                print(exc.message, file=sys.stderr)
                return 1
            await record.done.wait()
            assert record.outcome is not None
            print(outcome_text(record, record.outcome, max_chars=settings.max_result_chars))
            return 1 if record.is_error else 0

    try:
        return anyio.run(main)
    except ConfigError as exc:
        print(f"mcp-subagents: {exc.message}", file=sys.stderr)
        return 2


def _list_agents(settings: Settings, *, as_json: bool) -> None:
    from .definitions import CatalogLoader, tools_summary
    from .service import definition_sources

    catalog = CatalogLoader(definition_sources(settings)).load()
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
            }
            for d in catalog.agents.values()
        ]
        errors = [{"path": e.path, "error": e.error} for e in catalog.errors]
        print(json.dumps({"agents": agents, "errors": errors}, indent=2))
        return
    for d in catalog.agents.values():
        print(f"{d.name}  [{d.source}]  model: {d.model}  tools: {tools_summary(d)}")
        print(f"    {' '.join(d.description.split())[:160]}")
        if d.path:
            print(f"    {d.path}")
    for denied in catalog.denied:
        print(f"{denied}  [denied by settings]")
    if catalog.errors:
        print(f"\n{len(catalog.errors)} file(s) failed to load:")
        for error in catalog.errors:
            print(f"  {error.path}: {error.error}")


def _validate(paths: Sequence[Path]) -> int:
    from .definitions import validate_paths
    from .tools import BUILTIN_TOOL_NAMES

    problems = validate_paths(paths, BUILTIN_TOOL_NAMES)
    for problem in problems:
        label = "" if problem.severity == "error" else "warning: "
        print(f"{problem.path}: {label}{problem.message}")
    failing = {p.path for p in problems if p.severity == "error"}
    warnings = len(problems) - sum(1 for p in problems if p.severity == "error")
    summary = f"{len(failing)} file(s) failed, {warnings} warning(s)" if problems else "all files are valid"
    print(summary, file=sys.stderr)
    return 1 if failing else 0
