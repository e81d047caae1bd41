"""MCP wiring: the three tools (and the App view's two), argument validation, the `requestState` seal, logging
level, and list changes."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from ..core.errors import SubagentsError
from ..core.version import __version__
from ..core.well_formed import well_formed_values
from ..definitions import Catalog
from ..render.descriptions import TASK_OUTPUT_DESCRIPTION, TASK_STOP_DESCRIPTION, AgentLine, task_description
from ..runtime.service import Subagents
from .answer_tokens import AnswerTokens
from .app_view import (
    EXTENSION_ID,
    TASK_ANSWER,
    TASK_ANSWER_DESCRIPTION,
    TASK_LIST,
    TASK_LIST_DESCRIPTION,
    TASK_LIST_SCHEMA,
    client_supports_apps,
    read_view,
    ui_meta,
    view_resource,
)
from .caller import principal_of
from .host_connection import set_log_level
from .notifications import ToolListNotifier
from .schemas import (
    TaskStopInput,
    parse_arguments,
    task_answer_schema,
    task_output_schema,
    task_schema,
    task_stop_schema,
)

# What answers the tool calls (and the task engine behind it) loads at the first call or in the warm-up after the
# first tools/list, not at start-up.
if TYPE_CHECKING:
    from .foreground import TaskCallResult, TaskCalls

logger = logging.getLogger(__name__)

SERVER_NAME = "mcp-subagents"
ALWAYS_LOAD = "anthropic/alwaysLoad"
"""Claude Code's tool `_meta` key: never defer this tool behind tool search."""
MAX_RESULT_SIZE = "anthropic/maxResultSizeChars"
"""Claude Code's tool `_meta` key: keep results up to this many characters inline rather than in a file."""
CLAUDE_CODE_RESULT_CAP = 500_000
RESULT_ENVELOPE_ALLOWANCE = 40_000
"""Room above --max-result-chars for what surrounds the agent's text: notes, denials, status, usage."""


class SubagentsServer(Server[Any]):
    """Advertises `tools.listChanged` on every transport, so hosts re-list tools when agent files change."""

    notifier: ToolListNotifier
    app: Subagents

    @cached_property
    def task_calls(self) -> TaskCalls:
        """What answers Task calls, for every session of this server."""
        from .foreground import TaskCalls

        return TaskCalls(self.app)

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


@dataclass(slots=True)
class _Listing:
    """The tool lists rendered for the catalog last listed: one for hosts with MCP Apps (True), one without."""

    catalog: Catalog | None = None
    tools: dict[bool, list[types.Tool]] = field(default_factory=lambda: {})

    def tools_for(self, app: Subagents, catalog: Catalog, *, apps: bool) -> list[types.Tool]:
        if catalog is not self.catalog:
            self.catalog, self.tools = catalog, {}
        tools = self.tools.get(apps)
        if tools is None:
            tools = _tools(app, catalog, apps=apps)
            if apps:
                tools += _view_tools()
            self.tools[apps] = tools
        return list(tools)


def build_server(app: Subagents) -> SubagentsServer:
    """The MCP server offering Task, TaskOutput and TaskStop over `app`; serve it with any MCP transport.

    `app` must be running (`async with app.running()`) while the server serves.
    """
    notifier = ToolListNotifier()
    handlers = _Handlers(app)
    server = SubagentsServer(
        SERVER_NAME,
        version=__version__,
        instructions="Delegate work to subagents with Task; poll background tasks with TaskOutput; stop with TaskStop.",
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_read_resource=handlers.read_resource,
        on_subscriptions_listen=ListenHandler(notifier.bus),
    )
    handlers.server = server
    # Registered by method name: the constructor's argument for it is deprecated in the 2026 era, but 2025-era
    # hosts still send it. The handler makes the server declare the `logging` capability.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, handlers.set_logging_level)
    server.extensions[EXTENSION_ID] = {}  # MCP Apps: the live task view (app_view.py)
    server.notifier = notifier
    server.app = app
    server.middleware.append(notifier.track_sessions)
    server.middleware.append(_well_formed_results)  # a lone surrogate in a result must not break the wire
    # The requestState of a 2026-era round trip names a task and its open questions: sealed (encrypted, bound to
    # the call's arguments and the caller, expiring), so a host can only hand back what this process gave it.
    security = RequestStateSecurity.ephemeral(ttl=app.settings.ask_timeout + 60)
    server.middleware.append(RequestStateBoundary(security, default_audience=SERVER_NAME))
    return server


