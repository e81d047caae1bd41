"""The MCP App view (the `io.modelcontextprotocol/ui` extension): a `ui://` HTML page that hosts with MCP Apps show
beside `Task` and `TaskOutput` results, listing the caller's tasks live, with a stop button and the buttons that
answer a task's permission question.

The page polls `TaskList` and answers through `TaskAnswer`, tools only the app sees (`_meta.ui.visibility:
["app"]`), listed to hosts that negotiated the extension; it stops a task through `TaskStop`. `TaskList` answers
text too (`task_list`), so a host without the extension that calls it gets the same facts (but no answer token).
"""

from __future__ import annotations

from functools import cache
from typing import Any, cast

import mcp_types as types
from mcp.server import ServerRequestContext

from ..core.version import __version__
from ..render.web import web_file

# The values of `mcp.server.apps`, whose import pulls in the SDK's MCPServer tier (tens of ms at start-up).
EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
VIEW_URI = "ui://mcp-subagents/tasks.html"
TASK_LIST = "TaskList"
TASK_ANSWER = "TaskAnswer"

TASK_LIST_DESCRIPTION = (
    "Lists the tasks you started on this server (newest first) with their status, turn, running tool, tokens, cost, "
    "elapsed time and latest output lines. Used by the live task view."
)
TASK_LIST_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
TASK_ANSWER_DESCRIPTION = (
    "Answers a subagent's permission question for the person, from the buttons of the live task view. It takes the "
    "answer only with the question's token, which the view gets from TaskList."
)

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "TASK_ANSWER",
    "TASK_LIST",
    "VIEW_URI",
    "client_supports_apps",
    "view_html",
]


def client_supports_apps(ctx: ServerRequestContext[Any]) -> bool:
    """The host negotiated MCP Apps and renders `text/html;profile=mcp-app` (as `mcp.server.apps` decides it)."""
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    settings: Any = extensions.get(EXTENSION_ID) if extensions else None
    mime_types: Any = cast("dict[str, Any]", settings).get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list | tuple) and APP_MIME_TYPE in mime_types


@cache
def view_html() -> str:
    return web_file("app_view.html").replace("{{version}}", __version__)


def ui_meta(*, app_only: bool = False) -> dict[str, Any]:
    """A tool's `_meta.ui`: the view it is shown with (and, for TaskList and TaskAnswer, that only the app may call
    it)."""
    ui: dict[str, Any] = {"resourceUri": VIEW_URI}
    if app_only:
        ui["visibility"] = ["app"]
    return {"ui": ui}


def view_resource() -> types.Resource:
    return types.Resource(
        uri=VIEW_URI,
        name="tasks",
        title="Subagent tasks",
        description=(
            "Your subagent tasks, live: status, turn, tool, tokens, cost, latest output; stop buttons, and the "
            "buttons that answer a task's permission question."
        ),
        mime_type=APP_MIME_TYPE,
    )


def read_view(uri: str) -> types.ReadResourceResult | None:
    if uri != VIEW_URI:
        return None
    contents = types.TextResourceContents(uri=VIEW_URI, mime_type=APP_MIME_TYPE, text=view_html())
    return types.ReadResourceResult(contents=[contents])
