"""The `<task_result>` / `<task_error>` envelopes, and the text of how a task ended."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core.messages import Usage
from ..permissions.asking import Denial, PermissionQuestion
from ..tasks.outcome import NestedCounts, RunCounts, Stall, TaskOutcome
from ..tasks.transcripts import TranscriptHeader
from .changes import LISTED_FILES, changed_files_notes
from .inert import inert
from .questions import waiting_text


class TaskIdentity(Protocol):
    """What a result names of its task: a live `TaskRecord`, or a task read back from the state directory."""

    @property
    def id(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def output_path(self) -> Path: ...
    @property
    def resumed_from(self) -> str | None: ...
    @property
    def model(self) -> str: ...
    @property
    def effort(self) -> str | None: ...
    @property
    def model_note(self) -> str: ...


@dataclass(frozen=True, slots=True)
class RecordedTask:
    """A task read back from its transcript's header, as a result names it."""

    id: str
    agent: str
    output_path: Path
    resumed_from: str | None
    model: str = ""
    effort: str | None = None
    model_note: str = ""


def recorded_task(header: TranscriptHeader, output: Path) -> RecordedTask:
    return RecordedTask(
        header.task_id,
        header.agent,
        output,
        header.resumed_from,
        model=header.model,
        effort=header.effort,
        model_note=header.model_note,
    )


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
    cost_usd: float | None = None
    model: str = ""
    """The model id the task ran on ("" when not known)."""
    effort: str | None = None
    nested: NestedCounts = field(default_factory=NestedCounts)


def usd_value(cost: float) -> str:
    """A cost for machines and models: plain decimal USD, six places at most, no exponent."""
    return f"{cost:.6f}".rstrip("0").rstrip(".") or "0"


