"""The App view in a real browser: headless Chromium loads the `ui://` page (read over MCP) into a sandboxed iframe
of a small host page that speaks the MCP Apps postMessage protocol and forwards the view's `tools/call` requests
to the server through a real MCP client. A task appears, updates, and is stopped from the view's button."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise

from mcp_subagents.core.messages import TextPart, ToolCall, Usage
from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID, VIEW_URI
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel
from tests.browser_support import chromium_page, screenshot_path
from tests.security.inert_support import HOSTILE, HOSTILE_TOOL, assert_inert
from tests.support import make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

HOST_PAGE = """<!doctype html>
<html><body style="margin:0;background:#fff">
<iframe id="view" sandbox="allow-scripts" style="border:0;width:100%;height:200px"></iframe>
<script>
const frame = document.getElementById("view");
window.traffic = [];
function reply(message) { frame.contentWindow.postMessage(message, "*"); }
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  window.traffic.push(m.method || "reply");
  if (m.method === "ui/initialize") {
    reply({jsonrpc: "2.0", id: m.id, result: {protocolVersion: m.params.protocolVersion,
      hostInfo: {name: "test host", version: "0"}, hostCapabilities: {serverTools: {}},
      hostContext: {theme: "light"}}});
  } else if (m.method === "tools/call") {
    try { reply({jsonrpc: "2.0", id: m.id, result: await window.mcpCall(m.params.name, m.params.arguments)}); }
    catch (e) { reply({jsonrpc: "2.0", id: m.id, error: {code: -32000, message: String(e)}}); }
  } else if (m.method === "ui/notifications/size-changed") {
    frame.style.height = Math.max(120, m.params.height) + "px";
  }
});
window.loadView = (html) => { frame.srcdoc = html; };
</script></body></html>"""


async def test_a_task_appears_updates_and_is_stopped_from_the_view(tmp_path: Path) -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> ModelResponse:
        prompt = str(request.messages[0])
        usage = Usage(input_tokens=2400, output_tokens=350, cache_creation_tokens=5200, cache_read_tokens=9100)
        if "quick" in prompt:
            answer = "The parser lives in src/parse.py; load_config() calls it once at start-up."
            return ModelResponse(parts=(TextPart(text=answer),), stop_reason="end_turn", usage=usage)
        if len(request.messages) == 1:
            parts = (
                TextPart(text="Searching for open TODOs."),
                ToolCall(id="g1", name="Grep", arguments={"pattern": "TODO"}),
            )
            return ModelResponse(parts=parts, stop_reason="tool_use", usage=usage)
        asked.set()
        await release.wait()  # until stopped
        raise AssertionError("stopped tasks get no answer")

    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    apps = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
    async with running_app(settings, model=FunctionModel(respond)) as app:
        async with Client(build_server(app), mode="auto", extensions=apps) as client:
            html = getattr((await client.read_resource(VIEW_URI)).contents[0], "text", "")
            done = await client.call_tool(
                "Task", {"description": "where is the parser", "prompt": "quick", "subagent_type": "Explore"}
            )
            assert "src/parse.py" in text_of(done)
            launched = await client.call_tool(
                "Task",
                {
                    "description": "find open TODOs",
                    "prompt": "slow",
                    "subagent_type": "general-purpose",
                    "run_in_background": True,
                },
            )
            task_id = text_of(launched).split("task_id: ")[1].split()[0]
            called: list[str] = []

            async def mcp_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                called.append(name)
                result = await client.call_tool(name, arguments)
                return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))

            async with chromium_page(width=760, height=420) as page:
                # Playwright types the callback as a bare Callable.
                await page.expose_function("mcpCall", mcp_call)  # pyright: ignore[reportUnknownMemberType]
                await page.set_content(HOST_PAGE)
                await page.evaluate("html => window.loadView(html)", html)
                view = page.frame_locator("#view")
                card = view.locator(f'section[data-task-id="{task_id}"]')
                with anyio.fail_after(20):
                    await asked.wait()
                await card.locator(".state.running").wait_for(timeout=15_000)
                await card.locator(".facts", has_text="turn 2/50").wait_for(timeout=15_000)
                assert "Grep" in await card.locator("pre.output").inner_text()
                assert await card.locator(".desc").inner_text() == "find open TODOs"
                finished = view.locator("section", has_text="where is the parser")
                assert await finished.locator(".state").inner_text() == "completed"
                assert "load_config()" in await finished.locator("pre.output").inner_text()
                if (path := screenshot_path("app-view.png")) is not None:
                    await page.locator("#view").screenshot(path=str(path))

                await card.get_by_role("button", name="Stop").click()
                await card.locator(".state.stopped").wait_for(timeout=15_000)
                assert await card.get_by_role("button").count() == 0
                traffic = await page.evaluate("window.traffic")
    assert "TaskStop" in called and called.count("TaskList") >= 2
    assert traffic[:2] == ["ui/initialize", "ui/notifications/initialized"]
    record = app.tasks.get(task_id, principal="local")
    assert record.state == "stopped"


def _raw_entry() -> dict[str, Any]:
    """A task as a server that did not make text inert would send it: the view must not draw it raw either."""
    return {
        "task_id": "0123456789abcdef",
        "agent": "helper\u202e",
        "description": f"raw {HOSTILE}",
        "state": "running",
        "turn": 1,
        "max_turns": 5,
        "current_tools": [HOSTILE_TOOL],
        "tokens": 10,
        "cost_usd": None,
        "elapsed_s": 1.0,
        "queue_position": None,
        "output": [HOSTILE],
    }


async def test_a_hostile_tasks_text_is_shown_inert_in_the_view(tmp_path: Path) -> None:
    # Before, the view drew the model's bidi overrides, zero-width characters and escape sequences as they were:
    # "file\u202etxt.exe" read as "fileexe.txt", and hidden characters went unseen.
    async def respond(request: ModelRequest) -> ModelResponse:
        usage = Usage(input_tokens=10, output_tokens=5)
        return ModelResponse(parts=(TextPart(text=HOSTILE),), stop_reason="end_turn", usage=usage)

    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    apps = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
    async with running_app(settings, model=FunctionModel(respond)) as app:
        async with Client(build_server(app), mode="auto", extensions=apps) as client:
            html = getattr((await client.read_resource(VIEW_URI)).contents[0], "text", "")
            task = {"description": f"look {HOSTILE}", "prompt": "go", "subagent_type": "general-purpose"}
            assert "\x1b]52;c;" in text_of(await client.call_tool("Task", task))  # the host's model reads it as written

            async def mcp_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                result = json.loads((await client.call_tool(name, arguments)).model_dump_json(by_alias=True))
                if name == "TaskList":
                    result["structuredContent"]["tasks"].append(_raw_entry())
                return result

            async with chromium_page(width=760, height=600) as page:
                # Playwright types the callback as a bare Callable.
                await page.expose_function("mcpCall", mcp_call)  # pyright: ignore[reportUnknownMemberType]
                await page.set_content(HOST_PAGE)
                await page.evaluate("html => window.loadView(html)", html)
                view = page.frame_locator("#view")
                await view.locator("section.task").nth(1).wait_for(timeout=15_000)
                served, raw = view.locator("section.task").nth(0), view.locator("section.task").nth(1)
                served_text, raw_text = await served.inner_text(), await raw.inner_text()
    assert "look Done.\\x1b]52;c;" in served_text
    assert_inert(served_text)
    assert "helper\\u202e" in raw_text and "Read\\x1b]52;c;aGk=\\x07\\u202e" in raw_text
    assert_inert(raw_text)
