"""The first Task does not wait for the provider SDK: the server builds the provider in the background right after
the host first lists the tools (both protocol eras)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.server import build_server

from .fakes.fake_llm import FakeLLM, text, turn
from .support import MODES, make_settings, running_app, text_of

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", MODES)
async def test_listing_the_tools_builds_the_provider_and_the_first_task_uses_it(
    tmp_path: Path, fake: FakeLLM, mode: str
) -> None:
    environ = {"ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_BASE_URL": fake.url}
    async with running_app(make_settings(tmp_path), environ=environ) as app:
        async with Client(build_server(app), mode=mode) as client:  # pyright: ignore[reportArgumentType]
            assert not app.model_ready.is_set()  # connecting alone imports nothing
            await client.list_tools()
            with anyio.fail_after(30):
                await app.model_ready.wait()
            built = await app.model()
            fake.push(turn(text("ready")))
            result = await client.call_tool(
                "Task", {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}
            )
            assert "ready" in text_of(result)
            assert await app.model() is built  # the Task ran on the provider the warm-up built


async def test_without_a_provider_listing_the_tools_starts_nothing(tmp_path: Path) -> None:
    async with running_app(make_settings(tmp_path), environ={}) as app:
        async with Client(build_server(app), mode="auto") as client:
            await client.list_tools()
            await client.list_tools()
        assert not app.model_ready.is_set()
