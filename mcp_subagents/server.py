"""MCP wiring: the three tools, argument validation, progress, and the transports."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp import MCPDeprecationWarning
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler

from . import __version__
from .definitions import tools_summary
from .errors import InvalidArgumentsError, ProviderNotConfiguredError, SubagentsError
from .loop import RunEvent, ToolStarted, TurnStarted
from .notifications import ToolListNotifier
from .permissions.asking import PermissionQuestion
from .redaction import Redactor
from .render import AgentLine, task_description, task_error
from .roots import host_roots
from .schemas import (
    TASK_OUTPUT_DEFAULT_TIMEOUT_MS,
    TASK_OUTPUT_SCHEMA,
    TASK_STOP_SCHEMA,
    task_schema,
    validate_arguments,
)
from .service import Subagents, TaskArguments
from .task_record import TaskRecord, describe_event

logger = logging.getLogger(__name__)

TASK_OUTPUT_DESCRIPTION = """\
- Retrieves output from a running or completed task (a background Task, or a foreground Task that was handed over \
to the background)
- Takes a task_id parameter identifying the task
- Returns the task output along with status information
- Use block=true (default) to wait for task completion
- Use block=false for a non-blocking check of current status
- Task IDs are returned by the Task tool
- Waits are capped a little under the host's tool-call timeout; if the task is still running, call TaskOutput again"""

TASK_STOP_DESCRIPTION = """\
- Stops a running or queued task by its ID
- Takes a task_id parameter identifying the task to stop
- Kills the task's running tool processes (Bash commands and their children)
- Returns a success or failure status
- Use this tool when you need to terminate a long-running task"""


class SubagentsServer(Server[Any]):
    """Advertises `tools.listChanged` on every transport, so hosts re-list tools when agent files change."""

    notifier: ToolListNotifier

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


def build_server(app: Subagents) -> SubagentsServer:
    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools(app))

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = dict(params.arguments or {})
        try:
            match params.name:
                case "Task":
                    return await _call_task(app, ctx, arguments)
                case "TaskOutput":
                    return await _call_task_output(app, arguments)
                case "TaskStop":
                    return await _call_task_stop(app, arguments)
                case _:
                    return _text(
                        f"Unknown tool '{params.name}'. Available tools: Task, TaskOutput, TaskStop", is_error=True
                    )
        except SubagentsError as exc:
            return _text(exc.message, is_error=True)
        except Exception as exc:
            logger.exception("tool %s failed", params.name)
            return _text(f"Internal error in {params.name}: {type(exc).__name__}: {exc}", is_error=True)

    notifier = ToolListNotifier()
    server = SubagentsServer(
        "mcp-subagents",
        version=__version__,
        instructions="Delegate work to subagents with Task; poll background tasks with TaskOutput; stop with TaskStop.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(notifier.bus),
    )
    server.notifier = notifier
    server.middleware.append(notifier.track_sessions)
    return server


def _tools(app: Subagents) -> list[types.Tool]:
    catalog = app.catalog()
    lines = [AgentLine(d.name, d.description, tools_summary(d)) for d in catalog.agents.values()]
    return [
        types.Tool(
            name="Task",
            description=task_description(lines),
            input_schema=task_schema(list(catalog.names())),
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
        ),
        types.Tool(
            name="TaskOutput",
            description=TASK_OUTPUT_DESCRIPTION,
            input_schema=TASK_OUTPUT_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        ),
        types.Tool(
            name="TaskStop",
            description=TASK_STOP_DESCRIPTION,
            input_schema=TASK_STOP_SCHEMA,
            annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False),
        ),
    ]


