"""Nested subagents: the `Agent` tool (Claude Code's `Task` before it renamed it) a subagent gets when its tools
allow it and the depth limit leaves room.

`tools: Task` (or `Agent`, or no `tools` at all) lets an agent launch any agent; `Task(reviewer, tester)` only
those. The nested task runs in the foreground of the tool call that launched it: the parent waits for its result,
a stop of the parent stops it, and its usage counts in the parent's. Tasks launched in one turn run at once, as in
Claude Code, within `--max-concurrent` (`task_slots`); they spend from their ancestors' budgets and `max_turns`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from functools import lru_cache
from typing import Literal

from pydantic import Field

from ..core.json_values import JsonObject
from ..core.names import AGENT_TOOLS, DEFAULT_AGENT, EFFORT_LEVELS, NESTED_TOOL_NAME, EffortLevel, ModelAlias
from ..definitions import AgentDefinition, tool_base_name
from ..models.resolve import TASK_MODEL_CHOICES
from ..tools.base import Tool, ToolContext, ToolInput, input_schema


class NestedTaskInput(ToolInput):
    description: str = Field(description="A label of three to five words for the task")
    prompt: str = Field(description="The instructions the subagent works from")
    subagent_type: str = Field(
        default=DEFAULT_AGENT, description=f"Which agent type runs the task; {DEFAULT_AGENT} when left out"
    )
    model: ModelAlias | None = Field(
        default=None, description="Optional model for this agent; overrides its definition's"
    )
    effort: EffortLevel | None = Field(default=None, description="Optional effort for this agent (default medium)")
    max_turns: int | None = Field(
        default=None,
        gt=0,
        description="Optional cap on model requests for this task and the subagents it launches, together",
    )
    isolation: Literal["worktree"] | None = Field(
        default=None, description='"worktree" runs the agent in its own git worktree of the repository'
    )


Launcher = Callable[[NestedTaskInput], Awaitable[str]]
"""Runs a nested task to its end and returns its result (`<task_result>`); raises `ToolError` when it failed."""


def launchable_agents(definition: AgentDefinition, available: Iterable[str]) -> list[str]:
    """The agents `definition` may launch: every one for `tools` omitted, `*`, `Task` or `Agent`; only the named
    ones for `Task(a, b)` entries; minus what `disallowedTools` names (`Task` alone removes them all)."""
    names = list(available)
    if any(tool_base_name(entry) in AGENT_TOOLS and "(" not in entry for entry in definition.disallowed_tools):
        return []
    barred = _named(definition.disallowed_tools)
    if definition.tools is None or any(entry.strip() in AGENT_TOOLS for entry in definition.tools):
        allowed = names
    else:
        wanted = _named(definition.tools)
        allowed = [name for name in names if name in wanted]
    return [name for name in allowed if name not in barred]


def wants_task_tool(definition: AgentDefinition) -> bool:
    """Whether the definition's tools include the Task tool at all."""
    if definition.tools is None:
        return True
    return any(tool_base_name(entry) in AGENT_TOOLS for entry in definition.tools)


def nested_task_tool(agents: Sequence[tuple[str, str, str]], launch: Launcher) -> Tool:
    """The Task tool for one run; `agents` are (name, description, tools summary) of the launchable agents."""
    listed = tuple(agents)

    async def run(_ctx: ToolContext, arguments: ToolInput) -> str:
        assert isinstance(arguments, NestedTaskInput)
        return await launch(arguments)

    return Tool(
        name=NESTED_TOOL_NAME,
        description=_description(listed),
        input_model=NestedTaskInput,
        run=run,
        schema=_schema(tuple(name for name, _, _ in listed)),
        read_only=True,  # what lets the loop run a turn's calls together; each nested task is checked on its own
    )


@lru_cache(maxsize=64)
def _schema(names: tuple[str, ...]) -> JsonObject:
    """The input schema for these agent names. Shared by the runs that list the same agents, so the model adapters
    find the tools' encoding they kept (they key it by schema identity) instead of encoding it again each run.
    Callers must not mutate it."""
    schema = dict(input_schema(NestedTaskInput))
    properties = dict(schema["properties"])
    chosen = {key: value for key, value in properties["subagent_type"].items() if key != "default"}
    properties["subagent_type"] = {**chosen, "enum": list(names)}
    properties["model"] = {
        "type": "string",
        "enum": list(TASK_MODEL_CHOICES),
        "description": properties["model"].get("description", ""),
    }
    properties["effort"] = {
        "type": "string",
        "enum": list(EFFORT_LEVELS),
        "description": properties["effort"].get("description", ""),
    }
    schema["properties"] = properties
    return schema


@lru_cache(maxsize=64)
def _description(agents: tuple[tuple[str, str, str], ...]) -> str:
    listing = "\n".join(f"- {name}: {' '.join(text.split())} (Tools: {tools})" for name, text, tools in agents)
    return (
        "Launch a subagent to do a self-contained part of your task on its own. It works while you wait; its final "
        "report comes back as this tool's result.\n\n"
        f"Agent types you can launch (general-purpose when subagent_type is left out):\n{listing}\n\n"
        "- The subagent sees nothing of your conversation: put every path, name and fact it needs in the prompt, "
        "and say exactly what its report should contain.\n"
        "- Say whether it should change files or only look and report.\n"
        "- Use it for work that needs many steps or reads many files; do small lookups yourself."
    )


def _named(entries: Iterable[str]) -> set[str]:
    """Agent names inside `Task(a, b)` / `Agent(a)` entries."""
    found: set[str] = set()
    for entry in entries:
        base, _, rest = entry.partition("(")
        if base.strip() in AGENT_TOOLS and rest.endswith(")"):
            found |= {name.strip() for name in rest[:-1].split(",") if name.strip()}
    return found
