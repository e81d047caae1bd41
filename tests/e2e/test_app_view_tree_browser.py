"""The cost tree and a looping task in the App view, in headless Chromium (the host page of
`test_app_view_browser`): the parent's card lists its nested task with model, state and figures, and the nested
task's own card says it is looping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise

from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID, VIEW_URI
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import FunctionModel
from tests.browser_support import chromium_page
from tests.e2e.test_app_view_browser import HOST_PAGE
from tests.e2e.test_dashboard_tree_browser import LoopBelow
from tests.support import make_settings, running_app, text_of

pytestmark = pytest.mark.anyio


async def test_the_view_shows_the_tree_and_the_loop(tmp_path: Path) -> None:
    model = LoopBelow()
    apps = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
    async with running_app(make_settings(tmp_path, model="claude-sonnet-4-6"), model=FunctionModel(model)) as app:
        async with Client(build_server(app), mode="auto", extensions=apps) as client:
            html = getattr((await client.read_resource(VIEW_URI)).contents[0], "text", "")
            arguments = {"description": "lead the work", "prompt": "lead", "subagent_type": "general-purpose"}
            launched = await client.call_tool("Task", {**arguments, "run_in_background": True})
            lead_id = text_of(launched).split("task_id: ")[1].split()[0]
            with anyio.fail_after(10):
                await model.stuck.wait()
            [child_id] = app.tasks.get(lead_id, principal="local").children

            async def mcp_call(name: str, call_arguments: dict[str, Any]) -> dict[str, Any]:
                result = await client.call_tool(name, call_arguments)
                return json.loads(result.model_dump_json(by_alias=True, exclude_none=True))

            async with chromium_page(width=760, height=520) as page:
                await page.expose_function("mcpCall", mcp_call)  # pyright: ignore[reportUnknownMemberType]
                await page.set_content(HOST_PAGE)
                await page.evaluate("html => window.loadView(html)", html)
                view = page.frame_locator("#view")
                node = view.locator(f'section[data-task-id="{lead_id}"] ul.tree li')
                await node.wait_for(timeout=15_000)
                shown = await node.inner_text()
                assert shown.startswith("Explore: look around running") and "claude-sonnet-4-6" in shown
                stalled = view.locator(f'section[data-task-id="{child_id}"] .stalled')
                await stalled.wait_for(timeout=15_000)
                assert (await stalled.inner_text()).startswith("looping: it called Glob with the same arguments")
            model.release.set()
            await client.call_tool("TaskOutput", {"task_id": lead_id})
