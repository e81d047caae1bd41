"""Every text the host sees, made from data: result envelopes, status, tool descriptions, permission questions.

The task layer stores data (`TaskOutcome`, `TaskRecord`); the server edge, the CLI and the runtime (a nested Task
answers its parent in the host's words) call these functions; the task manager gets its output file's lines handed
in. Each module loads when a name of it is first used: the tool descriptions are part of start-up, the results and
status texts (and the task types they read) are not.
May use: tasks, agent, tools, sandbox, permissions, models, definitions, config, core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.lazy import members_on_first_use

if TYPE_CHECKING:
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

_HOMES = {
    "AgentLine": ".descriptions",
    "RunStats": ".envelopes",
    "TASK_OUTPUT_DESCRIPTION": ".descriptions",
    "TASK_STOP_DESCRIPTION": ".descriptions",
    "already_finished_text": ".status",
    "budget_warning_text": ".status",
    "denial_notes": ".envelopes",
    "describe_event": ".status",
    "escape_attribute": ".envelopes",
    "escape_body": ".envelopes",
    "failure_message": ".envelopes",
    "handover_text": ".status",
    "launched_text": ".status",
    "outcome_text": ".envelopes",
    "permission_message": ".questions",
    "progress_text": ".status",
    "stale_answer_text": ".status",
    "status_text": ".status",
    "stop_pending_text": ".status",
    "stopped_text": ".status",
    "task_description": ".descriptions",
    "task_error": ".envelopes",
    "task_result": ".envelopes",
    "truncate": ".envelopes",
    "usd_value": ".envelopes",
}


__getattr__ = members_on_first_use(__name__, _HOMES)


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
