"""One task as a row of data, for `tasks list --json`, the dashboard's API and the App view."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..tasks.files import TaskSnapshot, WaitingQuestion
from ..tasks.outcome import Stall
from ..tasks.record import TaskLimits
from .changes import files_row
from .envelopes import stall_label, stall_text
from .questions import always_text, button_labels, permission_message, question_headline

DEFAULT_STALL_AFTER = TaskLimits().stall_after


def task_row(snapshot: TaskSnapshot, *, stall_after: float = DEFAULT_STALL_AFTER) -> dict[str, Any]:
    """One task for `tasks list --json` and the dashboard's API; `stall_after`: `--stall-after`."""
    header = snapshot.header
    return {
        "task_id": header.task_id,
        "state": snapshot.state,
        "agent": header.agent,
        "description": header.description,
        "prompt": snapshot.prompt_line,
        "owner": header.owner,
        "model": header.model,
        "effort": header.effort,
        "model_note": header.model_note,
        "created": header.created,
        "resumed_from": header.resumed_from,
        "turns": snapshot.turns,
        "tool_uses": snapshot.tool_uses,
        "tokens": snapshot.tokens,
        "usage": asdict(snapshot.usage),
        "cost_usd": snapshot.cost_usd,
        "budget_usd": header.budget_usd,
        "elapsed_s": round(snapshot.elapsed_s, 3),
        "current_tools": list(snapshot.current_tools),
        "denials": snapshot.denials,
        "last_text": snapshot.last_text[-500:],
        "pid": header.pid,
        "waiting": None if snapshot.waiting is None else waiting_row(snapshot.waiting),
        "parent_task_id": header.parent,
        "active_at": snapshot.active_at,
        "stall_after": stall_after,
        "stall": stall_row(snapshot.stall(stall_after)),
        "nested": _nested(snapshot),
        "files": files_row(snapshot.outcome.files if snapshot.outcome is not None else None),
    }


def _nested(snapshot: TaskSnapshot) -> dict[str, int] | None:
    """How many tasks ran below a finished task, and their turns and tool uses (its tokens and cost include
    theirs); None while it runs."""
    outcome = snapshot.outcome
    return asdict(outcome.counts.nested) if outcome is not None and outcome.counts is not None else None


def stall_row(stall: Stall | None) -> dict[str, Any] | None:
    """A task's stall as the views show it (None when it is not stalled)."""
    if stall is None:
        return None
    return {**asdict(stall), "seconds": round(stall.seconds, 1), "label": stall_label(stall), "text": stall_text(stall)}


def waiting_row(waiting: WaitingQuestion) -> dict[str, Any]:
    """The question a task waits on, as the dashboard and `tasks list --json` show it: the headline made inert
    for people; the raw arguments stay in the transcript."""
    question = waiting.question
    return {
        "id": waiting.id,
        "task_id": waiting.task_id,
        "asked_at": waiting.asked_at,
        "headline": question_headline(question),
        "message": permission_message(question, task_id=waiting.task_id),
        "always": always_text(question),
        "labels": button_labels(question),
    }
