"""The subagent's built-in tools, in the order Claude Code lists them.

The tool modules load on the first `builtin_tools()` call, at the first run: they are not needed to start the
server and list its tools.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import TodoList, Tool, ToolContext, ToolInput

if TYPE_CHECKING:
    from .paths import resolve_path
    from .shell import sanitized_environment

BUILTIN_TOOL_NAMES: tuple[str, ...] = ("Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite")
PER_RUN_TOOL_NAMES: tuple[str, ...] = ("WebSearch", "Skill")
"""Tools built for each run, since they depend on it: WebSearch (the Anthropic provider only) and Skill (when skills
exist)."""
AGENT_TOOLS: frozenset[str] = frozenset({"Task", "Agent"})
"""Claude Code's tools that launch subagents: recognised in definitions and rules, never given to a subagent."""


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


def __getattr__(name: str) -> Any:
    if name == "resolve_path":
        from .paths import resolve_path

        return resolve_path
    if name == "sanitized_environment":
        from .shell import sanitized_environment

        return sanitized_environment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
