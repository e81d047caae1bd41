"""How a task ends, as data: the outcome of a run that completed, failed, timed out, ran out of its tree's turns or
was stopped, with what it counted."""

from __future__ import annotations

import logging

from ..agent.file_changes import FileChanges, with_children
from ..agent.loop import RunResult
from ..core.errors import BudgetExceededError, SubagentsError, TurnsSpentError
from .outcome import FailureKind, RunCounts, Stall, TaskOutcome
from .record import RunResources, TaskRecord

logger = logging.getLogger("mcp_subagents.tasks.manager")


def counts(record: TaskRecord) -> RunCounts:
    progress = record.progress
    return RunCounts(
        turns=progress.turn,
        tool_uses=progress.tool_uses,
        usage=progress.usage + record.resources.descendant_usage,
        duration_s=progress.elapsed(),
        cost_usd=record.cost_usd(),
        nested=record.resources.descendant_counts,
    )


def completed(record: TaskRecord, result: RunResult) -> TaskOutcome:
    cost = record.cost_of(result.usage)
    counts = RunCounts(
        turns=result.turns,
        tool_uses=result.tool_uses,
        usage=result.usage + record.resources.descendant_usage,
        duration_s=result.duration_s,
        cost_usd=cost,
        nested=record.resources.descendant_counts,
    )
    return TaskOutcome(
        state="completed",
        counts=counts,
        text=result.text,
        stop=result.stop,
        stop_reason=result.stop_reason or "",
        denials=tuple(record.resources.denials),
    )


def failed(record: TaskRecord, exc: Exception) -> TaskOutcome:
    if isinstance(exc, TurnsSpentError):
        return _turns_spent(record, exc)
    if isinstance(exc, BudgetExceededError):
        shared = exc.holder is not None
        return TaskOutcome(
            state="failed",
            counts=counts(record),
            failure="budget",
            budget_usd=exc.budget_usd,
            budget_source=exc.source,
            budget_task=exc.holder or "",
            budget_spent_usd=exc.spent_usd if shared else None,
            denials=tuple(record.resources.denials),
        )
    message = exc.message if isinstance(exc, SubagentsError) else f"{type(exc).__name__}: {exc}"
    if not isinstance(exc, SubagentsError):
        logger.error("task %s crashed", record.id, exc_info=exc)
    return TaskOutcome(
        state="failed",
        counts=counts(record),
        failure="error",
        error=message,
        denials=tuple(record.resources.denials),
    )


def _turns_spent(record: TaskRecord, exc: TurnsSpentError) -> TaskOutcome:
    """The tree's `max_turns` ran out: the task stops at a turn limit, as at its own, with what it wrote last."""
    return TaskOutcome(
        state="completed",
        counts=counts(record),
        text=record.progress.last_text,
        stop="max_turns",
        turns_allowed=exc.limit,
        turns_task=exc.holder,
        denials=tuple(record.resources.denials),
    )


def timed_out(record: TaskRecord, which: FailureKind, limit: float) -> TaskOutcome:
    return TaskOutcome(
        state="failed",
        counts=counts(record),
        failure=which,
        limit_s=limit,
        denials=tuple(record.resources.denials),
    )


def stalled(record: TaskRecord, stall: Stall, limit: float) -> TaskOutcome:
    """Stopped by `--stall-timeout`: no progress, or the same call over and over, for `limit` seconds."""
    return TaskOutcome(
        state="failed",
        counts=counts(record),
        failure="stalled",
        limit_s=limit,
        stall=stall,
        denials=tuple(record.resources.denials),
    )


def cancelled(record: TaskRecord) -> TaskOutcome:
    state = "interrupted" if record.stop_requested == "interrupted" else "stopped"
    waited_for = record.asking if state == "interrupted" else None
    return TaskOutcome(
        state=state, counts=counts(record), denials=tuple(record.resources.denials), waited_for=waited_for
    )


def changed_files(resources: RunResources) -> FileChanges | None:
    """The files the task and the tasks it launched changed; None when none of them ran."""
    own, children = resources.file_changes, resources.child_files
    if not children:
        return own
    return with_children(own or FileChanges(), children)
