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
How to use it:
- Tasks that do not depend on each other can run side by side: put several Task calls in the same message.
- The report comes back to you alone; the user does not see it. Tell the user what matters in it yourself.
- A subagent starts with no knowledge of your conversation, and you cannot talk to it while it works. Write a \
prompt that stands on its own: the goal, every file path, name and fact it needs, and what its report must contain.
- To go on with a finished task, pass its task id as `resume`: the new prompt becomes its next turn. Without \
`resume`, every call starts a fresh subagent.
- Say whether it should change code or only investigate (search, read files, fetch pages): it cannot guess what \
the user wants.
- With run_in_background set to true you get a task id at once; fetch the report later with TaskOutput, or end \
the task with TaskStop. A foreground task that runs too long is moved to the background on its own and its task \
id comes back: pass that id to TaskOutput.
- A subagent whose tools allow it can start subagents of its own, a few levels deep; TaskOutput shows them under \
the task that started them."""


def task_description(agents: Iterable[AgentLine]) -> str:
    lines = [f"- {a.name}: {a.description} (Tools: {a.tools})" for a in agents]
    listing = "\n".join(lines) if lines else "(no agents are loaded; add agent files and list tools again)"
    return (
        "Hand a task to a subagent: a separate model run that works through it on its own, with the tools its "
        "agent type grants, and answers with one final report.\n\n"
        "Agent types (choose one with subagent_type; left out, general-purpose runs) and their tools:\n"
        f"{listing}\n\n{TASK_USAGE_NOTES}"
    )


TASK_OUTPUT_DESCRIPTION = """\
Reads a task's state and, once it has finished, its report. Works for background tasks and for foreground tasks \
that were moved to the background.
- task_id: the id the Task tool returned.
- block=true (the default) waits until the task ends or the timeout passes; block=false answers at once with the \
current state.
- A wait stops a little before the host's own tool-call timeout; if the task is still running then, call \
TaskOutput again."""

TASK_STOP_DESCRIPTION = """\
Ends a running or queued task, given its task_id.
- Also kills the processes its tools started (Bash commands and everything they launched).
- Answers whether the task was stopped.
- Use it when a task is no longer needed or has run far longer than it should."""