class _Handlers:
    """What the server answers each request with."""

    def __init__(self, app: Subagents) -> None:
        self.app = app
        self.listed = _Listing()
        self.server: SubagentsServer | None = None
        self.answer_tokens = AnswerTokens()

    async def list_tools(
        self, ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # The catalog as last scanned (the watcher rescans it off the loop); its tools are rendered once per catalog
        # and kind of host. With the watcher off, each list scans anew, in a worker thread.
        app = self.app
        catalog = app.catalog() if app.settings.watch_interval > 0 else await app.refresh_catalog()
        tools = self.listed.tools_for(app, catalog, apps=client_supports_apps(ctx))
        app.warm_up()
        return types.ListToolsResult(tools=tools)

    async def list_resources(
        self, _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[view_resource()])

    async def read_resource(
        self, _ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        result = read_view(params.uri)
        if result is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {params.uri}")
        return result

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> TaskCallResult:
        try:
            return await self._call(ctx, params)
        except SubagentsError as exc:
            return _text(exc.message, is_error=True)
        except Exception as exc:
            logger.exception("tool %s failed", params.name)
            return _text(f"Internal error in {params.name}: {type(exc).__name__}: {exc}", is_error=True)

    async def _call(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> TaskCallResult:
        app, arguments = self.app, dict(params.arguments or {})
        match params.name:
            case "Task":
                assert self.server is not None
                return await self.server.task_calls(ctx, params)
            case "TaskOutput":
                from .task_output import task_output_call

                return await task_output_call(ctx, app, params)
            case "TaskStop":
                return await _call_task_stop(app, arguments, principal_of(ctx.request))
            case "TaskList":
                from .task_list import task_list_call

                tokens = self.answer_tokens if client_supports_apps(ctx) else None  # only the view gets tokens
                return await task_list_call(app, principal_of(ctx.request), tokens)
            case "TaskAnswer":
                from .task_answer import task_answer_call

                return await task_answer_call(app, self.answer_tokens, arguments, principal_of(ctx.request))
            case _:
                return _text(
                    f"Unknown tool '{params.name}'. Available tools: Task, TaskOutput, TaskStop, TaskList, TaskAnswer",
                    is_error=True,
                )

    async def set_logging_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        set_log_level(ctx, params.level)
        return types.EmptyResult()


def _tools(app: Subagents, catalog: Catalog, *, apps: bool = False) -> list[types.Tool]:
    """The three tools; for a host with MCP Apps, Task and TaskOutput name the live task view."""
    view = ui_meta() if apps else {}
    lines = [AgentLine(name, description, tools) for name, description, tools in catalog.listing()]
    result_size = min(CLAUDE_CODE_RESULT_CAP, app.settings.max_result_chars + RESULT_ENVELOPE_ALLOWANCE)
    return [
        types.Tool(
            name="Task",
            description=task_description(lines),
            input_schema=task_schema(list(catalog.names())),
            annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
            _meta={ALWAYS_LOAD: True, MAX_RESULT_SIZE: result_size, **view},
        ),
        types.Tool(
            name="TaskOutput",
            description=TASK_OUTPUT_DESCRIPTION,
            input_schema=task_output_schema(),
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            _meta={MAX_RESULT_SIZE: result_size, **view},
        ),
        types.Tool(
            name="TaskStop",
            description=TASK_STOP_DESCRIPTION,
            input_schema=task_stop_schema(),
            annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False),
        ),
    ]


def _view_tools() -> list[types.Tool]:
    """The tools only the App view calls: the task list it polls and the answers its buttons give."""
    return [
        types.Tool(
            name=TASK_LIST,
            description=TASK_LIST_DESCRIPTION,
            input_schema=TASK_LIST_SCHEMA,
            annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
            _meta=ui_meta(app_only=True),
        ),
        types.Tool(
            name=TASK_ANSWER,
            description=TASK_ANSWER_DESCRIPTION,
            input_schema=task_answer_schema(),
            annotations=types.ToolAnnotations(read_only_hint=False, open_world_hint=False),
            _meta=ui_meta(app_only=True),
        ),
    ]


async def _call_task_stop(app: Subagents, arguments: dict[str, Any], principal: str) -> types.CallToolResult:
    from ..render.status import already_finished_text, stop_pending_text, stopped_text

    request = parse_arguments("TaskStop", TaskStopInput, arguments)
    record = await app.tasks.fetch(request.target, principal=principal)
    if record.finished:
        return _text(already_finished_text(record))
    await app.tasks.stop(record.id)
    if not record.finished:
        return _text(stop_pending_text(record), is_error=True)
    return _text(stopped_text(record))


async def _well_formed_results(ctx: ServerRequestContext[Any], call_next: CallNext) -> HandlerResult:
    """Middleware: the result of every request with its lone surrogates replaced, which no transport could encode."""
    return well_formed_values(await call_next(ctx))
