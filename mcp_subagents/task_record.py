"""One task's state, and the texts it ends with: the result envelope, failures, stops, interruptions."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

import anyio

from .loop import Compacted, ModelResponded, RunEvent, RunResult, ToolFinished, ToolStarted
from .messages import Usage
from .permissions.asking import Asker, Denial, denial_notes
from .render import RunStats, task_error, task_result, truncate
from .tools.base import ProcessGroups
from .transcripts import TranscriptWriter

TaskState: TypeAlias = Literal["queued", "running", "completed", "failed", "stopped", "interrupted"]
FINISHED_STATES: frozenset[TaskState] = frozenset({"completed", "failed", "stopped", "interrupted"})

Listener = Callable[[RunEvent], Awaitable[None]]
Job = Callable[["TaskRecord", Listener], Awaitable[RunResult]]
"""Runs the subagent for a record, feeding every loop event to the listener."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskLimits:
    max_concurrent: int = 10
    task_timeout: float = 1800.0
    idle_timeout: float = 600.0
    max_result_chars: int = 80_000


@dataclass(eq=False, slots=True, kw_only=True)
class TaskRecord:
    id: str
    agent: str
    description: str
    output_path: Path
    transcript: TranscriptWriter
    state: TaskState = "queued"
    background: bool = False
    created: float = field(default_factory=time.time)
    resumed_from: str | None = None
    result_text: str | None = None
    """The rendered `<task_result>` / `<task_error>`, once finished."""
    result: RunResult | None = None
    turn: int = 0
    max_turns: int = 0
    tool_uses: int = 0
    usage: Usage = field(default_factory=Usage)
    started_at: float | None = None
    last_activity: float = field(default_factory=time.monotonic)
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope | None = None
    listeners: list[Listener] = field(default_factory=lambda: [])
    processes: ProcessGroups = field(default_factory=ProcessGroups)
    """Processes the task's Bash commands left running in the background; killed unless the task completes."""
    asker: Asker | None = None
    """Asks the user about a tool call while a foreground Task call waits on this task; None otherwise."""
    denials: list[Denial] = field(default_factory=lambda: [])
    stop_requested: str | None = None
    """Why the task is being cancelled ("stopped", "interrupted"), or None when it is not."""

    @property
    def finished(self) -> bool:
        return self.state in FINISHED_STATES

    @property
    def is_error(self) -> bool:
        return self.state in ("failed", "interrupted")

    def elapsed(self) -> float:
        return 0.0 if self.started_at is None else time.monotonic() - self.started_at


def run_stats(record: TaskRecord) -> RunStats:
    result = record.result
    return RunStats(
        task_id=record.id,
        turns=result.turns if result else record.turn,
        tool_uses=result.tool_uses if result else record.tool_uses,
        usage=result.usage if result else record.usage,
        duration_s=result.duration_s if result else record.elapsed(),
    )


def completed_text(record: TaskRecord, result: RunResult, *, max_chars: int) -> str:
    notes: list[str] = []
    if record.resumed_from:
        notes.append(f"[Resumed task {record.resumed_from}.]")
    if result.stop == "max_turns":
        notes.append(
            f"[Stopped at the turn limit ({result.turns} turns) before the agent finished; "
            f'continue with Task resume: "{record.id}".]'
        )
    elif result.stop == "max_tokens":
        notes.append("[The final answer was cut off at the model's output token limit.]")
    notes += denial_notes(record.denials)
    text = truncate(result.text, max_chars, full_text_at=str(record.output_path))
    return task_result(record.agent, text, run_stats(record), notes)


def failure_text(record: TaskRecord, message: str) -> str:
    return task_error(record.agent, "\n".join([message, *denial_notes(record.denials)]), run_stats(record))


def stopped_message(record: TaskRecord) -> str:
    return (
        f"Task {record.id} was stopped after {record.turn} turn(s) and {record.tool_uses} tool use(s). "
        f"Its output so far is in {record.output_path}."
    )


def interrupted_message(task_id: str) -> str:
    return (
        f'Task {task_id} was interrupted: the server stopped while it ran. Continue it with Task resume: "{task_id}".'
    )


def describe_event(event: RunEvent) -> str | None:
    """One readable line for a turn or tool event (the output file's format), or None for other events."""
    if isinstance(event, ModelResponded):
        calls = ", ".join(call.name for call in event.message.tool_calls)
        text = " ".join(event.message.text.split())
        said = f" {text[:300]}{'…' if len(text) > 300 else ''}" if text else ""
        return f"[turn {event.turn}] assistant:{said}{f' (calls: {calls})' if calls else ''}\n"
    if isinstance(event, ToolStarted):
        return f"[turn {event.turn}] tool {event.call.name} {json.dumps(event.call.arguments)[:300]}\n"
    if isinstance(event, ToolFinished):
        status = "error" if event.result.is_error else "ok"
        first = event.result.content.strip().splitlines()[0][:200] if event.result.content.strip() else ""
        return f"[turn {event.turn}] {event.call.name} -> {status} ({len(event.result.content)} chars): {first}\n"
    if isinstance(event, Compacted):
        why = "it passed the compaction threshold" if event.reason == "threshold" else "the model found it too long"
        return f"[turn {event.turn}] conversation of {event.replaced} messages summarised ({why})\n"
    return None
