"""The subagent's built-in tools, in the order Claude Code lists them.

The tool modules load on the first `builtin_tools()` call, at the first run, and `base` (the tool types) when a name
of it is first used: the server starts and lists its tools with the names below only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import members_on_first_use
from ..core.names import AGENT_TOOLS, BUILTIN_TOOL_NAMES, PER_RUN_TOOL_NAMES

if TYPE_CHECKING:
    from .base import TodoList, Tool, ToolContext, ToolInput
    from .paths import resolve_path
    from .shell import sanitized_environment

__all__ = ["AGENT_TOOLS", "BUILTIN_TOOL_NAMES", "PER_RUN_TOOL_NAMES", "builtin_tools"]


def builtin_tools() -> dict[str, Tool]:
    """A fresh name -> tool mapping of every built-in tool, in the contract's order."""
    from .files import EDIT, READ, WRITE
    from .glob import GLOB
    from .grep import GREP
    from .shell import BASH
    from .todo import TODOWRITE
    from .web import WEBFETCH

    tools = (READ, WRITE, EDIT, GLOB, GREP, BASH, WEBFETCH, TODOWRITE)
    assert tuple(tool.name for tool in tools) == BUILTIN_TOOL_NAMES
    return {tool.name: tool for tool in tools}


_HOMES = {
    "TodoList": ".base",
    "Tool": ".base",
    "ToolContext": ".base",
    "ToolInput": ".base",
    "resolve_path": ".paths",
    "sanitized_environment": ".shell",
}


__getattr__ = members_on_first_use(__name__, _HOMES)


__all__ = [
    "AGENT_TOOLS",
    "BUILTIN_TOOL_NAMES",
    "PER_RUN_TOOL_NAMES",
    "TodoList",
    "Tool",
    "ToolContext",
    "ToolInput",
    "builtin_tools",
    "resolve_path",
    "sanitized_environment",
]
