"""The MCP App view over MCP, in both protocol eras: the extension capability, the `ui://` resource, the tools'
`_meta.ui`, the app-only `TaskList` (listed only to hosts with the extension, answering text as well), per-principal
lists, and TaskStop from the view."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError

from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID, VIEW_URI
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from tests.security.inert_support import HOSTILE, assert_inert
from tests.support import MODES, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


@pytest.mark.parametrize("mode", MODES)
async def test_the_view_resource_and_the_tools_ui_meta(tmp_path: Path, mode: str) -> None:
    async with running_app(make_settings(tmp_path)) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert list(tools) == ["Task", "TaskOutput", "TaskStop", "TaskList", "TaskAnswer"]
            assert tools["Task"].meta is not None and tools["Task"].meta["ui"] == {"resourceUri": VIEW_URI}
            assert tools["TaskOutput"].meta is not None and tools["TaskOutput"].meta["ui"]["resourceUri"] == VIEW_URI
            task_list = tools["TaskList"].meta
            assert task_list is not None and task_list["ui"] == {"resourceUri": VIEW_URI, "visibility": ["app"]}
            task_answer = tools["TaskAnswer"].meta
            assert task_answer is not None and task_answer["ui"] == {"resourceUri": VIEW_URI, "visibility": ["app"]}
            assert tools["TaskAnswer"].input_schema["required"] == ["task_id", "question_id", "choice", "token"]

            (resource,) = (await client.list_resources()).resources
            assert (resource.uri, resource.mime_type) == (VIEW_URI, APP_MIME_TYPE)
            (contents,) = (await client.read_resource(VIEW_URI)).contents
            assert contents.mime_type == "text/html;profile=mcp-app"
            html = getattr(contents, "text", "")
            assert html.startswith("<!doctype html>") and '"ui/initialize"' in html and '"TaskList"' in html
            assert "innerHTML" not in html.replace("never innerHTML", "")  # model text is only ever textContent
            with pytest.raises(MCPError, match="Unknown resource"):
                await client.read_resource("ui://mcp-subagents/elsewhere.html")


@pytest.mark.parametrize("mode", MODES)
async def test_hosts_without_the_extension_see_three_tools_and_text(tmp_path: Path, mode: str) -> None:
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text("done"))) as app:
        async with Client(build_server(app), mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert [tool.name for tool in tools] == ["Task", "TaskOutput", "TaskStop"]
            assert all("ui" not in (tool.meta or {}) for tool in tools)
            await client.call_tool("Task", {"description": "count", "prompt": "p", "subagent_type": "general-purpose"})
            listing = await client.call_tool("TaskList", {})
    assert not listing.is_error
    # A finished task is read back from its transcript (memory keeps none of it): the turns it took, not the limit.
    assert "general-purpose: count [completed · turn 1 · 11 tokens · " in text_of(listing)


@pytest.mark.parametrize("mode", MODES)
async def test_task_list_shows_this_principals_tasks_live_and_the_view_can_stop_them(tmp_path: Path, mode: str) -> None:
    asked, release = anyio.Event(), anyio.Event()

    async def respond(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("Glob", {"pattern": "*"}, say="Looking around.")
        if "mine" in str(request.messages[0]):
            asked.set()
        await release.wait()  # until stopped
        return text("never")

    async with running_app(make_settings(tmp_path), model=FunctionModel(respond)) as app:
        someone_else = app.launch(
            TaskRequest(description="not yours", prompt="bob's", subagent_type="Explore"), principal="token:bob"
        )
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            arguments = {"description": "scan", "prompt": "mine", "subagent_type": "general-purpose"}
            launched = await client.call_tool("Task", {**arguments, "run_in_background": True})
            task_id = text_of(launched).split("task_id: ")[1].split()[0]
            with anyio.fail_after(10):
                await asked.wait()
            listing = await client.call_tool("TaskList", {})
            assert listing.structured_content is not None
            (entry,) = listing.structured_content["tasks"]
            assert entry["task_id"] == task_id and entry["task_id"] != someone_else.id
            assert (entry["agent"], entry["state"], entry["turn"], entry["max_turns"]) == (
                "general-purpose",
                "running",
                2,
                50,
            )
            assert entry["tokens"] > 0 and entry["elapsed_s"] >= 0
            assert entry["model"] == "sonnet" and entry["model_note"] == ""  # the scripted model keeps aliases
            assert f"· {entry['model']}" in text_of(listing)  # which model ran, on the card's line too
            assert any("[turn 1] tool Glob" in line for line in entry["output"])
            assert f"{task_id} general-purpose: scan [running · turn 2/50 · " in text_of(listing)

            stopped = await client.call_tool("TaskStop", {"task_id": task_id})
            assert "Successfully stopped" in text_of(stopped)
            (entry,) = (await client.call_tool("TaskList", {})).structured_content["tasks"]
            assert entry["state"] == "stopped" and entry["current_tools"] == []
        app.tasks.request_stop(someone_else.id)


def test_our_constants_are_the_sdks() -> None:
    from mcp.server import apps

    assert (apps.EXTENSION_ID, apps.APP_MIME_TYPE) == (EXTENSION_ID, APP_MIME_TYPE)


@pytest.mark.parametrize("mode", MODES)
async def test_task_list_sends_a_hostile_tasks_text_inert(tmp_path: Path, mode: str) -> None:
    # Before, TaskList carried the model's escape sequences, bidi overrides and zero-width characters as they were,
    # for the view (and any host that shows its text) to draw.
    async with running_app(make_settings(tmp_path), model=FunctionModel(lambda _r: text(HOSTILE))) as app:
        async with Client(build_server(app), mode=mode, extensions=APPS) as client:
            task = {"description": f"look {HOSTILE}", "prompt": "p", "subagent_type": "general-purpose"}
            assert "\x1b]52;c;" in text_of(await client.call_tool("Task", task))  # what the host's model reads
            listing = await client.call_tool("TaskList", {})
    assert listing.structured_content is not None
    (entry,) = listing.structured_content["tasks"]
    assert entry["description"].startswith("look Done.\\x1b]52;c;")
    assert_inert(entry["description"])
    assert_inert("\n".join(entry["output"]))
    assert_inert(text_of(listing))
