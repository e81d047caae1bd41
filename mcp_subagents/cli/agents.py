"""`mcp-subagents agents list|validate`: the agents in effect and the files that failed, or the problems of the
files named."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..config.claude_settings import ClaudeSettingsFiles
from ..config.settings import Settings
from ..config.trust import project_trust, untrusted_agent_file
from ..core.errors import ConfigError
from ..core.names import BUILTIN_TOOL_NAMES, PER_RUN_TOOL_NAMES
from ..definitions import CatalogLoader, missing_tools, no_usable_tools, tools_summary
from ..definitions.trust import untrusted_project_warnings
from ..models.providers import provider_config
from ..render.inert import inert
from ..runtime.sources import definition_sources, settings_locations
from .validate import report_lines, validate_paths


def list_agents(settings: Settings, *, as_json: bool) -> int:
    """Print the agents in effect and the files that failed to load; the exit status is 1 when any failed (as `ls`
    lists what it can and still fails on what it cannot), so a script or CI job notices a broken file."""

    settings_files = ClaudeSettingsFiles(settings_locations(settings))
    catalog = CatalogLoader(definition_sources(settings, settings_files)).load()
    trust = project_trust(settings)
    project = settings.working_directory
    warnings = untrusted_project_warnings(trust, project, catalog.agents.values(), settings_files.load(project))
    available = {*BUILTIN_TOOL_NAMES, *PER_RUN_TOOL_NAMES}
    problems = {
        d.name: no_usable_tools(d, missing_tools(d, available), granted=d.memory is not None)
        for d in catalog.agents.values()
    }
    if as_json:
        agents = [
            {
                "name": d.name,
                "source": d.source,
                "model": d.model,
                "tools": list(d.tools) if d.tools is not None else None,
                "disallowedTools": list(d.disallowed_tools),
                "description": d.description,
                "file": str(d.path) if d.path else None,
                "problem": problems[d.name],
            }
            for d in catalog.agents.values()
        ]
        errors = [{"path": e.path, "error": e.error} for e in catalog.errors]
        standing = {"project": str(project), "trusted": trust.is_trusted(project), "why": trust.standing(project)}
        print(json.dumps({"agents": agents, "errors": errors, "warnings": warnings, "trust": standing}, indent=2))
        return 1 if catalog.errors else 0
    lines: list[str] = []  # a project's agent files chose these names and texts: printed inert
    for d in catalog.agents.values():
        unusable = "  [NO USABLE TOOLS: Task refuses it]" if problems[d.name] else ""
        lines.append(f"{d.name}  [{d.source}]  model: {d.model}  tools: {tools_summary(d)}{unusable}")
        lines.append(f"    {' '.join(d.description.split())[:160]}")
        if d.path:
            lines.append(f"    {d.path}")
        if problems[d.name]:
            lines.append(f"    problem: {problems[d.name]}")
    lines += [f"{denied}  [denied by settings]" for denied in catalog.denied]
    if catalog.errors:
        lines.append(f"\n{len(catalog.errors)} file(s) failed to load:")
        lines += [f"  {error.path}: {error.error}" for error in catalog.errors]
    lines += [f"warning: {warning}" for warning in warnings]
    lines.append(f"trust: {trust.standing(project)}")
    for line in lines:
        print(inert(line))
    return 1 if catalog.errors else 0


def validate_command(paths: Sequence[Path], settings: Settings) -> int:

    trust = project_trust(settings)
    provider = _provider_name(settings)
    problems = validate_paths(paths, BUILTIN_TOOL_NAMES, untrusted=untrusted_agent_file(trust), provider=provider)
    for line in report_lines(problems):
        print(inert(line))
    failing = {p.path for p in problems if p.severity == "error"}
    warnings = len(problems) - sum(1 for p in problems if p.severity == "error")
    summary = f"{len(failing)} file(s) failed, {warnings} warning(s)" if problems else "all files are valid"
    print(summary, file=sys.stderr)
    return 1 if failing else 0


def _provider_name(settings: Settings) -> str | None:
    """The provider a server with these settings and this environment would use; None when none is configured."""
    try:
        config = provider_config(settings.provider, os.environ)
    except ConfigError:
        return None
    return config.name if config is not None else None
