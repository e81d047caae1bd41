"""The three tools' descriptions, as the host's model reads them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


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
- Subagents whose tools allow it can launch subagents of their own, a few levels deep; TaskOutput lists them \
under the task that launched them."""


def task_description(agents: Iterable[AgentLine]) -> str:
    lines = [f"- {a.name}: {a.description} (Tools: {a.tools})" for a in agents]
    listing = "\n".join(lines) if lines else "(no agents are loaded; add agent files and list tools again)"
    return (
        "Launch a new agent to handle complex, multi-step tasks autonomously.\n\n"
        "The Task tool launches specialized agents (subprocesses) that autonomously handle complex tasks. "
        "Each agent type has specific capabilities and tools available to it.\n\n"
        f"Available agent types and the tools they have access to:\n{listing}\n\n{TASK_USAGE_NOTES}"
    )


TASK_OUTPUT_DESCRIPTION = """\
- Retrieves output from a running or completed task (a background Task, or a foreground Task that was handed over \
to the background)
- Takes a task_id parameter identifying the task
- Returns the task output along with status information
- Use block=true (default) to wait for task completion
- Use block=false for a non-blocking check of current status
- Task IDs are returned by the Task tool
- Waits are capped a little under the host's tool-call timeout; if the task is still running, call TaskOutput again"""

TASK_STOP_DESCRIPTION = """\
- Stops a running or queued task by its ID
- Takes a task_id parameter identifying the task to stop
- Kills the task's running tool processes (Bash commands and their children)
- Returns a success or failure status
- Use this tool when you need to terminate a long-running task"""
