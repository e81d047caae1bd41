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


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_building_the_provider_rehearses_offline_and_leaves_a_working_client(
    fake: FakeLLM, provider: str
) -> None:
    from mcp_subagents.messages import UserMessage
    from mcp_subagents.models.base import ModelRequest
    from mcp_subagents.models.providers import ProviderConfig, create_model

    base_url = fake.url if provider == "anthropic" else fake.url + "/v1"
    model = await create_model(ProviderConfig(name=provider, api_key="sk-test-key", base_url=base_url), deadline=30)
    assert fake.requests == []  # the rehearsal answered itself: nothing went out
    fake.push(turn(text("real answer")))
    response = await model.request(
        ModelRequest(model="claude-sonnet-4-6", system="s", messages=(UserMessage(content="hi"),), tools=())
    )
    assert "real answer" in str(response.parts) and len(fake.requests) == 1
    close = getattr(model, "aclose", None)
    if close is not None:
        await close()