async def _call_task(app: Subagents, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
    catalog = app.catalog()
    validate_arguments("Task", task_schema(list(catalog.names())), arguments)
    args = TaskArguments(**arguments)
    try:
        record = app.launch(args, catalog=catalog, roots=await host_roots(ctx.session))
    except ProviderNotConfiguredError as exc:
        return _text(task_error(args.subagent_type, exc.message), is_error=True)
    if record.background:
        return _text(_launched_text(record))
    progress = _HostReporter(ctx, record, app.redact)
    record.listeners.append(progress)
    record.asker = _Elicitor(ctx, seconds=app.settings.foreground_deadline)
    try:
        finished = await app.tasks.wait(record, app.settings.foreground_deadline)
    except anyio.get_cancelled_exc_class():
        logger.info("host cancelled task %s; stopping it", record.id)
        app.tasks.request_stop(record.id)
        raise
    finally:
        record.listeners.remove(progress)
        record.asker = None  # handed over to the background: nobody is there to ask any more
    if finished:
        return _text(record.result_text or "", is_error=record.is_error)
    return _text(_handover_text(app, record))


class _HostReporter:
    """Progress for each turn and tool call (a no-op when the host sent no progress token), and log
    notifications of subagent events for hosts that accept them. Neither is needed for a correct result."""

    def __init__(self, ctx: ServerRequestContext[Any], record: TaskRecord, redact: Redactor) -> None:
        self._ctx = ctx
        self._record = record
        self._redact = redact
        self._count = 0

    async def __call__(self, event: RunEvent) -> None:
        if isinstance(event, TurnStarted):
            message = f"turn {event.turn} of {event.max_turns}"
        elif isinstance(event, ToolStarted):
            message = f"turn {event.turn}: {event.call.name}"
        else:
            message = None
        if message is not None:
            self._count += 1
            await self._ctx.session.report_progress(self._count, None, message)
        line = describe_event(event)
        if line is not None:
            data = {"task_id": self._record.id, "agent": self._record.agent, "event": self._redact(line.strip())}
            with warnings.catch_warnings():  # deprecated in the 2026 era, still what 2025-era hosts display
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                sending = self._ctx.session.send_log_message(  # pyright: ignore[reportDeprecated]
                    "info", data, logger="mcp-subagents", related_request_id=self._ctx.request_id
                )
            await sending


PERMISSION_SCHEMA: types.ElicitRequestedSchema = {
    "type": "object",
    "properties": {"allow": {"type": "boolean", "title": "Allow this tool call", "default": False}},
    "required": ["allow"],
}


class _Elicitor:
    """Asks the host's user about a tool call through elicitation, on the Task request that is waiting."""

    def __init__(self, ctx: ServerRequestContext[Any], *, seconds: float) -> None:
        self._ctx = ctx
        self._seconds = seconds

    async def __call__(self, question: PermissionQuestion) -> bool | None:
        session = self._ctx.session
        message = (
            f"Subagent '{question.agent}' wants to run {question.tool}:\n{question.summary()}\n\n{question.reason}"
        )
        try:
            if not session.check_client_capability(types.ClientCapabilities(elicitation=types.ElicitationCapability())):
                return None
            with anyio.fail_after(self._seconds):
                answer = await session.elicit_form(message, PERMISSION_SCHEMA, related_request_id=self._ctx.request_id)
        except Exception as exc:  # no back channel (2026 era), a timeout, a host error: nobody answered
            logger.info("could not ask the host about %s: %s", question.tool, exc)
            return None
        return answer.action == "accept" and bool((answer.content or {}).get("allow"))


def _launched_text(record: TaskRecord) -> str:
    return (
        f"Task launched in the background.\n"
        f"task_id: {record.id}\n"
        f"agent: {record.agent}\n"
        f"output_file: {record.output_path}\n"
        f'Read the result with TaskOutput {{"task_id": "{record.id}"}}; it waits for completion unless block is '
        f"false. Stop the task with TaskStop. The output file grows as the task runs."
    )


def _handover_text(app: Subagents, record: TaskRecord) -> str:
    return (
        f"Task {record.id} ({record.agent}: {record.description}) is still running after "
        f"{app.settings.foreground_deadline:g} s, so it continues in the background; nothing is lost.\n"
        f'Call TaskOutput with {{"task_id": "{record.id}"}} to wait for its result, or TaskStop to stop it.\n'
        f"output_file: {record.output_path}\n\n"
        f"Output so far:\n{app.tasks.recent_output(record)}"
    )


def _status_text(app: Subagents, record: TaskRecord) -> str:
    lines = [f"<task_id>{record.id}</task_id>", f"<agent>{record.agent}</agent>", f"<status>{record.state}</status>"]
    if record.state == "queued":
        position = app.tasks.queue_position(record)
        lines.append(f"<queue_position>{position} of {app.tasks.queue_length}</queue_position>")
    elif record.state == "running":
        lines.append(
            f"<progress>turn {record.turn} of {record.max_turns}, {record.tool_uses} tool use(s), "
            f"{record.elapsed():.0f} s</progress>"
        )
    if record.finished:
        lines.append(record.result_text or "")
    else:
        lines.append(f"<output>\n{app.tasks.recent_output(record)}</output>")
    return "\n".join(lines)


async def _call_task_output(app: Subagents, arguments: dict[str, Any]) -> types.CallToolResult:
    validate_arguments("TaskOutput", TASK_OUTPUT_SCHEMA, arguments)
    record = app.tasks.get(str(arguments["task_id"]))
    if arguments.get("block", True) and not record.finished:
        timeout_ms = float(arguments.get("timeout", TASK_OUTPUT_DEFAULT_TIMEOUT_MS))
        await app.tasks.wait(record, min(timeout_ms / 1000, app.settings.foreground_deadline))
    return _text(_status_text(app, record), is_error=record.finished and record.is_error)


async def _call_task_stop(app: Subagents, arguments: dict[str, Any]) -> types.CallToolResult:
    validate_arguments("TaskStop", TASK_STOP_SCHEMA, arguments)
    task_id = arguments.get("task_id") or arguments.get("shell_id")
    if not task_id:
        raise InvalidArgumentsError("Missing required parameter: task_id")
    record = app.tasks.get(str(task_id))
    if record.finished:
        return _text(
            f"Task {record.id} ({record.description}) already finished with status {record.state}; nothing to stop."
        )
    await app.tasks.stop(record.id)
    if not record.finished:
        return _text(
            f"Stop requested for task {record.id} ({record.description}), but it has not finished shutting down "
            "yet; check it with TaskOutput.",
            is_error=True,
        )
    return _text(f"Successfully stopped task: {record.id} ({record.description})")
