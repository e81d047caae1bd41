"""The `TaskList` tool's answer: the caller's tasks as the live task view shows them (`app_view`), and as text.

A task the person launched carries the questions its tree waits on, as the form shows them, and once it has ended,
the line the view tells the conversation. To a host with MCP Apps, the result's `_meta` also carries each open
question's answer token (`answer_tokens`): never its text or its structured content, which a model may read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mcp_types as types

from ..models.pricing import format_usd
from ..permissions.asking import OpenQuestion
from ..render import failure_message
from ..render.changes import files_row
from ..render.inert import inert_values
from ..render.questions import always_text, button_labels, permission_message, question_headline
from ..render.rows import stall_row
from ..render.status import end_notice_text
from ..render.tree import record_entry, tree_rows
from ..runtime.service import Subagents
from ..tasks.outcome import Stall
from ..tasks.record import TaskRecord
from ..tasks.stalls import stall_of
from .answer_tokens import ANSWER_TOKENS_META, AnswerTokens

OUTPUT_LINES = 6
"""How many of the latest output lines each task shows."""


async def task_list_call(app: Subagents, principal: str, tokens: AnswerTokens | None) -> types.CallToolResult:
    """`principal`'s tasks; with `tokens` (a host with MCP Apps), the answer token of each open question."""
    tasks = app.tasks
    entries: list[dict[str, Any]] = []
    issued: dict[str, str] = {}
    for record in await tasks.list_of(principal):
        questions = tasks.open_questions(record) if record.parent is None and not record.finished else []
        recent, queue = tasks.recent_output(record, 800), tasks.queue_position(record)
        entry = task_entry(
            record,
            recent_output=recent,
            queue=queue,
            questions=questions,
            stall=stall_of(record, after=app.settings.stall_after),
        )
        entry["tree"] = tree_rows([record_entry(level, child) for level, child in tasks.subtasks(record)])
        entries.append(entry)
        if tokens is not None:
            issued |= {entry.id: tokens.issue(principal, entry.id) for entry in questions}
    result = task_list_result(entries)
    if issued:
        result.meta = {ANSWER_TOKENS_META: issued}
    return result


def task_entry(
    record: TaskRecord,
    *,
    recent_output: str,
    queue: tuple[int, int] | None,
    questions: Sequence[OpenQuestion] = (),
    stall: Stall | None = None,
) -> dict[str, Any]:
    """One task as the view shows it. `questions`: those its tree waits on (for a task the person launched);
    `stall`: how it has stalled, if it has."""
    progress = record.progress
    usage = progress.usage
    outcome = record.outcome
    if outcome is not None and outcome.counts is not None:
        usage = outcome.counts.usage
    tokens = usage.total_tokens
    elapsed = outcome.counts.duration_s if outcome is not None and outcome.counts is not None else progress.elapsed()
    if outcome is None:
        lines = [line for line in recent_output.splitlines() if line.strip() and not line.startswith("[task ")]
    elif outcome.state == "completed":
        lines = [line for line in outcome.text.splitlines() if line.strip()]
    else:
        lines = [failure_message(outcome) if outcome.state == "failed" else f"Task {outcome.state}."]
    return {
        "task_id": record.id,
        "parent_task_id": record.parent,
        "agent": record.agent,
        "description": record.description,
        "model": record.model,
        "effort": record.effort,
        "model_note": record.model_note,
        "state": "waiting" if questions else record.state,
        "turn": progress.turn if outcome is None else (outcome.counts.turns if outcome.counts else progress.turn),
        "max_turns": progress.max_turns,
        "current_tools": list(progress.current_tools) if outcome is None else [],
        "tokens": tokens,
        "cost_usd": record.cost_usd(),
        "elapsed_s": round(elapsed, 1),
        "queue_position": queue[0] if queue else None,
        "output": lines[-OUTPUT_LINES:],
        "questions": [question_entry(entry) for entry in questions],
        "end_notice": end_notice_text(record) if record.finished and record.parent is None else None,
        "stall": stall_row(stall),
        "files": files_row(outcome.files if outcome is not None else None),
    }


def question_entry(entry: OpenQuestion) -> dict[str, Any]:
    """A question as the task's card shows it: the form's first line, then the rest of the form, and the rule
    "Always allow" adds (None when it cannot be offered) with the line that says where it goes."""
    question = entry.question
    headline, always = question_headline(question), always_text(question)
    details = permission_message(question, task_id=entry.task_id).removeprefix(headline).strip("\n")
    if always is not None:
        details = details.removesuffix(always).rstrip("\n")
    return {
        "id": entry.id,
        "task_id": entry.task_id,
        "agent": question.agent,
        "tool": question.tool,
        "headline": headline,
        "details": details,
        "rule": question.suggestion if always is not None else None,
        "always": always,
        "labels": button_labels(question),
        "asked_at": entry.asked_at,
    }


def task_list_result(entries: list[dict[str, Any]]) -> types.CallToolResult:
    """The tasks as structured content for the view, and as text for everyone else; both for people, so inert."""
    entries = inert_values(entries)
    text = "\n".join(_entry_text(entry) for entry in entries) if entries else "No tasks yet."
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content={"tasks": entries}
    )


def _entry_text(entry: dict[str, Any]) -> str:
    parts = [entry["state"]]
    if entry["state"] == "queued" and entry["queue_position"]:
        parts = [f"queued (position {entry['queue_position']})"]
    elif entry["turn"]:
        parts.append(f"turn {entry['turn']}" + (f"/{entry['max_turns']}" if entry["max_turns"] else ""))
    elif entry["state"] == "running":
        parts.append("starting")
    if entry["current_tools"]:
        parts.append(", ".join(entry["current_tools"]))
    parts.append(f"{entry['tokens']:,} tokens")
    if entry["cost_usd"] is not None:
        parts.append(format_usd(entry["cost_usd"]))
    parts.append(f"{entry['elapsed_s']:.0f} s")
    if entry["model"]:
        parts.append(entry["model"] + (f" ({entry['effort']})" if entry["effort"] else ""))
    lines = [f"{entry['task_id']} {entry['agent']}: {entry['description']} [{' · '.join(parts)}]"]
    lines += [f"    {question['headline']}" for question in entry["questions"]]
    if entry.get("tree"):
        lines.append(f"    nested tasks: {len(entry['tree'])} (their cost is in this task's)")
    if entry["stall"] is not None:
        lines.append(f"    {entry['stall']['label']}: {entry['stall']['text']}")
    lines += [f"    {line}" for line in entry["output"][-3:]]
    return "\n".join(lines)
