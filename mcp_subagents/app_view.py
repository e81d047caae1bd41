"""The MCP App view (the `io.modelcontextprotocol/ui` extension): a `ui://` HTML page that hosts with MCP Apps show
beside `Task` and `TaskOutput` results, listing the caller's tasks live, with a stop button.

The page polls `TaskList`, a tool only the app sees (`_meta.ui.visibility: ["app"]`), listed to hosts that
negotiated the extension; it stops a task through `TaskStop`. `TaskList` answers text too, so a host without the
extension that calls it gets the same facts.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, cast

import mcp_types as types
from mcp.server import ServerRequestContext

from . import __version__
from .pricing import format_usd
from .render import failure_message
from .task_record import TaskRecord

# The values of `mcp.server.apps`, whose import pulls in the SDK's MCPServer tier (tens of ms at start-up).
EXTENSION_ID = "io.modelcontextprotocol/ui"
APP_MIME_TYPE = "text/html;profile=mcp-app"
VIEW_URI = "ui://mcp-subagents/tasks.html"
TASK_LIST = "TaskList"
OUTPUT_LINES = 6
"""How many of the latest output lines each task shows."""

TASK_LIST_DESCRIPTION = (
    "Lists the tasks you started on this server (newest first) with their status, turn, running tool, tokens, cost, "
    "elapsed time and latest output lines. Used by the live task view."
)
TASK_LIST_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

__all__ = [
    "APP_MIME_TYPE",
    "EXTENSION_ID",
    "TASK_LIST",
    "VIEW_URI",
    "client_supports_apps",
    "task_list_result",
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
    html = resources.files("mcp_subagents.web").joinpath("app_view.html").read_text(encoding="utf-8")
    return html.replace("{{version}}", __version__)


def ui_meta(*, app_only: bool = False) -> dict[str, Any]:
    """A tool's `_meta.ui`: the view it is shown with (and, for TaskList, that only the app may call it)."""
    ui: dict[str, Any] = {"resourceUri": VIEW_URI}
    if app_only:
        ui["visibility"] = ["app"]
    return {"ui": ui}


def view_resource() -> types.Resource:
    return types.Resource(
        uri=VIEW_URI,
        name="tasks",
        title="Subagent tasks",
        description="Your subagent tasks, live: status, turn, tool, tokens, cost, latest output; stop buttons.",
        mime_type=APP_MIME_TYPE,
    )


def read_view(uri: str) -> types.ReadResourceResult | None:
    if uri != VIEW_URI:
        return None
    contents = types.TextResourceContents(uri=VIEW_URI, mime_type=APP_MIME_TYPE, text=view_html())
    return types.ReadResourceResult(contents=[contents])


def task_entry(record: TaskRecord, *, recent_output: str, queue: tuple[int, int] | None) -> dict[str, Any]:
    progress = record.progress
    usage = progress.usage
    outcome = record.outcome
    if outcome is not None and outcome.counts is not None:
        usage = outcome.counts.usage
    tokens = usage.input_tokens + usage.output_tokens + usage.cache_creation_tokens + usage.cache_read_tokens
    elapsed = outcome.counts.duration_s if outcome is not None and outcome.counts is not None else progress.elapsed()
    if outcome is None:
        lines = [line for line in recent_output.splitlines() if line.strip() and not line.startswith("[task ")]
    elif outcome.state == "completed":
        lines = [line for line in outcome.text.splitlines() if line.strip()]
    else:
        lines = [failure_message(outcome) if outcome.state == "failed" else f"Task {outcome.state}."]
    return {
        "task_id": record.id,
        "agent": record.agent,
        "description": record.description,
        "state": record.state,
        "turn": progress.turn if outcome is None else (outcome.counts.turns if outcome.counts else progress.turn),
        "max_turns": progress.max_turns,
        "current_tools": list(progress.current_tools) if outcome is None else [],
        "tokens": tokens,
        "cost_usd": record.cost_usd(),
        "elapsed_s": round(elapsed, 1),
        "queue_position": queue[0] if queue else None,
        "output": lines[-OUTPUT_LINES:],
    }


def task_list_result(entries: list[dict[str, Any]]) -> types.CallToolResult:
    """The tasks as structured content for the view, and as text for everyone else."""
    text = "\n".join(_entry_text(entry) for entry in entries) if entries else "No tasks yet."
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content={"tasks": entries}
    )


def _entry_text(entry: dict[str, Any]) -> str:
    parts = [entry["state"]]
    if entry["state"] == "queued" and entry["queue_position"]:
        parts = [f"queued (position {entry['queue_position']})"]
    elif entry["turn"]:
        parts.append(f"turn {entry['turn']}" + (f"/{entry['max_turns']}" if entry["max_turns"] else ""))
    elif entry["state"] == "running":
        parts.append("starting")
    if entry["current_tools"]:
        parts.append(", ".join(entry["current_tools"]))
    parts.append(f"{entry['tokens']:,} tokens")
    if entry["cost_usd"] is not None:
        parts.append(format_usd(entry["cost_usd"]))
    parts.append(f"{entry['elapsed_s']:.0f} s")
    lines = [f"{entry['task_id']} {entry['agent']}: {entry['description']} [{' · '.join(parts)}]"]
    lines += [f"    {line}" for line in entry["output"][-3:]]
    return "\n".join(lines)
