"""The cost tree and a looping task in the dashboard, in headless Chromium: the nested task is listed right below
the task that launched it, flagged as looping, and the parent's page has a "Nested tasks" table that opens it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from tests.browser_support import chromium_page
from tests.dashboard_support import served_dashboard
from tests.support import make_settings, running_app

pytestmark = pytest.mark.anyio


class LoopBelow:
    """The lead launches a helper; the helper calls Glob with the same pattern three times, then hangs."""

    def __init__(self) -> None:
        self.stuck, self.release = anyio.Event(), anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        if "loop" in str(request.messages[0]):
            if len(request.messages) < 6:
                return tool_call("Glob", {"pattern": "*.md"})
            self.stuck.set()
            await self.release.wait()
            return text("gave up")
        if len(request.messages) == 1:
            return tool_call("Agent", {"description": "look around", "prompt": "loop", "subagent_type": "Explore"})
        return text("done")


async def test_the_dashboard_shows_the_tree_and_the_loop(tmp_path: Path) -> None:
    model = LoopBelow()
    settings = make_settings(tmp_path, model="claude-sonnet-4-6")
    async with running_app(settings, model=FunctionModel(model)) as app, served_dashboard(app) as dashboard:
        lead = app.launch(TaskRequest(description="lead the work", prompt="lead", subagent_type="general-purpose"))
        with anyio.fail_after(10):
            await model.stuck.wait()
        [child_id] = lead.children
        async with chromium_page(width=1200, height=760) as page:
            await page.goto(dashboard.access.url)
            child_row = page.locator(f'tr[data-task-id="{child_id}"]')
            await child_row.locator(".stalled-note").wait_for(timeout=10_000)
            note = await child_row.locator(".stalled-note").inner_text()
            assert note.startswith("looping: it called Glob with the same arguments 3 times in a row")
            order = await page.locator("tr.task").evaluate_all("rows => rows.map(row => row.dataset.taskId)")
            assert order.index(child_id) == order.index(lead.id) + 1  # right below the task that launched it
            assert (await child_row.locator("td").nth(2).inner_text()).startswith("↳ Explore")

            await page.locator(f'tr[data-task-id="{lead.id}"]').click()
            nested = page.locator(f'section.tree tr[data-task-id="{child_id}"]')
            await nested.wait_for(timeout=10_000)
            cells = await nested.locator("td").all_inner_texts()
            assert cells[0].startswith("running") and "look around" in cells[2] and cells[3] == "claude-sonnet-4-6"
            await nested.click()
            await page.wait_for_url(f"**#/task/{child_id}", timeout=10_000)
        model.release.set()
        with anyio.fail_after(10):
            await lead.done.wait()
