"""Asking the host's person about a subagent's tool call through MCP elicitation, in both protocol eras.

2025-era hosts get an `elicitation/create` request on a call about the task that is waiting (`Task`, `TaskOutput`,
`Task` with `resume`): `HostAsking` shows each open question of the task's board in turn. 2026-era hosts cannot be
sent requests: the waiting call answers an `InputRequiredResult` carrying the same form, and the host's next call
brings the answer (see `foreground.py`).

Allow, deny and "always allow" settle the question. A dismissed form (the person closed it, or a host that cannot
show forms cancelled it) leaves the question open for the other places the person may answer it; that call does
not show it again.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext

from ..core.errors import QuestionClosedError
from ..permissions.asking import Choice, OpenQuestion
from ..render import permission_message
from ..render.questions import allow_label, always_text
from ..runtime.service import Subagents
from ..tasks.record import TaskRecord
from .caller import principal_of

logger = logging.getLogger(__name__)

VIA_FORM = "the host's permission form"


def permission_schema(question: OpenQuestion) -> types.ElicitRequestedSchema:
    """`allow`, and `always` when an allow rule can spare the question from now on."""
    title, description = allow_label(question.question)
    properties: dict[str, Any] = {
        "allow": {"type": "boolean", "title": title, "description": description, "default": False}
    }
    always = always_text(question.question)
    if always is not None:
        properties["always"] = {
            "type": "boolean",
            "title": "Always allow calls like this",
            "description": f"Check together with allow. {always}",
            "default": False,
        }
    return {"type": "object", "properties": properties, "required": ["allow"]}


def choice_of(result: object) -> Choice | None:
    """The person's choice in an elicitation result; None when the form was dismissed without one."""
    if not isinstance(result, types.ElicitResult):
        return None
    if result.action == "accept":
        content = result.content or {}
        if content.get("allow") is not True:
            return "deny"
        return "always" if content.get("always") is True else "allow"
    return "deny" if result.action == "decline" else None


def permission_request(question: OpenQuestion) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=permission_message(question.question, task_id=question.task_id),
            requested_schema=permission_schema(question),
        )
    )


async def settle(app: Subagents, record: TaskRecord, question: OpenQuestion, choice: Choice, by: str) -> None:
    """Give the person's answer from the host's form; a question someone answered first stays as they left it."""
    try:
        await app.answers.answer(record, question.id, choice, by=by, via=VIA_FORM)
    except QuestionClosedError:
        logger.info("task %s: a form answer came after the question closed", record.id)


def host_connection(ctx: ServerRequestContext[Any]) -> object:
    """The connection a request came on: the SDK builds a session object per request, over one connection."""
    return getattr(ctx.session, "_connection", ctx.session)


class HostAsking:
    """Shows a task's open questions to a 2025-era host's person, one form at a time, while one call about the task
    waits. A form outlives the call that showed it (the person may answer after the call handed over) until it is
    answered or its question closes elsewhere, which withdraws it; the connection is not shown that question again
    while its form is open."""

    def __init__(self, ctx: ServerRequestContext[Any], app: Subagents, record: TaskRecord) -> None:
        self._ctx = ctx
        self._app = app
        self._record = record
        self._shown: set[str] = set()

    async def run(self, *, until_shown: bool = False) -> None:
        """Ask until cancelled; with `until_shown`, return once every question open now has been shown. Returns
        early when the host fails to show a form: it cannot, and the questions stay open for other places."""
        board = self._app.tasks.root(self._record).resources.questions
        connection = host_connection(self._ctx)
        while True:
            if until_shown and not board.unseen(self._shown, besides=connection):
                return
            question = await board.wait_for_new(self._shown, besides=connection)
            self._shown.add(question.id)
            shown = anyio.Event()
            outcome: list[bool] = []
            self._app.tasks.in_background(self._form, question, shown, outcome, name=f"form {question.id}")
            await shown.wait()
            if outcome == [False]:
                return

    async def _form(self, question: OpenQuestion, shown: anyio.Event, outcome: list[bool]) -> None:
        """Show one form and settle its question with the person's choice; `outcome` says whether the host showed
        it."""
        session, connection = self._ctx.session, host_connection(self._ctx)
        result: object = None
        question.forms.add(connection)
        try:
            async with anyio.create_task_group() as group:

                async def until_settled() -> None:
                    await question.settled.wait()
                    group.cancel_scope.cancel()

                group.start_soon(until_settled)
                try:
                    result = await session.elicit_form(
                        permission_message(question.question, task_id=question.task_id),
                        permission_schema(question),
                        related_request_id=self._ctx.request_id,
                    )
                except Exception as exc:  # the host refused the request or went away
                    logger.info("could not ask the host about %s: %s", question.question.tool, exc)
                    outcome.append(False)
                    return
                finally:
                    group.cancel_scope.cancel()
            choice = choice_of(result)
            if choice is not None and not question.settled.is_set():
                await settle(self._app, self._record, question, choice, principal_of(self._ctx.request))
            outcome.append(True)
        finally:
            question.forms.discard(connection)
            shown.set()
