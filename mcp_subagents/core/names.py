"""Claude Code's names that every layer shares: its tools, the model aliases, effort levels and permission modes.

One place for each, so that the definitions, the permission rules, the tools, the schemas and the settings cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeAlias, get_args

BUILTIN_TOOL_NAMES: Final[tuple[str, ...]] = ("Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "TodoWrite")
"""The subagent's built-in tools, in the order Claude Code lists them."""
PER_RUN_TOOL_NAMES: Final[tuple[str, ...]] = ("WebSearch", "Skill")
"""Tools built for each run, since they depend on it: WebSearch (the Anthropic provider only) and Skill (when skills
exist)."""
AGENT_TOOLS: Final[frozenset[str]] = frozenset({"Task", "Agent"})
"""Claude Code's tools that launch subagents: recognised in definitions and rules, never given to a subagent."""
NESTED_TOOL_NAME: Final = "Agent"
"""The name of the tool a subagent launches nested subagents with: Claude Code's current name (`Task` is the old one,
still accepted in agent files, permission rules and hook matchers)."""
DEFAULT_AGENT: Final = "general-purpose"
"""The agent a Task runs when it names none, as in Claude Code."""

ModelAlias: TypeAlias = Literal["sonnet", "opus", "haiku", "fable"]
MODEL_ALIASES: Final[Mapping[str, str]] = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
"""Claude Code's model aliases and the model ids they stand for."""
TASK_MODEL_CHOICES: Final[tuple[str, ...]] = tuple(MODEL_ALIASES)
assert TASK_MODEL_CHOICES == get_args(ModelAlias)

EffortLevel: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
EFFORT_LEVELS: Final[tuple[EffortLevel, ...]] = ("low", "medium", "high", "xhigh", "max")
"""Claude Code's effort levels, lowest first."""

PERMISSION_MODES: Final[tuple[str, ...]] = ("plan", "dontAsk", "default", "acceptEdits", "bypassPermissions")
"""Permission modes from the narrowest to the widest."""
MODE_ALIASES: Final[Mapping[str, str]] = {"auto": "default", "manual": "default"}
"""Older names Claude Code still accepts for a mode."""
