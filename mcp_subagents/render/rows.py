"""One task as a row of data, for `tasks list --json`, the dashboard's API and the App view."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..tasks.files import TaskSnapshot, WaitingQuestion
from .changes import files_row
from .questions import always_text, button_labels, permission_message, question_headline


def task_row(snapshot: TaskSnapshot) -> dict[str, Any]:
    """One task for `tasks list --json` and the dashboard's API."""
    header = snapshot.header
    return {
        "task_id": header.task_id,
        "state": snapshot.state,
        "agent": header.agent,
        "description": header.description,
        "owner": header.owner,
        "model": header.model,
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
        "files": files_row(snapshot.outcome.files if snapshot.outcome is not None else None),
    }


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
