"""The subagent's built-in tools, in the order Claude Code lists them."""

from __future__ import annotations

from .base import TodoList, Tool, ToolContext, ToolInput
from .files import EDIT, READ, WRITE
from .paths import resolve_path
from .search import GLOB, GREP
from .shell import BASH, sanitized_environment
from .todo import TODOWRITE
from .web import WEBFETCH

_BUILTIN_TOOLS: tuple[Tool, ...] = (READ, WRITE, EDIT, GLOB, GREP, BASH, WEBFETCH, TODOWRITE)

BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(tool.name for tool in _BUILTIN_TOOLS)


def builtin_tools() -> dict[str, Tool]:
    """A fresh name -> tool mapping of every built-in tool, in the contract's order."""
    return {tool.name: tool for tool in _BUILTIN_TOOLS}


__all__ = [
    "BUILTIN_TOOL_NAMES",
    "TodoList",
    "Tool",
    "ToolContext",
    "ToolInput",
    "builtin_tools",
    "resolve_path",
    "sanitized_environment",
]
