"""Which of an agent file's settings count: a project's own files only narrow until the project is trusted, and a
plugin's agents never set their permission mode, hooks or MCP servers (as in Claude Code)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..config.claude_settings import REPOSITORY_LEVELS, ClaudeSettings
from ..config.trust import ProjectTrust, agent_file_project
from .model import AgentDefinition

PROJECT_SOURCES = frozenset({"project"})
"""Agent definition sources a repository controls (`.claude/agents`, `.agents/agents`): their hooks, their MCP
servers and a `permissionMode` wider than the server's need the project's trust."""
WIDENING_MODES = frozenset({"acceptEdits", "bypassPermissions"})
"""Agent-file modes that can be wider than a server's: an untrusted project's file may not set them."""
PLUGIN_SOURCES = frozenset({"plugin"})
"""Agent definition sources whose `permissionMode`, `hooks` and `mcpServers` never apply, as in Claude Code."""


def untrusted_source(trust: ProjectTrust, definition: AgentDefinition, project: Path) -> Path | None:
    """The project that must be trusted before what an agent file brings (hooks, inline MCP servers, a wider
    `permissionMode`) takes effect, or None when it may: always for a file of the person's own sources; for a
    repository's file, once both the project the run works in and the one the file lies in are trusted."""
    if definition.source not in PROJECT_SOURCES:
        return None
    home = agent_file_project(definition.path) if definition.path is not None else None
    for folder in (project, home):
        if folder is not None and not trust.is_trusted(folder):
            return folder
    return None


def without_plugin_extras(definition: AgentDefinition) -> tuple[AgentDefinition, str | None]:
    """A plugin agent as it runs: without `permissionMode`, `hooks` and `mcpServers`, which Claude Code ignores in
    plugin agents; with the warning that names what was dropped (None when nothing was)."""
    if definition.source not in PLUGIN_SOURCES:
        return definition, None
    present = {
        "permissionMode": definition.permission_mode is not None,
        "hooks": bool(definition.hooks),
        "mcpServers": bool(definition.mcp_servers),
    }
    ignored = [name for name, found in present.items() if found]
    if not ignored:
        return definition, None
    where = f" ({definition.path})" if definition.path is not None else ""
    warning = (
        f"agent {definition.name}{where}: {', '.join(ignored)} ignored: a plugin's agent may not set them (Claude "
        "Code ignores them too); to use them, copy the file into ~/.claude/agents or a folder named by --agents-dir"
    )
    return replace(definition, permission_mode=None, hooks=None, mcp_servers=()), warning


def untrusted_project_warnings(
    trust: ProjectTrust, project: Path, agents: Iterable[AgentDefinition], settings: ClaudeSettings
) -> list[str]:
    """For `agents list`: the project's hooks and MCP servers that will not run because it is not trusted."""
    if trust.is_trusted(project):
        return []
    why = trust.why_untrusted(project)
    project_agents = [definition for definition in agents if definition.source in PROJECT_SOURCES]
    found = [
        f"agent {definition.name}: its hooks and MCP servers are skipped: {why}"
        for definition in project_agents
        if definition.hooks or definition.mcp_servers
    ]
    found += [
        f"agent {definition.name}: its permissionMode {definition.permission_mode} is ignored (a project's agent "
        f"file may only narrow the mode): {why}"
        for definition in project_agents
        if definition.permission_mode in WIDENING_MODES
    ]
    found += [
        f"{file.path}: its hooks are skipped: {why}"
        for file in settings.files
        if file.level in REPOSITORY_LEVELS and file.data.get("hooks")
    ]
    return found
