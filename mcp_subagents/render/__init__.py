"""Every text the host sees, made from data: result envelopes, status, tool descriptions, permission questions.

The task layer stores data (`TaskOutcome`, `TaskRecord`); only the server edge and the CLI call these functions,
and the task manager for the lines of a task's output file.
"""

from .descriptions import TASK_OUTPUT_DESCRIPTION, TASK_STOP_DESCRIPTION, AgentLine, task_description
from .envelopes import (
    RunStats,
    denial_notes,
    escape_attribute,
    escape_body,
    failure_message,
    outcome_text,
    task_error,
    task_result,
    truncate,
    usd_value,
)
from .questions import permission_message
from .status import (
    already_finished_text,
    budget_warning_text,
    describe_event,
    handover_text,
    launched_text,
    progress_text,
    stale_answer_text,
    status_text,
    stop_pending_text,
    stopped_text,
)

__all__ = [
    "TASK_OUTPUT_DESCRIPTION",
    "TASK_STOP_DESCRIPTION",
    "AgentLine",
    "RunStats",
    "already_finished_text",
    "budget_warning_text",
    "denial_notes",
    "describe_event",
    "escape_attribute",
    "escape_body",
    "failure_message",
    "handover_text",
    "launched_text",
    "outcome_text",
    "permission_message",
    "progress_text",
    "stale_answer_text",
    "status_text",
    "stop_pending_text",
    "stopped_text",
    "task_description",
    "task_error",
    "task_result",
    "truncate",
    "usd_value",
]
