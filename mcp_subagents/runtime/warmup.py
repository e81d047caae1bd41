"""What the warm-up imports ahead of the first Task, in a worker thread after the host first lists the tools: the
server answers `initialize` and `tools/list` without any of it."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

TASK_ENGINE_MODULES = (
    "mcp_subagents.tasks.manager",  # the manager, the loop, transcripts, the conversation model, results
    "mcp_subagents.mcp.foreground",  # the Task tool's calls
    "mcp_subagents.models.pricing",
    "mcp_subagents.tools.base",
)
"""What any task needs and start-up does without (about a third of the server's own modules' import time): loaded by
the warm-up, before the provider's SDK."""

FIRST_RUN_MODULES = (
    "mcp_subagents.runtime.runs",  # assembling a run: the gates, toolsets, policies, extensions, the loop
    "mcp_subagents.agent.setup",
    "mcp_subagents.runtime.extensions",  # hooks, per-agent MCP servers, the nested Task tool
    "mcp_subagents.tools.web_search",
    "mcp_subagents.sandbox.gate",
    "mcp_subagents.permissions",
    "mcp_subagents.permissions.gate",
    "mcp_subagents.tools.shell",
    "mcp_subagents.agent.project_context",
    "yaml",  # an agent listed from the catalog cache is parsed when a Task first needs it
    "pathspec",  # path rules (Read(...), Edit(...)) compile at a run's first permission check
    "httpcore2",  # the provider SDKs' HTTP transport, which their client imports only at its first request
)
"""What the first Task imports besides the provider SDK and the tools (kept off the start-up path, loaded by the
warm-up)."""


def import_all(names: Sequence[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # a transport another version of the SDK does not use
            continue
