"""Asking the host's person about a tool call through MCP elicitation, in both protocol eras.

2025-era hosts get an `elicitation/create` request while the Task call waits. 2026-era hosts cannot be sent requests:
the waiting Task call answers an `InputRequiredResult` carrying the same form, and the host's next call brings the
answer (see `foreground.py`).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext

from ..permissions.asking import ALLOWED, DECLINED, DISMISSED, Answer, PermissionQuestion
from ..render import permission_message
from ..tasks.record import TaskRecord

logger = logging.getLogger(__name__)

PERMISSION_SCHEMA: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {
        "allow": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Check to let the subagent make this one call; leave unchecked to deny it.",
            "default": False,
        }
    },
    "required": ["allow"],
}


def answer_of(result: object) -> Answer:
    """The person's answer in an elicitation result: allowed only when they accepted with `allow` checked."""
    if not isinstance(result, types.ElicitResult):
        return DISMISSED
    if result.action == "accept":
        return ALLOWED if (result.content or {}).get("allow") is True else DECLINED
    return DECLINED if result.action == "decline" else DISMISSED


def permission_request(question: PermissionQuestion, record: TaskRecord) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=permission_message(question, task_id=record.id), requested_schema=PERMISSION_SCHEMA
        )
    )


class Elicitor:
    """Asks a 2025-era host's person with `elicitation/create`, on the Task call that is waiting for the task."""

    def __init__(self, ctx: ServerRequestContext[Any], record: TaskRecord) -> None:
        self._ctx = ctx
        self._record = record

    async def __call__(self, question: PermissionQuestion) -> Answer:
        message = permission_message(question, task_id=self._record.id)
        try:
            result = await self._ctx.session.elicit_form(
                message, PERMISSION_SCHEMA, related_request_id=self._ctx.request_id
            )
        except Exception as exc:  # the host refused the request or went away: nobody answered
            logger.info("could not ask the host about %s: %s", question.tool, exc)
            return Answer(kind="unanswered", failure=str(exc) or type(exc).__name__)
        return answer_of(result)
