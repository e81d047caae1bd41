"""Text the host sees: `<task_result>` / `<task_error>` envelopes and the Task tool description."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .messages import Usage

_OWN_TAG = re.compile(r"<(?=/?\s*(?:task_result|task_error|usage)\b)", re.IGNORECASE)


def escape_body(text: str) -> str:
    """Neutralise our own tags inside subagent text so it cannot close the envelope early."""
    return _OWN_TAG.sub("&lt;", text)


def escape_attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStats:
    task_id: str
    turns: int
    tool_uses: int
    usage: Usage
    duration_s: float


def usage_line(stats: RunStats) -> str:
    u = stats.usage
    return (
        f"<usage>task_id: {stats.task_id}; turns: {stats.turns}; tool_uses: {stats.tool_uses}; "
        f"input_tokens: {u.input_tokens}; output_tokens: {u.output_tokens}; "
        f"cache_creation_tokens: {u.cache_creation_tokens}; cache_read_tokens: {u.cache_read_tokens}; "
        f"duration_ms: {round(stats.duration_s * 1000)}</usage>"
    )


def truncate(text: str, limit: int, *, full_text_at: str | None) -> str:
    """Cut text over `limit` characters, saying how much was cut and where the whole text is."""
    if len(text) <= limit:
        return text
    where = f" The full text is in {full_text_at}." if full_text_at else ""
    return f"{text[:limit]}\n\n[Result truncated: showing {limit} of {len(text)} characters.{where}]"


def task_result(agent: str, text: str, stats: RunStats | None = None, notes: Iterable[str] = ()) -> str:
    body = escape_body(text)
    extra = "".join(f"\n{escape_body(note)}" for note in notes)
    envelope = f'<task_result agent="{escape_attribute(agent)}">{body}{extra}</task_result>'
    return f"{envelope}\n{usage_line(stats)}" if stats else envelope


def task_error(agent: str, message: str, stats: RunStats | None = None) -> str:
    envelope = f'<task_error agent="{escape_attribute(agent)}">{escape_body(message)}</task_error>'
    return f"{envelope}\n{usage_line(stats)}" if stats else envelope


@dataclass(frozen=True, slots=True)
class AgentLine:
    name: str
    description: str
    tools: str


TASK_USAGE_NOTES = """\
When using the Task tool, you must specify a subagent_type parameter to select which agent type to use.

Usage notes:
- Launch multiple agents concurrently whenever possible, to maximize performance; to do that, use a single message \
with multiple tool uses.
- When the agent is done, it will return a single message back to you. The result returned by the agent is not \
visible to the user. To show the user the result, you should send a text message back to the user with a concise \
summary of the result.
- Each agent invocation is stateless unless you pass `resume` with an earlier task id. You will not be able to send \
additional messages to the agent, nor will the agent be able to communicate with you outside of its final report. \
Your prompt should contain a highly detailed task description for the agent to perform autonomously and you should \
specify exactly what information the agent should return back to you in its final and only message to you.
- The agent sees nothing of your conversation: include every file path, name and fact it needs in the prompt.
- Clearly tell the agent whether you expect it to write code or just to do research (search, file reads, web \
fetches, etc.), since it is not aware of the user's intent.
- Set run_in_background to true for long work: you get a task id at once and read the result later with \
TaskOutput; stop a task with TaskStop. A foreground task that runs long is handed over to the background \
automatically and its task id is returned; then call TaskOutput with that id.
- Subagents cannot launch other subagents."""


def task_description(agents: Iterable[AgentLine]) -> str:
    lines = [f"- {a.name}: {a.description} (Tools: {a.tools})" for a in agents]
    listing = "\n".join(lines) if lines else "(no agents are loaded; add agent files and list tools again)"
    return (
        "Launch a new agent to handle complex, multi-step tasks autonomously.\n\n"
        "The Task tool launches specialized agents (subprocesses) that autonomously handle complex tasks. "
        "Each agent type has specific capabilities and tools available to it.\n\n"
        f"Available agent types and the tools they have access to:\n{listing}\n\n{TASK_USAGE_NOTES}"
    )
