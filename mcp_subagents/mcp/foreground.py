"""A `Task` call from launch to answer: the host's roots, the foreground wait, handover, and the round trips of
2026-era hosts.

A 2026-07-28 connection cannot carry server-initiated requests, so what the server must ask rides the waiting call:
it answers an `InputRequiredResult` (a `roots/list` request before the task starts, permission forms while it
runs), and the host repeats the call with the answers and our sealed `requestState`. The task keeps running in the
meantime, blocked on its question; the repeated call settles the question and waits on the task again, exactly
like the first call (up to the foreground deadline), possibly asking the next question.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeAlias

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from pydantic import BaseModel, ConfigDict, ValidationError

from ..agent.loop import ToolStarted, TurnStarted
from ..core.errors import LaunchRefusedError, SubagentsError, TaskNotFoundError
from ..core.redaction import Redactor
from ..render import (
    budget_warning_text,
    describe_event,
    handover_text,
    launched_text,
    outcome_text,
    stale_answer_text,
    task_error,
)
from ..render.envelopes import stall_label, stall_text
from ..render.inert import inert
from ..render.questions import waiting_text
from ..render.status import still_running_text
from ..runtime.service import Subagents
from ..tasks.record import BudgetWarning, QuestionAsked, Stalled, TaskEvent, TaskRecord
from .caller import principal_of
from .elicitation import HostAsking, choice_of, permission_request, settle
from .host_connection import can_elicit_form, is_modern, log_level_allows, offers_roots
from .root_policy import confine_roots
from .roots import ROOTS_INPUT_KEY, ConnectionRoots, host_roots, roots_from_response, roots_request
from .schemas import parse_task

logger = logging.getLogger(__name__)

TaskCallResult: TypeAlias = types.CallToolResult | types.InputRequiredResult
WaitEnd: TypeAlias = Literal["finished", "asking", "deadline"]


class RoundState(BaseModel):
    """What our `requestState` carries between two calls of a round trip. The SDK's `RequestStateBoundary` seals it
    (encrypted, bound to this tool call's arguments, expiring), so what arrives here is what we minted."""

    model_config = ConfigDict(extra="forbid")

    v: Literal[1] = 1
    roots: bool = False
    """The host was sent our `roots/list` request; its answer is in the call's input responses."""
    task: str | None = None
    """The task whose open permission questions the host was sent."""
    questions: list[str] = []
    """The questions sent in this round."""
    shown: list[str] = []
    """Questions this chain of calls showed and the host dismissed (or left unanswered): not sent again."""


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


class TaskCalls:
    """Serves `Task` calls for one server: it keeps the roots of 2026-era connections."""

    def __init__(self, app: Subagents) -> None:
        self.app = app
        self.roots = ConnectionRoots()

    async def __call__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> TaskCallResult:
        app = self.app
        arguments = dict(params.arguments or {})
        catalog = await app.catalog_for_task(arguments.get("subagent_type"))
        args = parse_task(arguments, catalog)
        state = round_state(params.request_state)
        responses = params.input_responses or {}
        shown: list[str] = []
        if state is not None and state.task is not None:
            settled = await settle_round(ctx, app, state, responses)
            if isinstance(settled, types.CallToolResult):
                return settled
            record, shown = settled
            if args.resume != record.id:
                return await self._wait_in_foreground(ctx, record, shown)
        if args.resume:
            attended = await self._attend_before_resume(ctx, args.resume, shown)
            if attended is not None:
                return attended
        roots = await self._roots(ctx, state, responses)
        if isinstance(roots, types.InputRequiredResult):
            return roots
        if ctx.request is not None and not app.settings.trust_client_roots:  # over HTTP: see root_policy
            roots = confine_roots(roots, areas=(app.settings.working_directory, *app.settings.allowed_roots))
        try:
            record = app.launch(
                args, catalog=catalog, roots=roots, principal=principal_of(ctx.request), trace_meta=params.meta
            )
        except LaunchRefusedError as exc:
            return _text(task_error(args.agent or "", exc.message), is_error=True)
        if record.background:
            await record.opened.wait()  # the answer names the output file: it exists by then
            if app.tasks.team is not None:  # and any replica of a team finds the task by the id it gives
                await app.tasks.team.announced(record.id)
            return _text(launched_text(record))
        return await self._wait_in_foreground(ctx, record, [])

    async def _roots(
        self, ctx: ServerRequestContext[Any], state: RoundState | None, responses: types.InputResponses
    ) -> tuple[Path, ...] | types.InputRequiredResult:
        if not is_modern(ctx):
            return await host_roots(ctx.session)
        if not offers_roots(ctx):
            return ()
        if state is not None and state.roots:
            folders = roots_from_response(responses.get(ROOTS_INPUT_KEY))
            self.roots.remember(ctx, folders)
            return folders
        known = self.roots.known(ctx)
        if known is not None:
            return known
        return types.InputRequiredResult(
            input_requests={ROOTS_INPUT_KEY: roots_request()}, request_state=RoundState(roots=True).model_dump_json()
        )

    async def _attend_before_resume(
        self, ctx: ServerRequestContext[Any], task_id: str, shown: list[str]
    ) -> TaskCallResult | None:
        """`resume` of a task that is still running: its questions are asked through this call, and the resume goes
        ahead (None) when the task ends within the foreground deadline; otherwise the call says it still runs."""
        app = self.app
        try:
            record = await app.tasks.fetch(task_id, principal=principal_of(ctx.request))
        except TaskNotFoundError:
            return None  # the launch reports it
        if record.finished:
            return None
        with app.tasks.attach(record, HostReporter(ctx, record, app.redact)):
            ended = await wait_on_task(ctx, app, record, app.settings.foreground_deadline, shown)
            if ended == "asking":
                return questions_round(app, record, shown)
        if record.finished:
            return None
        return _text(still_running_text(record, app.tasks.open_questions(record)), is_error=True)

    async def _wait_in_foreground(
        self, ctx: ServerRequestContext[Any], record: TaskRecord, shown: list[str]
    ) -> TaskCallResult:
        app = self.app
        deadline = app.settings.foreground_deadline
        with app.tasks.attach(record, HostReporter(ctx, record, app.redact)):
            try:
                ended = await wait_on_task(ctx, app, record, deadline, shown)
            except anyio.get_cancelled_exc_class():
                logger.info("host cancelled task %s; stopping it", record.id)
                app.tasks.request_stop(record.id)
                raise
            if ended == "asking":
                return questions_round(app, record, shown)
        if record.outcome is not None:
            text = outcome_text(record, record.outcome, max_chars=app.settings.max_result_chars)
            return _text(text, is_error=record.outcome.is_error)
        return _text(
            handover_text(
                record,
                waited_s=deadline,
                recent_output=app.tasks.recent_output(record),
                questions=app.tasks.open_questions(record),
            )
        )


def round_state(plaintext: str | None) -> RoundState | None:
    """The state a repeated call brings back, if any (a 2026-era round trip)."""
    if plaintext is None:
        return None
    try:
        return RoundState.model_validate_json(plaintext)
    except ValidationError:
        raise SubagentsError(
            "This call's requestState cannot be read (it comes from another version of the server); "
            "call the tool again without it."
        ) from None


async def settle_round(
    ctx: ServerRequestContext[Any], app: Subagents, state: RoundState, responses: types.InputResponses
) -> tuple[TaskRecord, list[str]] | types.CallToolResult:
    """A host's call that brings answers: settle the questions that are still open. Returns the task and the
    questions not to send again in this chain of calls, or the result for an answer that came too late."""
    assert state.task is not None
    try:
        record = await app.tasks.fetch(state.task, principal=principal_of(ctx.request))
    except TaskNotFoundError:
        return _text(stale_answer_text(None, task_id=state.task), is_error=True)
    board = app.tasks.root(record).resources.questions
    still_open = [question for qid in state.questions if (question := board.get(qid)) is not None]
    if len(still_open) < len(state.questions):
        logger.info("task %s: answers for questions settled elsewhere first are dropped", record.id)
    shown = list(state.shown)
    for question in still_open:
        response = responses.get(question.id)
        if response is None:
            continue  # no answer for it in this call: sent again
        choice = choice_of(response)
        if choice is None:
            shown.append(question.id)  # dismissed: left open for the other places, not sent again in this chain
        else:
            await settle(app, record, question, choice, principal_of(ctx.request))
    return record, shown


async def wait_on_task(
    ctx: ServerRequestContext[Any],
    app: Subagents,
    record: TaskRecord,
    seconds: float,
    shown: list[str],
    *,
    until_shown: bool = False,
) -> WaitEnd:
    """Wait until the task finishes or `seconds` pass, showing the person its open questions meanwhile: through
    `elicitation/create` (2025 era), or by ending the wait as `asking` when a question this chain of calls has not
    shown is open (2026 era: the call answers an `InputRequiredResult`). `until_shown` (2025 era): end once every
    question open now has been shown, finished or not."""
    can_ask = can_elicit_form(ctx)
    modern = is_modern(ctx)
    board = app.tasks.root(record).resources.questions
    with anyio.move_on_after(seconds):
        async with anyio.create_task_group() as group:

            async def until_finished() -> None:
                await record.done.wait()
                group.cancel_scope.cancel()

            async def until_asking() -> None:
                await board.wait_for_new(shown)
                group.cancel_scope.cancel()

            async def asking() -> None:
                await HostAsking(ctx, app, record).run(until_shown=until_shown)
                if until_shown:
                    group.cancel_scope.cancel()

            group.start_soon(until_finished)
            if can_ask and modern:
                group.start_soon(until_asking)
            elif can_ask:
                group.start_soon(asking)
    if record.done.is_set():
        return "finished"
    if can_ask and modern and any(question.id not in shown for question in board.waiting()):
        return "asking"
    return "deadline"


def questions_round(app: Subagents, record: TaskRecord, shown: list[str]) -> types.InputRequiredResult:
    """The open questions this chain of calls has not shown, as a 2026-era host's input requests."""
    waiting = [question for question in app.tasks.open_questions(record) if question.id not in shown]
    requests: types.InputRequests = {question.id: permission_request(question) for question in waiting}
    state = RoundState(task=record.id, questions=[question.id for question in waiting], shown=shown)
    return types.InputRequiredResult(input_requests=requests, request_state=state.model_dump_json())


_LogSender: TypeAlias = Callable[
    [ServerSession, types.LoggingLevel, Any, str | None, types.RequestId | None], Awaitable[None]
]
_send_log_message: _LogSender = getattr(
    ServerSession.send_log_message,  # pyright: ignore[reportDeprecated]
    "__wrapped__",
    ServerSession.send_log_message,  # pyright: ignore[reportDeprecated]
)
"""`ServerSession.send_log_message` without its deprecation wrapper: log notifications are deprecated in the 2026 era
but still what 2025-era hosts display, and silencing the warning around every event cost about 1 % of the server's
CPU."""


class HostReporter:
    """Progress for each turn and tool call (a no-op when the host sent no progress token), and log
    notifications of subagent events for hosts that accept them. Neither is needed for a correct result."""

    def __init__(self, ctx: ServerRequestContext[Any], record: TaskRecord, redact: Redactor) -> None:
        self._ctx = ctx
        self._record = record
        self._redact = redact

    async def __call__(self, event: TaskEvent) -> None:
        if isinstance(event, TurnStarted):
            # A task another replica runs is seen turn by turn, without its limit.
            message = f"turn {event.turn} of {event.max_turns}" if event.max_turns else f"turn {event.turn}"
        elif isinstance(event, ToolStarted):
            message = f"turn {event.turn}: {inert(event.call.name, one_line=True)}"
        elif isinstance(event, BudgetWarning):
            message = f"turn {event.turn}: budget: {budget_warning_text(event)}"
        elif isinstance(event, QuestionAsked):
            message = waiting_text(event.entry.question)
        elif isinstance(event, Stalled):
            message = f"{stall_label(event.stall)}: {stall_text(event.stall)}"
        else:
            message = None
        if message is not None:
            # Counted on the task, so progress keeps rising across the calls of a 2026-era round trip.
            progress, asked = self._record.progress, self._record.resources.questions.asked
            await self._ctx.session.report_progress(progress.turn + progress.tool_uses + asked, None, message)
        line = describe_event(event)
        if line is not None and log_level_allows(self._ctx, "info"):
            # Hosts show these to people: the model's text in them is made inert (and so well-formed).
            data = {
                "task_id": self._record.id,
                "agent": inert(self._record.agent, one_line=True),
                "event": inert(self._redact(line.strip())),
            }
            await _send_log_message(self._ctx.session, "info", data, "mcp-subagents", self._ctx.request_id)
