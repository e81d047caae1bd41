"""The App view in a real browser: headless Chromium loads the `ui://` page (read over MCP) into a sandboxed iframe
of a small host page that speaks the MCP Apps postMessage protocol, forwards the view's `tools/call` requests to the
server through a real MCP client, and keeps what the view tells the conversation (`ui/update-model-context`,
`ui/message`). A task appears, updates, and is stopped from the view's button; a task waiting on a question is
answered from its card, and its end reaches the conversation once."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise

from mcp_subagents.core.messages import TextPart, ToolCall, ToolResultMessage, Usage
from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID, VIEW_URI
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel
from mcp_subagents.runtime.service import Subagents
from tests.browser_support import chromium_page, screenshot_path
from tests.security.inert_support import HOSTILE, HOSTILE_TOOL, assert_inert
from tests.support import make_settings, running_app, text_of

if TYPE_CHECKING:
    from playwright.async_api import FrameLocator, Page

pytestmark = pytest.mark.anyio

HOST_PAGE = """<!doctype html>
<html><body style="margin:0;background:#fff">
<iframe id="view" sandbox="allow-scripts" style="border:0;width:100%;height:200px"></iframe>
<script>
const frame = document.getElementById("view");
window.traffic = [];
window.told = [];
window.capabilities = {serverTools: {}, updateModelContext: {text: {}}, message: {text: {}}};
function reply(message) { frame.contentWindow.postMessage(message, "*"); }
window.toolResult = () => reply({jsonrpc: "2.0", method: "ui/notifications/tool-result", params: {content: []}});
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const m = event.data;
  window.traffic.push(m.method || "reply");
  if (m.method === "ui/initialize") {
    reply({jsonrpc: "2.0", id: m.id, result: {protocolVersion: m.params.protocolVersion,
      hostInfo: {name: "test host", version: "0"},
      hostCapabilities: window.capabilities,
      hostContext: {theme: "light"}}});
  } else if (m.method === "tools/call") {
    try { reply({jsonrpc: "2.0", id: m.id, result: await window.mcpCall(m.params.name, m.params.arguments)}); }
    catch (e) { reply({jsonrpc: "2.0", id: m.id, error: {code: -32000, message: String(e)}}); }
  } else if (m.method === "ui/update-model-context" || m.method === "ui/message") {
    window.told.push({method: m.method, params: m.params});
    reply({jsonrpc: "2.0", id: m.id, result: {}});
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
                await card.locator(".facts", has_text="claude-sonnet-4-6 (medium)").wait_for(timeout=15_000)
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


APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
WAITING_TASK = {
    "description": "build it",
    "prompt": "Build.",
    "subagent_type": "general-purpose",
    "run_in_background": True,
}
LISTS_SINCE_LOAD = "window.traffic.slice(window.traffic.lastIndexOf('ui/initialize')).filter(m => m === 'tools/call')"


def run_then_report(*commands: str) -> FunctionModel:
    """Runs `commands` one per turn, then reports what each gave ("OK"/"ERR" and the output)."""

    def respond(request: ModelRequest) -> ModelResponse:
        done = len(request.messages) // 2
        usage = Usage(input_tokens=10, output_tokens=5)
        if done < len(commands):
            call = ToolCall(id=f"c{done}", name="Bash", arguments={"command": commands[done]})
            return ModelResponse(parts=(call,), stop_reason="tool_use", usage=usage)
        results = [r for m in request.messages if isinstance(m, ToolResultMessage) for r in m.results]
        said = " || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results)
        return ModelResponse(parts=(TextPart(text=said),), stop_reason="end_turn", usage=usage)

    return FunctionModel(respond)


@asynccontextmanager
async def view_in_host(
    client: Client, *, capabilities: dict[str, Any] | None = None
) -> AsyncGenerator[tuple[Page, FrameLocator, str]]:
    """The host page with the view loaded, its `tools/call` requests answered through `client`; `capabilities`: the
    host's instead of all the view may use."""
    html = getattr((await client.read_resource(VIEW_URI)).contents[0], "text", "")

    async def mcp_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await client.call_tool(name, arguments)
        return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))

    async with chromium_page(width=760, height=600) as page:
        # Playwright types the callback as a bare Callable.
        await page.expose_function("mcpCall", mcp_call)  # pyright: ignore[reportUnknownMemberType]
        await page.set_content(HOST_PAGE)
        if capabilities is not None:
            await page.evaluate("capabilities => { window.capabilities = capabilities; }", capabilities)
        await page.evaluate("html => window.loadView(html)", html)
        yield page, page.frame_locator("#view"), html


async def launch_waiting(client: Client, app: Subagents) -> str:
    task_id = text_of(await client.call_tool("Task", WAITING_TASK)).split("task_id: ")[1].split()[0]
    record = app.tasks.get(task_id, principal="local")
    with anyio.fail_after(15):
        await app.tasks.root(record).resources.questions.wait_for_new()
    return task_id


async def one_more_list(page: Page, view: FrameLocator) -> None:
    """Have the view list the tasks once more (as a host's tool result makes it), and wait until its request
    arrives: whatever the view sent after the list before it has arrived by then."""
    await view.locator("#updated", has_text="updated").wait_for(timeout=15_000)
    before = await page.evaluate(f"{LISTS_SINCE_LOAD}.length")
    await page.evaluate("window.toolResult()")
    await page.wait_for_function(f"{LISTS_SINCE_LOAD}.length > {before}", timeout=15_000)


