"""The `mcp-subagents` program's entry. A host's stdio server is served by the person's warm server when there is
one (`cli.warm_relay`: this process only relays, and the server it stands for starts with everything imported);
otherwise it answers the 2026 era's first requests from the last start's answers while the rest loads
(`serve.early_answers`). Every command then runs as `commands` says. What a relay needs is all this module imports
at its top: a relay's start is a few standard modules."""

from __future__ import annotations

import os
import sys

from ..serve.host_pipes import is_wire, serves_stdio
from .warm_relay import attach
from .warm_wire import warm_disabled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    if argv is None:  # only the process's own command line: a host's
        arguments = sys.argv[1:]
        if _host_stdio_server(arguments) and not warm_disabled(_with_serve(arguments), os.environ):
            status = attach(arguments, os.environ)
            if status is not None:
                raise SystemExit(status)
        serve_here(arguments)
    else:
        from .commands import main as run

        run(argv)


def serve_here(arguments: Sequence[str]) -> None:
    """Run the process's command line in this process (the warm server's forked servers start here)."""
    early = None
    if _host_stdio_server(arguments):
        import gc

        from ..serve.early_answers import answer_cache, serve_early

        gc.disable()  # as `commands` does for a start-up: what it builds lives as long as the process
        early = serve_early(answer_cache(_with_serve(arguments), os.environ, os.getcwd()), _load)
    from .commands import main as run  # after the early answers started: they answer while this loads

    run(arguments, early=early)


def _with_serve(arguments: Sequence[str]) -> list[str]:
    if not arguments or (arguments[0].startswith("--") and arguments[0] not in ("--help", "--version")):
        return ["serve", *arguments]
    return list(arguments)


def _host_stdio_server(arguments: Sequence[str]) -> bool:
    """A stdio server on pipes or sockets a host holds (not a terminal, not a server an agent started)."""
    if os.environ.get("MCP_SUBAGENTS_AGENT_SERVER"):
        return False
    return serves_stdio(_with_serve(arguments), os.environ) and is_wire(1)


def _load() -> None:
    """Import what a start-up needs, beside the early answers."""
    import importlib

    importlib.import_module("mcp_subagents.cli.commands")
    importlib.import_module("mcp_subagents.cli.serve")
