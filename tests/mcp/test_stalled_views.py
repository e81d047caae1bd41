"""A looping task as the host sees it: a progress notification when it starts repeating a call, `<stalled>` in
`TaskOutput`, the `stall` of its `TaskList` entry (the App view's card), and `--stall-timeout` ending it with a
result that says why."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise

from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from tests.support import MODES, connected, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "scan", "prompt": "look", "subagent_type": "general-purpose"}


class Looper:
    """Calls Glob with the same pattern three times, then waits (for `release`) before its fourth answer."""

    def __init__(self) -> None:
        self.stuck, self.release = anyio.Event(), anyio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:
        if len(request.messages) < 6:  # the prompt, then a call and its result per turn
            return tool_call("Glob", {"pattern": "*.py"})
        self.stuck.set()
        await self.release.wait()
        return text("gave up")


@pytest.mark.parametrize("mode", MODES)
async def test_a_looping_task_is_flagged_in_task_output_and_task_list(tmp_path: Path, mode: str) -> None:
    model = Looper()
    apps = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
    async with running_app(make_settings(tmp_path), model=FunctionModel(model)) as app:
        async with Client(build_server(app), mode=mode, extensions=apps) as client:
            launched = await client.call_tool("Task", {**TASK, "run_in_background": True})
            task_id = text_of(launched).split("task_id: ")[1].split()[0]
            with anyio.fail_after(10):
                await model.stuck.wait()
            status = text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "block": False}))
            listing = await client.call_tool("TaskList", {})
            model.release.set()
            await client.call_tool("TaskOutput", {"task_id": task_id})
    assert '<stalled kind="looping">it called Glob with the same arguments 3 times in a row' in status
    assert listing.structured_content is not None
    (entry,) = listing.structured_content["tasks"]
    assert entry["stall"]["kind"] == "repeating" and entry["stall"]["tool"] == "Glob" and entry["stall"]["repeats"] == 3
    assert "    looping: it called Glob with the same arguments 3 times in a row" in text_of(listing)


async def test_the_host_hears_of_the_loop_and_stall_timeout_ends_it(tmp_path: Path) -> None:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    async with connected(make_settings(tmp_path, stall_timeout=0.3), model=FunctionModel(Looper())) as client:
        result = await client.call_tool("Task", TASK, progress_callback=on_progress)
        with anyio.fail_after(5):
            while not any(message.startswith("looping:") for message in seen):
                await anyio.lowlevel.checkpoint()
    assert result.is_error
    assert "stalled (--stall-timeout): it called Glob with the same arguments 3 times in a row" in text_of(result)
