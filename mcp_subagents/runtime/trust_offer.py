"""What trusting a project folder would add, listed for the person who is asked: the hook commands its settings
files (and the running agent's file, when it lies in the folder) would run, the MCP servers its `.mcp.json`, its
settings and that agent file name, and the permissions its settings grant (allow rules, extra folders, a wider
mode). Only what trust would change is listed: what the managed policy turns off stays off either way."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ..agent.hooks import hooks_for_run
from ..config.claude_settings import REPOSITORY_LEVELS, ClaudeSettings, SettingsFile
from ..config.trust import agent_file_project
from ..config.trust_answers import folder_key
from ..core.json_values import JsonObject, json_object
from ..definitions import AgentDefinition
from ..definitions.trust import PROJECT_SOURCES, WIDENING_MODES
from ..permissions.trust_question import TrustItem


def trust_offer(
    settings: ClaudeSettings, definition: AgentDefinition, project: Path, *, mode_fixed: bool
) -> list[TrustItem]:
    """What `project`'s own files would add to runs once it is trusted; `settings` are its settings files as they
    are (not the untrusted view). `mode_fixed`: the server's `--permission-mode` decides the mode, so no file's
    `defaultMode` counts."""
    own_agent = _agent_of(definition, project)
    # A project in the home folder has the user's own settings file as its project file: that one counts already.
    personal = {file.path for file in settings.files if file.level not in REPOSITORY_LEVELS}
    repository = [file for file in settings.files if file.level in REPOSITORY_LEVELS and file.path not in personal]
    return [
        *_hooks(settings, definition, repository, own_agent),
        *_servers(repository, project, definition if own_agent else None),
        *_grants(settings, repository, mode_fixed=mode_fixed),
        *_agent_mode(definition if own_agent else None),
    ]


def _agent_of(definition: AgentDefinition, project: Path) -> bool:
    """Whether the agent's file is one of the folder's own (so trusting the folder trusts it)."""
    if definition.source not in PROJECT_SOURCES:
        return False
    home = agent_file_project(definition.path) if definition.path is not None else None
    return home is None or folder_key(home) == folder_key(project)


def _hooks(
    settings: ClaudeSettings, definition: AgentDefinition, repository: list[SettingsFile], own_agent: bool
) -> list[TrustItem]:
    """The hook commands of the folder's settings files and of its agent file that would fire here."""
    every = hooks_for_run(settings, definition, project_trusted=True, why_untrusted="", agent_file_untrusted=None)
    settings_files = {str(file.path) for file in settings.files}
    folder_files = {str(file.path) for file in repository}
    agent_file = str(definition.path) if definition.path is not None else f"agent {definition.name}"
    found: list[TrustItem] = []
    for group in every.hooks.groups:
        for hook in group.hooks:
            if hook.origin in folder_files:
                found.append(TrustItem("hook", hook.command, hook.origin, group.event))
            elif own_agent and hook.origin not in settings_files:
                found.append(TrustItem("hook", hook.command, agent_file, group.event))
    return found


def _servers(repository: list[SettingsFile], project: Path, agent: AgentDefinition | None) -> list[TrustItem]:
    """The servers named in the folder's `.mcp.json` and settings files, and the agent file's own."""
    listed: list[tuple[Mapping[str, Any], str]] = [(_read_object(project / ".mcp.json"), str(project / ".mcp.json"))]
    listed += [(file.data, str(file.path)) for file in repository]
    found = [
        TrustItem("mcp_server", _server_text(raw), source, name)
        for data, source in listed
        for name, raw in json_object(data.get("mcpServers")).items()
    ]
    if agent is not None:
        source = str(agent.path) if agent.path is not None else f"agent {agent.name}"
        found += [
            TrustItem("mcp_server", _server_text(raw), source, name)
            for spec in agent.mcp_servers
            if not isinstance(spec, str)
            for name, raw in spec.items()
        ]
    return found


def _grants(settings: ClaudeSettings, repository: list[SettingsFile], *, mode_fixed: bool) -> list[TrustItem]:
    """The permissions the folder's settings files grant: what `ClaudeSettings.untrusted` leaves out."""
    found: list[TrustItem] = []
    for file in repository:
        permissions, source = json_object(file.data.get("permissions")), str(file.path)
        if not settings.managed_rules_only:
            found += [TrustItem("allow_rule", rule, source) for rule in _strings(permissions.get("allow"))]
        found += [TrustItem("directory", entry, source) for entry in _strings(permissions.get("additionalDirectories"))]
        mode = permissions.get("defaultMode")
        if mode == "acceptEdits" and not mode_fixed:  # bypassPermissions never counts from a repository's files
            found.append(TrustItem("mode", mode, source, "permissions.defaultMode"))
    return found


def _agent_mode(agent: AgentDefinition | None) -> list[TrustItem]:
    if agent is None or agent.permission_mode not in WIDENING_MODES:
        return []
    source = str(agent.path) if agent.path is not None else f"agent {agent.name}"
    return [TrustItem("mode", str(agent.permission_mode), source, f"permissionMode of agent {agent.name}")]


def _server_text(raw: object) -> str:
    """A server entry as the person would recognise it: its command line, or its transport and URL; as written,
    with no variable expanded (its environment and headers, which may hold secrets, are not shown)."""
    entry = json_object(raw)
    command, url = entry.get("command"), entry.get("url")
    if isinstance(command, str):
        args = entry.get("args")
        words = [str(arg) for arg in cast("list[Any]", args)] if isinstance(args, list) else []
        return shlex.join([command, *words])
    if isinstance(url, str):
        return f"{entry.get('type', 'http')} {url}"
    return json.dumps(raw, ensure_ascii=False)


def _strings(value: object) -> list[str]:
    return [item for item in cast("list[Any]", value) if isinstance(item, str)] if isinstance(value, list) else []


def _read_object(path: Path) -> JsonObject:
    try:
        with open(path, encoding="utf-8") as file:
            data: object = json.load(file)
    except (OSError, ValueError):
        return {}
    return cast("JsonObject", data) if isinstance(data, dict) else {}
