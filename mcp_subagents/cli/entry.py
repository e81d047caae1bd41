"""The `mcp-subagents` program's entry: a host's stdio server answers the 2026 era's first requests from the last
start's answers while the rest loads (`serve.early_answers`); every command then runs as `commands` says."""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence

from ..serve.early_answers import EarlyStart, answer_cache, is_wire, serve_early, serves_stdio


def main(argv: Sequence[str] | None = None) -> None:
    early = _early_start(sys.argv[1:]) if argv is None else None  # only the process's own command line
    from .commands import main as run

    run(argv, early=early)


def _early_start(argv: list[str]) -> EarlyStart | None:
    if not argv or (argv[0].startswith("--") and argv[0] not in ("--help", "--version")):
        argv = ["serve", *argv]
    if os.environ.get("MCP_SUBAGENTS_AGENT_SERVER") or not serves_stdio(argv, os.environ) or not is_wire(1):
        return None
    gc.disable()  # as `commands` does for a start-up: what it builds lives as long as the process
    return serve_early(answer_cache(argv, os.environ, os.getcwd()), _load)


def _load() -> None:
    """Import what a start-up needs, beside the early answers."""
    importlib.import_module("mcp_subagents.cli.commands")
    importlib.import_module("mcp_subagents.cli.serve")