def usage_line(stats: RunStats) -> str:
    u = stats.usage
    cost = "" if stats.cost_usd is None else f"cost_usd: {usd_value(stats.cost_usd)}; "
    ran = f"model: {stats.model}; " if stats.model else ""
    ran += f"effort: {stats.effort}; " if stats.effort else ""
    nested = stats.nested
    below = (
        f"nested_tasks: {nested.tasks}; nested_turns: {nested.turns}; nested_tool_uses: {nested.tool_uses}; "
        if nested.tasks
        else ""
    )
    return (
        f"<usage>task_id: {stats.task_id}; {ran}turns: {stats.turns}; tool_uses: {stats.tool_uses}; {below}"
        f"input_tokens: {u.input_tokens}; output_tokens: {u.output_tokens}; "
        f"cache_creation_tokens: {u.cache_creation_tokens}; cache_read_tokens: {u.cache_read_tokens}; "
        f"{cost}duration_ms: {round(stats.duration_s * 1000)}</usage>"
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


def model_notes(task: TaskIdentity) -> list[str]:
    """The warning a result carries when the agent file's model was not the one that ran."""
    return [f"[Warning: {task.model_note}]"] if task.model_note else []


def task_error(agent: str, message: str, stats: RunStats | None = None) -> str:
    envelope = f'<task_error agent="{escape_attribute(agent)}">{escape_body(message)}</task_error>'
    return f"{envelope}\n{usage_line(stats)}" if stats else envelope


def denial_notes(denials: Iterable[Denial]) -> list[str]:
    """The lines a final result carries, so the user sees what was denied and what would allow it."""
    lines = [f"- {d.tool} {d.arguments}: {d.reason}" for d in denials]
    if not lines:
        return []
    return [f"[Permission denied for {len(lines)} tool call(s):\n" + "\n".join(lines) + "]"]


def stopped_message(record: TaskIdentity, counts: RunCounts | None) -> str:
    turns, tool_uses = (counts.turns, counts.tool_uses) if counts else (0, 0)
    return (
        f"Task {record.id} was stopped after {turns} turn(s) and {tool_uses} tool use(s). "
        f"Its output so far is in {record.output_path}."
    )


def interrupted_message(task_id: str, waited_for: PermissionQuestion | None = None) -> str:
    message = (
        f'Task {task_id} was interrupted: the server stopped while it ran. Continue it with Task resume: "{task_id}".'
    )
    if waited_for is None:
        return message
    return f"{message}\nIt was {waiting_text(waited_for)}. Resuming it asks the person again."


def failure_message(outcome: TaskOutcome) -> str:
    match outcome.failure:
        case "wall_clock":
            return f"Task exceeded its time limit of {outcome.limit_s:g} s"
        case "idle":
            return f"Task made no progress (no model reply or tool result) for {outcome.limit_s:g} s"
        case "budget":
            return _budget_message(outcome)
        case "stalled" if outcome.stall is not None:
            return f"Task stopped after {outcome.limit_s:g} s stalled (--stall-timeout): {stall_text(outcome.stall)}"
        case _:
            return outcome.error


def stall_label(stall: Stall) -> str:
    return "looping" if stall.kind == "repeating" else "stalled"


def stall_text(stall: Stall) -> str:
    """What a stalled task has been doing, or not, and for how long (model and tool names are made inert)."""
    if stall.kind == "repeating":
        return (
            f"it called {inert(stall.tool, one_line=True)} with the same arguments {stall.repeats} times in a row "
            f"({_seconds(stall.seconds)} without other progress)"
        )
    running = f" while {inert(stall.tool, one_line=True)} runs" if stall.tool else ""
    return f"no model reply or tool result for {_seconds(stall.seconds)}{running}"


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def _budget_message(outcome: TaskOutcome) -> str:
    spent = outcome.counts.cost_usd if outcome.counts and outcome.counts.cost_usd is not None else 0.0
    if not outcome.budget_task:
        return (
            f"Task stopped at its budget: it spent ${usd_value(spent)} of the ${outcome.budget_usd:g} allowed "
            f"by {outcome.budget_source}. Raise the budget and continue it with Task resume, or narrow the task."
        )
    together = outcome.budget_spent_usd or 0.0
    return (
        f"Task stopped at the budget of task {outcome.budget_task} above it: together the tasks under it spent "
        f"${usd_value(together)} of the ${outcome.budget_usd:g} allowed by {outcome.budget_source}, "
        f"${usd_value(spent)} of it in this task. Raise that budget and continue that task with Task resume, or "
        "narrow the task."
    )


def outcome_text(record: TaskIdentity, outcome: TaskOutcome, *, max_chars: int | None) -> str:
    """The result the host gets for a finished task; `max_chars` cuts the agent's text (None: never cut)."""
    if outcome.rendered is not None:
        return outcome.rendered
    counts = outcome.counts
    stats = None if counts is None else _stats(record, counts)
    denied = denial_notes(outcome.denials)
    extensions = [
        *extension_notes(outcome),
        *changed_files_notes(outcome.files, limit=None if max_chars is None else LISTED_FILES),
    ]
    match outcome.state:
        case "completed":
            notes = [*_completion_notes(record, outcome), *model_notes(record), *extensions, *denied]
            body = outcome.text
            if max_chars is not None:
                body = truncate(body, max_chars, full_text_at=str(record.output_path))
            return task_result(record.agent, body, stats, notes)
        case "failed":
            message = failure_message(outcome)
        case "stopped":
            message = stopped_message(record, counts)
        case "interrupted":
            message = interrupted_message(record.id, outcome.waited_for)
    lines = [message, *model_notes(record), *extensions, *denied]
    return task_error(record.agent, "\n".join(lines), stats)


def _stats(record: TaskIdentity, counts: RunCounts) -> RunStats:
    return RunStats(
        task_id=record.id,
        model=record.model,
        effort=record.effort,
        turns=counts.turns,
        tool_uses=counts.tool_uses,
        usage=counts.usage,
        duration_s=counts.duration_s,
        cost_usd=counts.cost_usd,
        nested=counts.nested,
    )


def _completion_notes(record: TaskIdentity, outcome: TaskOutcome) -> list[str]:
    notes: list[str] = []
    if record.resumed_from:
        notes.append(f"[Resumed task {record.resumed_from}.]")
    if outcome.stop == "max_turns" and outcome.turns_allowed:
        whose = "this task" if outcome.turns_task == record.id else f"task {outcome.turns_task}"
        notes.append(
            f"[Stopped before the agent finished: the {outcome.turns_allowed} model requests that max_turns "
            f"{outcome.turns_allowed} allows {whose} and the tasks it launches are spent; "
            f'continue with Task resume: "{record.id}".]'
        )
    elif outcome.stop == "max_turns":
        turns = outcome.counts.turns if outcome.counts else 0
        notes.append(
            f"[Stopped at the turn limit ({turns} turns) before the agent finished; "
            f'continue with Task resume: "{record.id}".]'
        )
    elif outcome.stop == "max_tokens":
        notes.append("[The final answer was cut off at the model's output token limit.]")
    elif outcome.stop == "hook_stopped":
        notes.append(f"[A hook stopped the agent: {outcome.stop_reason or 'no reason given'}]")
    return notes


def extension_notes(outcome: TaskOutcome) -> list[str]:
    """What the agent's worktree and MCP servers came to, for the result's readers."""
    notes = [f'[MCP server "{p.name}" was not available to the agent: {p.reason}]' for p in outcome.server_problems]
    worktree = outcome.worktree
    if worktree is None:
        return notes
    if worktree.kept:
        changed = ", ".join(worktree.changed_files[:50])
        more = f" and {len(worktree.changed_files) - 50} more" if len(worktree.changed_files) > 50 else ""
        lines = [f"worktreePath: {worktree.path}", f"worktreeBranch: {worktree.branch}"]
        if worktree.changed_files:
            lines.append(f"changed files: {changed}{more}")
        if worktree.problem:
            lines.append(f"(left in place: {worktree.problem})")
        notes.append(
            "[The agent worked in its own git worktree, kept because it changed something:\n" + "\n".join(lines) + "]"
        )
    else:
        notes.append(f"[The agent's git worktree was removed with its branch {worktree.branch}: nothing changed.]")
    return notes
