"""Check agent files the way `mcp-subagents agents validate PATH...` reports them.

Errors mean the file does not load or cannot run as written. Warnings mean it loads but something is ignored or
left out here (Claude Code-only tools, unknown fields, a bad optional value, fields that have no effect here, hook
and MCP server entries that cannot run, hooks and servers of a project nobody trusted yet, a missing name, YAML that
only loads after repair).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from ..core.errors import DefinitionError
from ..definitions.frontmatter import read_frontmatter
from ..definitions.model import AgentDefinition, LoadError, tool_base_name
from ..definitions.parse import DESCRIPTION_FALLBACKS, EFFORT_LEVELS, MODEL_ALIASES, build_definition
from ..definitions.sources import markdown_files, read_definition_text
from ..definitions.tool_entries import (
    CLAUDE_CODE_ONLY_TOOLS,
    mcp_server_names,
    mcp_server_of,
    missing_tools,
    no_usable_tools,
)
from ..tools import AGENT_TOOLS, PER_RUN_TOOL_NAMES

Severity: TypeAlias = Literal["error", "warning"]

NO_EFFECT_HERE: Final = {
    "initialPrompt": "initialPrompt only applies when Claude Code runs an agent as its main session; ignored here",
    "color": "color is only shown in Claude Code's interface; it has no effect here",
}
"""Fields that load but change nothing here, and what that means for the user."""
WEB_SEARCH_NOTE: Final = (
    "tool 'WebSearch' uses the Anthropic API's server-side web search: it is offered only with the Anthropic "
    "provider and left out with an OpenAI-compatible one"
)
WEB_SEARCH_LEFT_OUT: Final = (
    "tool 'WebSearch' uses the Anthropic API's server-side web search, which the OpenAI-compatible provider "
    "configured here lacks: it is left out"
)
SHOWN_NAMES: Final = 8
"""How many files a warning shared by many files names before saying how many more."""
_FIELD_HINTS: Final = {
    "allowedTools": "tools",
    "allowed-tools": "tools",
    "allowed_tools": "tools",
    "disallowed_tools": "disallowedTools",
    "disallowed-tools": "disallowedTools",
    "max_turns": "maxTurns",
    "max-turns": "maxTurns",
    "max_budget_usd": "maxBudgetUsd",
    "max-budget-usd": "maxBudgetUsd",
    "permission_mode": "permissionMode",
    "permission-mode": "permissionMode",
    "mcp_servers": "mcpServers",
    "mcp-servers": "mcpServers",
    "initial_prompt": "initialPrompt",
    "omit_claude_md": "omitClaudeMd",
}
_NAME_STYLE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
"""Claude Code's own agents are named `general-purpose`, `Explore`, `Plan`: letters of either case, digits, hyphens."""
NO_AGENT_FILE: Final = (
    "no agent file found: agent files are Markdown files (*.md) that start with a '---' frontmatter block "
    "(Markdown without one, such as a README.md, is skipped)"
)


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    message: str
    severity: Severity = "error"


ProjectCheck = Callable[[Path], "str | None"]
"""For an agent file, why its project's hooks and MCP servers would be skipped (not trusted), or None."""


def validate_paths(
    paths: Sequence[Path],
    known_tools: Collection[str],
    *,
    untrusted: ProjectCheck | None = None,
    provider: str | None = None,
) -> list[Problem]:
    """Problems in the given agent files; folders are searched recursively for `*.md`. A path that holds no agent
    file (an empty folder, only a README.md) is an error: there was nothing to check. `provider` (None: not
    configured) decides what a file's WebSearch comes to."""
    problems: list[Problem] = []
    first_file_by_name: dict[str, str] = {}
    for path in paths:
        if not path.exists():
            problems.append(Problem(str(path), "no such file or folder"))
            continue
        try:
            files = [file for file, _ in markdown_files(os.fspath(path))]
        except OSError as exc:
            problems.append(Problem(str(path), f"cannot list folder: {exc.strerror or exc}"))
            continue
        checked = 0
        for file in files:
            definition, file_problems, is_agent_file = _validate_file(file, known_tools, untrusted, provider)
            problems.extend(file_problems)
            checked += is_agent_file
            if definition is None:
                continue
            first = first_file_by_name.setdefault(definition.name, file)
            if first != file:
                problems.append(
                    Problem(file, f"name {definition.name!r} is also defined in {first}; the later one wins", "warning")
                )
        if not checked:
            problems.append(Problem(str(path), NO_AGENT_FILE))
    return problems