def end_notice(task_id: str) -> str:
    return (
        f'Subagent task {task_id} (general-purpose: build it) completed; read its result with TaskOutput {{"task_id": '
        f'"{task_id}"}}.'
    )


async def test_allow_once_on_the_card_lets_the_task_finish_and_its_end_is_told_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with running_app(settings, model=run_then_report("echo made > made.txt")) as app:
        async with Client(build_server(app), mode="auto", extensions=APPS) as client:
            task_id = await launch_waiting(client, app)
            async with view_in_host(client) as (page, view, html):
                card = view.locator(f'section[data-task-id="{task_id}"]')
                question = card.locator(".question")
                await question.wait_for(timeout=15_000)
                await card.locator(".state.waiting").wait_for(timeout=15_000)
                shown = await question.inner_text()
                buttons = await question.get_by_role("button").all_inner_texts()
                if (path := screenshot_path("app-view-question.png")) is not None:
                    await page.locator("#view").screenshot(path=str(path))
                await question.get_by_role("button", name="Allow once").click()
                await card.locator(".state.completed").wait_for(timeout=15_000)
                answered = await card.locator(".answered").inner_text()
                output = await card.locator("pre.output").inner_text()
                await page.wait_for_function("window.told.length >= 1", timeout=15_000)
                await one_more_list(page, view)  # a later list tells nothing more
                await page.evaluate("html => window.loadView(html)", html)  # nor does the view loaded again
                await page.wait_for_function("window.traffic.filter(m => m === 'ui/initialize').length === 2")
                await one_more_list(page, view)
                await one_more_list(page, view)
                told = await page.evaluate("window.told")
    headline = "Subagent 'general-purpose' asks to run Bash: echo made > made.txt"
    assert shown.startswith(f"{headline}\nTask {task_id}.\n\nCommand:\necho made > made.txt\n")
    assert buttons == ["Allow once", "Always allow", "Deny"]
    assert f"Always allow adds Bash(echo made) to {settings.cwd}/.claude/settings.local.json." in shown
    assert answered == f"Allowed once: {headline}. The task goes on."
    assert output.startswith("OK: ") and (settings.cwd / "made.txt").read_text(encoding="utf-8") == "made\n"
    assert told == [
        {"method": "ui/update-model-context", "params": {"content": [{"type": "text", "text": end_notice(task_id)}]}}
    ]


async def test_always_allow_with_wake_me_writes_the_rule_and_sends_a_message(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with running_app(settings, model=run_then_report("make first", "make first")) as app:
        async with Client(build_server(app), mode="auto", extensions=APPS) as client:
            task_id = await launch_waiting(client, app)
            async with view_in_host(client) as (page, view, _html):
                card = view.locator(f'section[data-task-id="{task_id}"]')
                await card.locator(".question").wait_for(timeout=15_000)
                await card.get_by_role("checkbox", name="Wake me when done").check()
                await card.get_by_role("button", name="Always allow").click()
                await card.locator(".state.completed").wait_for(timeout=15_000)
                answered = await card.locator(".answered").inner_text()
                output = await card.locator("pre.output").inner_text()
                await page.wait_for_function("window.told.length >= 1", timeout=15_000)
                await one_more_list(page, view)
                told = await page.evaluate("window.told")
    local = json.loads((settings.cwd / ".claude" / "settings.local.json").read_text(encoding="utf-8"))
    assert local == {"permissions": {"allow": ["Bash(make first)"]}}
    assert answered.startswith("Always allowed: Subagent 'general-purpose' asks to run Bash: make first. ")
    assert answered.endswith(
        f"Bash(make first) is allowed from now on (added to {settings.cwd}/.claude/settings.local.json)."
    )
    assert output.count("No rule to make target 'first'") == 2 and "Permission denied" not in output
    message = {"role": "user", "content": [{"type": "text", "text": end_notice(task_id)}]}
    assert told == [{"method": "ui/message", "params": message}]


async def test_deny_on_the_card_refuses_the_call_and_a_host_without_context_is_told_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, ask_timeout=60)
    assert settings.cwd is not None
    async with running_app(settings, model=run_then_report("echo made > made.txt")) as app:
        async with Client(build_server(app), mode="auto", extensions=APPS) as client:
            task_id = await launch_waiting(client, app)
            async with view_in_host(client, capabilities={"serverTools": {}}) as (page, view, _html):
                card = view.locator(f'section[data-task-id="{task_id}"]')
                await card.locator(".question").wait_for(timeout=15_000)
                toggles = await card.get_by_role("checkbox").count()
                await card.get_by_role("button", name="Deny").click()
                await card.locator(".state.completed").wait_for(timeout=15_000)
                output = await card.locator("pre.output").inner_text()
                questions_left = await card.locator(".question").count()
                await one_more_list(page, view)
                told = await page.evaluate("window.told")
    assert output.startswith("ERR: Error: Permission denied: The person denied this call (the App view).")
    assert questions_left == 0 and not (settings.cwd / "made.txt").exists()
    assert toggles == 0 and told == []  # the host offers neither ui/message nor ui/update-model-context
