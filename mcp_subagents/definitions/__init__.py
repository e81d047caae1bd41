"""Agent definitions: the value type, parsing Markdown/JSON definitions, the sources and their priority, and the
prescan of a first start. (`mcp-subagents agents validate` lives in `cli.validate`.)"""

from __future__ import annotations

from .model import AgentDefinition, LoadError, MemoryScope, Source, tool_base_name, tools_summary
from .parse import parse_definition, parse_json_agents
from .sources import Catalog, CatalogLoader, DefinitionSources, builtin_agents_dir
from .tool_entries import (
    NESTED_TOOL_NAME,
    MissingTool,
    matching_tools,
    missing_tools,
    no_usable_tools,
    require_some_tool,
)

__all__ = [
    "NESTED_TOOL_NAME",
    "AgentDefinition",
    "Catalog",
    "CatalogLoader",
    "DefinitionSources",
    "LoadError",
    "MemoryScope",
    "MissingTool",
    "Source",
    "builtin_agents_dir",
    "matching_tools",
    "missing_tools",
    "no_usable_tools",
    "parse_definition",
    "parse_json_agents",
    "require_some_tool",
    "tool_base_name",
    "tools_summary",
]
