"""Agent definitions: the value type, parsing Markdown/JSON definitions, the sources and their priority, and the
validator behind `mcp-subagents agents validate`."""

from __future__ import annotations

from .model import AgentDefinition, LoadError, MemoryScope, Source, tool_base_name, tools_summary
from .parse import parse_definition, parse_json_agents
from .sources import Catalog, CatalogLoader, DefinitionSources, builtin_agents_dir
from .validate import Problem, unknown_tools, validate_paths

__all__ = [
    "AgentDefinition",
    "Catalog",
    "CatalogLoader",
    "DefinitionSources",
    "LoadError",
    "MemoryScope",
    "Problem",
    "Source",
    "builtin_agents_dir",
    "parse_definition",
    "parse_json_agents",
    "tool_base_name",
    "tools_summary",
    "unknown_tools",
    "validate_paths",
]