def _validate_file(
    path: str, known_tools: Collection[str], untrusted: ProjectCheck | None = None, provider: str | None = None
) -> tuple[AgentDefinition | None, list[Problem], bool]:
    """The definition (None when it does not load), its problems, and whether the file is meant as an agent file."""
    text = read_definition_text(path)
    if text is None:
        return None, [], False
    if isinstance(text, LoadError):
        return None, [Problem(path, text.error)], True
    try:
        frontmatter = read_frontmatter(text, Path(path))
        definition = build_definition(
            frontmatter.fields, frontmatter.body, path=Path(path), source="project", fallback_name=Path(path).stem
        )
    except DefinitionError as exc:
        return None, [Problem(path, exc.message)], True

    problems: list[Problem] = []

    def warn(message: str) -> None:
        problems.append(Problem(path, message, "warning"))

    fields = frontmatter.fields
    problems.extend(Problem(path, message, "warning") for message in definition.warnings)
    if frontmatter.yaml_repaired:
        warn(f"{frontmatter.yaml_repaired}; loaded anyway by quoting the value. Quote it: strict parsers reject it")
    if not fields.get("name"):
        warn(f"no 'name' field; the file name {definition.name!r} is used")
    elif not _NAME_STYLE.fullmatch(definition.name):
        warn(f"name {definition.name!r} should use letters, digits and hyphens only")
    if not fields.get("description"):
        used = next((key for key in DESCRIPTION_FALLBACKS if fields.get(key)), DESCRIPTION_FALLBACKS[0])
        warn(f"description taken from {used!r}; Claude Code's field is 'description'")
    for key in definition.unknown_fields:
        hint = _FIELD_HINTS.get(key)
        warn(f"unknown field {key!r} is ignored" + (f"; did you mean {hint!r}?" if hint else ""))
    problems.extend(_tool_messages(path, definition, known_tools, provider))
    if not _is_plausible_model(definition.model):
        problems.append(
            Problem(
                path, f"model {definition.model!r} is not an alias (sonnet, opus, haiku, fable), inherit or a model id"
            )
        )
    if not definition.prompt:
        warn("empty body: the agent has no system prompt")
    if definition.effort is not None and definition.effort not in EFFORT_LEVELS:
        warn(
            f"effort {definition.effort} is a number, which Claude Code keeps for its own use; providers take only "
            f"the levels {', '.join(EFFORT_LEVELS)}, so the default 'medium' is sent"
        )
    problems.extend(Problem(path, message, "warning") for message in _feature_messages(definition, fields, untrusted))
    return definition, problems, True


def _feature_messages(
    definition: AgentDefinition, fields: Mapping[str, Any], untrusted: ProjectCheck | None
) -> list[str]:
    """Fields that do nothing here; what in `hooks`, `mcpServers` and `isolation` cannot run as written; and hooks
    and servers a project nobody trusted would have run."""
    from ..agent.hooks.config import parse_hooks  # the hook and rule parsers load only when a file has hooks

    messages = [note for key, note in NO_EFFECT_HERE.items() if fields.get(key) not in (None, "", [], {})]
    if untrusted is not None and definition.path is not None and (definition.hooks or definition.mcp_servers):
        why = untrusted(definition.path)
        if why is not None:
            messages.append(f"its hooks and MCP servers are skipped until the project is trusted: {why}")
    if definition.hooks:
        parsed = parse_hooks(definition.hooks, origin="hooks", frontmatter=True)
        messages += [problem.removeprefix("hooks: ") for problem in parsed.problems]
        messages += [f"hooks.{event} never fires for a subagent; it is ignored" for event in parsed.ignored_events]
    for spec in definition.mcp_servers:
        if isinstance(spec, dict):
            messages += _inline_server_messages(spec)
    if definition.isolation == "remote":
        messages.append("isolation: remote is not supported here: the agent runs in the working directory")
    return messages


