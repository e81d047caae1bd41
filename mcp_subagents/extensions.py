"""Where a run works and what its agent file's extension points add to it for the run's lifetime: its worktree,
its MCP servers' tools, its nested Task tool and its hooks. `service` opens them around each run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .hooks import AgentHooks
from .outcome import ServerProblem
from .tools.base import Tool
from .worktrees import Worktree


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlace:
    """Where a run works."""

    project: Path
    """The project folder: its settings files, `.mcp.json`, skills, memory and trust."""
    cwd: Path
    """The agent's working directory: the project, or a git worktree of it."""
    worktree: Worktree | None = None
    """The run's own worktree (`isolation: worktree`)."""
    inside_worktree: Path | None = None
    """The worktree the run works in, its own or the one of the task that launched it: the allowed area is the
    worktree alone, not the host's roots."""

    def isolated(self, worktree: Worktree) -> RunPlace:
        return RunPlace(project=self.project, cwd=worktree.cwd, worktree=worktree, inside_worktree=worktree.path)

    def for_child(self) -> RunPlace:
        """A nested task works where its parent works (its own worktree, if it asks for one, comes on top)."""
        return RunPlace(project=self.project, cwd=self.cwd, inside_worktree=self.inside_worktree)


@dataclass(slots=True, kw_only=True)
class Extensions:
    """What the agent file's extension points give one run."""

    tools: dict[str, Tool] = field(default_factory=lambda: {})
    """MCP servers' tools (`mcp__server__tool`) and the nested `Task` tool, before `tools:` selects among them."""
    unavailable: dict[str, str] = field(default_factory=lambda: {})
    """Tool name prefixes of servers that did not start -> what the model reads when it calls one."""
    server_problems: list[ServerProblem] = field(default_factory=lambda: [])
    hooks: AgentHooks | None = None
    context: list[str] = field(default_factory=lambda: [])
    """Blocks for the start of the conversation (a server that did not start)."""


def server_notes(problems: list[ServerProblem]) -> tuple[dict[str, str], list[str]]:
    """(prefix -> reason for calls of a missing server's tools, a context block telling the agent at start)."""
    from .mcp_servers import server_prefix

    unavailable = {
        server_prefix(p.name): f"the MCP server '{p.name}' that provides it is not running ({p.reason})"
        for p in problems
    }
    if not problems:
        return unavailable, []
    lines = "\n".join(f"- {p.name}: {p.reason}" for p in problems)
    block = (
        "<system-reminder>\nThese MCP servers of yours are not available in this run, so their tools are missing:\n"
        f"{lines}\nSay so in your report if the task needed them.\n</system-reminder>"
    )
    return unavailable, [block]


def merged(*groups: Mapping[str, Tool]) -> dict[str, Tool]:
    """Tool maps joined; an earlier map's tool keeps its name (built-in tools win over an MCP tool's)."""
    joined: dict[str, Tool] = {}
    for group in groups:
        for name, tool in group.items():
            joined.setdefault(name, tool)
    return joined
