"""The `TaskList` tool's answer: the caller's tasks as the live task view shows them (`app_view`), and as text."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..models.pricing import format_usd
from ..render import failure_message
from ..render.inert import inert_values
from ..tasks.record import TaskRecord

OUTPUT_LINES = 6
"""How many of the latest output lines each task shows."""


def task_entry(record: TaskRecord, *, recent_output: str, queue: tuple[int, int] | None) -> dict[str, Any]:
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
        "agent": record.agent,
        "description": record.description,
        "state": record.state,
        "turn": progress.turn if outcome is None else (outcome.counts.turns if outcome.counts else progress.turn),
        "max_turns": progress.max_turns,
        "current_tools": list(progress.current_tools) if outcome is None else [],
        "tokens": tokens,
        "cost_usd": record.cost_usd(),
        "elapsed_s": round(elapsed, 1),
        "queue_position": queue[0] if queue else None,
        "output": lines[-OUTPUT_LINES:],
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
    lines = [f"{entry['task_id']} {entry['agent']}: {entry['description']} [{' · '.join(parts)}]"]
    lines += [f"    {line}" for line in entry["output"][-3:]]
    return "\n".join(lines)
