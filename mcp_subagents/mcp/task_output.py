"""`TaskOutput`: where a task stands, its result once it has one, and, where the host can show forms, the task's
open permission questions put before the person. A host model that polls `TaskOutput` thereby brings a background
task's question to its person; the model itself reads only that the task waits, never a way to answer."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext

from ..core.errors import SubagentsError
from ..render.status import status_text
from ..runtime.service import Subagents
from ..tasks.stalls import stall_of
from .caller import principal_of
from .foreground import HostReporter, TaskCallResult, questions_round, round_state, settle_round, wait_on_task
from .host_connection import can_elicit_form, is_modern
from .schemas import TaskOutputInput, parse_arguments


async def task_output_call(
    ctx: ServerRequestContext[Any], app: Subagents, params: types.CallToolRequestParams
) -> TaskCallResult:
    request = parse_arguments("TaskOutput", TaskOutputInput, dict(params.arguments or {}))
    record = await app.tasks.fetch(request.task_id, principal=principal_of(ctx.request))
    state = round_state(params.request_state)
    shown: list[str] = []
    if state is not None and state.task is not None:
        if state.task != record.id:
            raise SubagentsError("This call's requestState belongs to another task; call TaskOutput without it.")
        settled = await settle_round(ctx, app, state, params.input_responses or {})
        if isinstance(settled, types.CallToolResult):
            return settled
        record, shown = settled
    if not record.finished:
        deadline = app.settings.foreground_deadline
        asks_now = can_elicit_form(ctx) and not is_modern(ctx) and not request.block
        # Without block the call returns at once, unless it shows the person the questions open now (2025 era).
        seconds = min(request.timeout / 1000, deadline) if request.block else deadline if asks_now else 0.0
        with app.tasks.attach(record, HostReporter(ctx, record, app.redact)):
            ended = await wait_on_task(ctx, app, record, seconds, shown, until_shown=asks_now)
            if ended == "asking":
                return questions_round(app, record, shown)
    text = status_text(
        record,
        queue=app.tasks.queue_position(record),
        recent_output=app.tasks.recent_output(record),
        max_result_chars=app.settings.max_result_chars,
        subtasks=app.tasks.subtasks(record),
        questions=[] if record.finished else app.tasks.open_questions(record),
        stall=stall_of(record, after=app.settings.stall_after),
    )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=record.is_error)
