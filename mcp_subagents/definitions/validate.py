"""Check agent files the way `mcp-subagents agents validate PATH...` reports them.

Errors mean the file does not load or cannot run as written. Warnings mean it loads but something is ignored or
left out here (Claude Code-only tools, unknown fields, a bad optional value, fields that have no effect here, a
missing name, YAML that only loads after repair).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

from ..errors import DefinitionError
from ..tools import AGENT_TOOLS, PER_RUN_TOOL_NAMES
from .frontmatter import read_frontmatter
from .model import AgentDefinition, LoadError, tool_base_name
from .parse import DESCRIPTION_FALLBACKS, EFFORT_LEVELS, MODEL_ALIASES, build_definition
from .sources import markdown_files, read_definition_text

Severity: TypeAlias = Literal["error", "warning"]

NEVER_GRANTED: Final = AGENT_TOOLS
"""Recognised in `tools`, but subagents never get them: no nesting."""
CLAUDE_CODE_ONLY_TOOLS: Final = frozenset(
    {
        "AskUserQuestion",
        "BashOutput",
        "EnterPlanMode",
        "EnterWorktree",
        "ExitPlanMode",
        "KillShell",
        "LS",
        "ListMcpResourcesTool",
        "LSP",
        "MultiEdit",
        "NotebookEdit",
        "NotebookRead",
        "ReadMcpResourceTool",
        "SendMessage",
        "SlashCommand",
        "TaskCreate",
        "TaskGet",
        "TaskList",
        "TaskOutput",
        "TaskStop",
        "TaskUpdate",
        "TeamCreate",
        "TeamDelete",
        "ToolSearch",
    }
)
"""Tools Claude Code has and this server does not: named as unavailable rather than unknown."""
NO_EFFECT_HERE: Final = {
    "hooks": "hooks are not run by this server yet: the agent's hook commands are ignored",
    "mcpServers": "mcpServers are not started by this server yet: their tools are unavailable to the agent",
    "isolation": "isolation is not supported by this server yet: the agent works in the project's own checkout",
    "initialPrompt": "initialPrompt only applies when Claude Code runs an agent as its main session; ignored here",
    "color": "color is only shown in Claude Code's interface; it has no effect here",
}
"""Fields that load but change nothing here, and what that means for the user."""
WEB_SEARCH_NOTE: Final = (
    "tool 'WebSearch' uses the Anthropic API's server-side web search: it is offered only with the Anthropic "
    "provider and left out with an OpenAI-compatible one"
)
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
_LOWERCASE_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]*")


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    message: str
    severity: Severity = "error"


def unknown_tools(definition: AgentDefinition, known_tools: Collection[str]) -> list[str]:
    """Entries of `tools` this server cannot provide, as written; they are left out of the agent's tool set.

    `mcp__*` entries and `Task`/`Agent` (recognised, never granted) are not unknown.
    """
    return [entry for entry in definition.tools or () if not _is_recognised(entry, known_tools)]


def validate_paths(paths: Sequence[Path], known_tools: Collection[str]) -> list[Problem]:
    """Problems in the given agent files; folders are searched recursively for `*.md`."""
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
        for file in files:
            definition, file_problems = _validate_file(file, known_tools)
            problems.extend(file_problems)
            if definition is None:
                continue
            first = first_file_by_name.setdefault(definition.name, file)
            if first != file:
                problems.append(
                    Problem(file, f"name {definition.name!r} is also defined in {first}; the later one wins", "warning")
                )
    return problems


def _validate_file(path: str, known_tools: Collection[str]) -> tuple[AgentDefinition | None, list[Problem]]:
    text = read_definition_text(path)
    if text is None:
        return None, []
    if isinstance(text, LoadError):
        return None, [Problem(path, text.error)]
    try:
        frontmatter = read_frontmatter(text, Path(path))
        definition = build_definition(
            frontmatter.fields, frontmatter.body, path=Path(path), source="project", fallback_name=Path(path).stem
        )
    except DefinitionError as exc:
        return None, [Problem(path, exc.message)]

    problems: list[Problem] = []

    def warn(message: str) -> None:
        problems.append(Problem(path, message, "warning"))

    fields = frontmatter.fields
    problems.extend(Problem(path, message, "warning") for message in definition.warnings)
    if frontmatter.yaml_repaired:
        warn(f"{frontmatter.yaml_repaired}; loaded anyway by quoting the value. Quote it: strict parsers reject it")
    if not fields.get("name"):
        warn(f"no 'name' field; the file name {definition.name!r} is used")
    elif not _LOWERCASE_NAME.fullmatch(definition.name):
        warn(f"name {definition.name!r} should use lowercase letters, digits and hyphens only")
    if not fields.get("description"):
        used = next((key for key in DESCRIPTION_FALLBACKS if fields.get(key)), DESCRIPTION_FALLBACKS[0])
        warn(f"description taken from {used!r}; Claude Code's field is 'description'")
    for key in definition.unknown_fields:
        hint = _FIELD_HINTS.get(key)
        warn(f"unknown field {key!r} is ignored" + (f"; did you mean {hint!r}?" if hint else ""))
    problems.extend(Problem(path, message, "warning") for message in _tool_messages(definition, known_tools))
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
    for key, note in NO_EFFECT_HERE.items():
        if fields.get(key) not in (None, "", [], {}):
            warn(note)
    return definition, problems


def _tool_messages(definition: AgentDefinition, known_tools: Collection[str]) -> list[str]:
    messages: list[str] = []
    for entry in definition.tools or ():
        base = tool_base_name(entry)
        if base in NEVER_GRANTED:
            messages.append(f"tool {entry!r} is never granted to subagents (no nesting); it is left out")
        elif base == "WebSearch":
            messages.append(WEB_SEARCH_NOTE)
        elif base in CLAUDE_CODE_ONLY_TOOLS and base not in known_tools:
            messages.append(f"tool {entry!r} exists only in Claude Code and is unavailable here; it is left out")
        elif not _is_recognised(entry, known_tools):
            messages.append(f"unknown tool {entry!r}; it is left out")
    for entry in definition.disallowed_tools:
        base = tool_base_name(entry)
        if base != "*" and base not in CLAUDE_CODE_ONLY_TOOLS and not _is_recognised(entry, known_tools):
            messages.append(f"disallowedTools names unknown tool {entry!r}; if it is a typo, the tool stays allowed")
    return messages


def _is_recognised(entry: str, known_tools: Collection[str]) -> bool:
    base = tool_base_name(entry)
    return base in known_tools or base in PER_RUN_TOOL_NAMES or base in NEVER_GRANTED or base.startswith("mcp__")


def _is_plausible_model(model: str) -> bool:
    """Aliases, `inherit`, or anything shaped like a provider's model id (`claude-...`, `org/model`, `name:tag`)."""
    return model in MODEL_ALIASES or any(separator in model for separator in "-/:.")
