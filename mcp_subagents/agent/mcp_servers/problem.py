"""What a run keeps of an agent's MCP server that did not start: the task's outcome lists them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ServerProblem:
    """One of the agent's MCP servers that did not start (or stopped), and why: its tools were missing."""

    name: str
    reason: str
