"""Where a run's tools come from, composed as toolsets: the built-in tools, the ones built for each run (WebSearch,
Skill), the agent's own MCP servers' tools, and the nested Task tool; joined (an earlier source keeps a name), then
narrowed to what the agent file's `tools` and `disallowedTools` choose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..definitions import AgentDefinition, MissingTool, matching_tools, missing_tools, tool_base_name
from ..tools.base import Tool


class Toolset(Protocol):
    @property
    def source(self) -> str:
        """Where the tools come from, as a warning names it."""
        ...

    def tools(self) -> Mapping[str, Tool]:
        """The tools by name, in the order they are offered."""
        ...


@dataclass(frozen=True, slots=True)
class StaticToolset:
    source: str
    members: Mapping[str, Tool]

    def tools(self) -> Mapping[str, Tool]:
        return self.members


@dataclass(frozen=True, slots=True)
class CombinedToolset:
    """Toolsets joined: a name taken by an earlier toolset keeps its tool (a built-in wins over an MCP server's)."""

    parts: tuple[Toolset, ...]

    @property
    def source(self) -> str:
        return ", ".join(part.source for part in self.parts)

    def tools(self) -> Mapping[str, Tool]:
        joined: dict[str, Tool] = {}
        for part in self.parts:
            for name, tool in part.tools().items():
                joined.setdefault(name, tool)
        return joined


@dataclass(frozen=True, slots=True)
class ToolSelection:
    tools: dict[str, Tool]
    """The agent's tools, by name, in the order they were chosen."""
    missing: list[MissingTool]
    """Entries of the definition's `tools` that give it no tool, and why."""


def select_tools(
    definition: AgentDefinition, available: Mapping[str, Tool], granted: Sequence[str] = ()
) -> ToolSelection:
    """Apply `disallowedTools` first, then `tools` plus `granted` (tools the agent's features need, such as its
    memory's Read/Write/Edit). `Task`/`Agent` (and `Task(a, b)`) select the nested Task tool when the run has one;
    `mcp__server__*` and `mcp__server` select every tool of that MCP server."""
    disallowed = [tool_base_name(entry) for entry in definition.disallowed_tools]
    listed = [tool_base_name(entry) for entry in definition.tools] if definition.tools is not None else []
    wanted = list(available) if definition.tools is None else [*listed, *granted]
    chosen: dict[str, Tool] = {}
    for entry in wanted:
        for name in matching_tools(entry, available) or ():
            if name not in chosen and not any(name in (matching_tools(d, available) or ()) for d in disallowed):
                chosen[name] = available[name]
    return ToolSelection(chosen, missing_tools(definition, available, mcp_tools_known=True))


def run_toolset(
    builtins: Mapping[str, Tool], per_run: Mapping[str, Tool], extensions: Mapping[str, Tool]
) -> CombinedToolset:
    """Every tool a run could offer, before the agent file chooses."""
    return CombinedToolset(
        (
            StaticToolset("built-in tools", builtins),
            StaticToolset("tools built for the run", per_run),
            StaticToolset("the agent's MCP servers and the nested Task", extensions),
        )
    )
