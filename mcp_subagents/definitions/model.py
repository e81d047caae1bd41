"""The agent definition value and the small types that travel with it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from ..core.json_values import JsonObject

Source: TypeAlias = Literal["built-in", "plugin", "user", "project", "flag", "policy"]
"""Where a definition came from, lowest priority first."""

MemoryScope: TypeAlias = Literal["user", "project", "local"]

McpServerSpec: TypeAlias = str | JsonObject
"""A server name known to the host configuration, or an inline `{name: {command, args, env}}` mapping."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    """One subagent, as read from a Markdown file, the `--agents` JSON or a policy file."""

    name: str
    """The id used in Task's `subagent_type` enum: `plugin-name:agent-name` for plugin agents."""
    description: str
    """When to delegate to this agent; shown in the Task description."""
    prompt: str
    """The system prompt: the Markdown body (or JSON `prompt`), stripped."""
    tools: tuple[str, ...] | None = None
    """Allowed tools as written (`Bash(git push *)` kept whole); None means all tools, `()` means none."""
    disallowed_tools: tuple[str, ...] = ()
    """Tools removed before `tools` applies."""
    model: str = "inherit"
    """`sonnet`, `opus`, `haiku`, `fable`, `inherit` (aliases lowercased) or a model id as written."""
    permission_mode: str | None = None
    """One of default, acceptEdits, auto, dontAsk, bypassPermissions, plan (`manual` becomes `default`)."""
    max_turns: int | None = None
    max_budget_usd: float | None = None
    """`maxBudgetUsd`: USD one task of this agent may spend; the lower of it and `--max-budget-usd` applies."""
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[McpServerSpec, ...] = ()
    hooks: JsonObject | None = None
    memory: MemoryScope | None = None
    background: bool = False
    effort: str | None = None
    isolation: str | None = None
    color: str | None = None
    initial_prompt: str | None = None
    omit_claude_md: bool = False
    critical_reminder: str | None = None
    """From `criticalSystemReminder_EXPERIMENTAL`: repeated to the model as a reminder."""
    permission: JsonObject | None = None
    """A compact per-agent permission map some files carry, e.g. `{"*": "deny", "Grep": "allow"}`."""
    source: Source
    path: Path | None = None
    """The file it was read from; None for JSON definitions."""
    plugin: str | None = None
    """The plugin's name, for plugin agents."""
    unknown_fields: tuple[str, ...] = ()
    """Frontmatter keys the contract does not define, in file order."""
    extra: JsonObject = field(default_factory=lambda: {})
    """Values of the keys that have no field of their own (the unknown ones and `experimental`)."""
    warnings: tuple[str, ...] = ()
    """Optional fields whose value could not be used, each dropped (as Claude Code drops it), and why."""

    @property
    def agent_name(self) -> str:
        """The name without the `plugin:` prefix."""
        return self.name.rpartition(":")[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class CachedAgent:
    """An agent file this process has not parsed: what the Task tool shows of it, as the state directory's cache
    kept it from an earlier run (see `cache`). The catalog parses the file when the definition itself is needed."""

    name: str
    description: str
    tools: tuple[str, ...] | None = None
    disallowed_tools: tuple[str, ...] = ()
    source: Source
    path: str
    plugin: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LoadError:
    """A definition source that could not be used, and why. Loading goes on without it."""

    path: str
    """The file path, or a label such as `--agents` for JSON given on the command line."""
    error: str


def tool_base_name(entry: str) -> str:
    """`Bash(git push *)` -> `Bash`; other entries unchanged."""
    return entry.partition("(")[0].strip()


def tools_summary(definition: AgentDefinition | CachedAgent) -> str:
    """The tools part of the agent's line in the Task description.

    `All tools`, `All tools except X, Y`, `A, B, C`, or `None` when the agent has no tools left.
    """
    if definition.tools is None:
        if definition.disallowed_tools:
            return "All tools except " + ", ".join(definition.disallowed_tools)
        return "All tools"
    removed = {tool_base_name(entry) for entry in definition.disallowed_tools}
    kept = [entry for entry in definition.tools if tool_base_name(entry) not in removed]
    return ", ".join(kept) if kept else "None"
