"""An agent's own MCP servers: where they are configured (`config`) and the run-long connections to them whose
tools the agent gets (`toolbox`)."""

from __future__ import annotations

from ...config.settings import AGENT_SERVER_MARKER
from .config import (
    ResolvedServers,
    ServerConfig,
    ServerDirectory,
    resolve_servers,
    server_prefix,
    tool_name,
)
from .problem import ServerProblem

__all__ = [
    "AGENT_SERVER_MARKER",
    "ResolvedServers",
    "ServerConfig",
    "ServerDirectory",
    "ServerProblem",
    "resolve_servers",
    "server_prefix",
    "tool_name",
]