def _inline_server_messages(spec: dict[str, Any]) -> list[str]:
    from ..agent.mcp_servers.config import ServerConfigError, server_config

    messages: list[str] = []
    for name, raw in spec.items():
        try:
            server_config(name, raw, environ=os.environ, project=Path.cwd(), origin=f"mcpServers.{name}")
        except ServerConfigError as exc:
            messages.append(str(exc))
    return messages


def _tool_messages(
    path: str, definition: AgentDefinition, known_tools: Collection[str], provider: str | None = None
) -> list[Problem]:
    """What `tools` leaves out and why; an error when nothing it lists exists here; typos in `disallowedTools`."""
    problems: list[Problem] = []
    available = {*known_tools, *PER_RUN_TOOL_NAMES}  # WebSearch and Skill may exist at run time
    missing = missing_tools(definition, available)
    servers = mcp_server_names(definition.mcp_servers)
    for entry in definition.tools or ():
        base = tool_base_name(entry)
        if base == "WebSearch" and provider != "anthropic":  # with it, WebSearch is offered: nothing to say
            note = WEB_SEARCH_LEFT_OUT if provider == "openai" else WEB_SEARCH_NOTE
            problems.append(Problem(path, note, "warning"))
        elif (server := mcp_server_of(base)) is not None and server in servers:
            note = f"tool {entry!r} must be offered by the agent's MCP server '{server}' when it starts"
            problems.append(Problem(path, note, "warning"))
    for item in missing:
        base = tool_base_name(item.entry)
        if base in CLAUDE_CODE_ONLY_TOOLS:
            message = f"tool {item.entry!r} exists only in Claude Code and is unavailable here; it is left out"
        elif mcp_server_of(base) is not None:
            message = f"tool {item.entry!r} is left out: {item.reason}"
        elif "case-sensitive" in item.reason:
            message = f"unknown tool {item.entry!r} ({item.reason}); it is left out"
        else:
            message = f"unknown tool {item.entry!r}; it is left out"
        problems.append(Problem(path, message, "warning"))
    problem = no_usable_tools(definition, missing, granted=definition.memory is not None)
    if problem is not None:
        problems.append(Problem(path, f"{problem}; Task refuses to start this agent"))
    for entry in definition.disallowed_tools:
        base = tool_base_name(entry)
        if base != "*" and base not in CLAUDE_CODE_ONLY_TOOLS and not _is_recognised(entry, known_tools):
            message = f"disallowedTools names unknown tool {entry!r}; if it is a typo, the tool stays allowed"
            problems.append(Problem(path, message, "warning"))
    return problems


def _is_recognised(entry: str, known_tools: Collection[str]) -> bool:
    base = tool_base_name(entry)
    return base in known_tools or base in PER_RUN_TOOL_NAMES or base in AGENT_TOOLS or base.startswith("mcp__")


def _is_plausible_model(model: str) -> bool:
    """Aliases, `inherit`, or anything shaped like a provider's model id (`claude-...`, `org/model`, `name:tag`)."""
    return model in MODEL_ALIASES or any(separator in model for separator in "-/:.")


def report_lines(problems: Sequence[Problem]) -> list[str]:
    """One line per problem, except that a warning several files share is one line naming how many and which."""
    sharing: dict[str, list[str]] = {}
    for problem in problems:
        if problem.severity == "warning":
            sharing.setdefault(problem.message, []).append(problem.path)
    lines: list[str] = []
    for problem in problems:
        if problem.severity == "error":
            lines.append(f"{problem.path}: {problem.message}")
            continue
        files = sharing.pop(problem.message, None)
        if files is None:  # already reported with the first file that has it
            continue
        if len(files) == 1:
            lines.append(f"{problem.path}: warning: {problem.message}")
            continue
        names = ", ".join(Path(file).name for file in files[:SHOWN_NAMES])
        more = f" and {len(files) - SHOWN_NAMES} more" if len(files) > SHOWN_NAMES else ""
        lines.append(f"warning: {problem.message} ({len(files)} files: {names}{more})")
    return lines
