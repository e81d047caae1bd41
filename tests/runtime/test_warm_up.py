"""The first Task does not wait for the provider SDK: the server builds the provider in the background right after
the host first lists the tools (both protocol eras)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client

from mcp_subagents.mcp.server import build_server
from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.stdio_raw import RawStdioServer
from tests.support import (
    MODES,
    SYSTEM_PATH,
    make_settings,
    provider_environment,
    running_app,
    server_environment,
    text_of,
)

if TYPE_CHECKING:
    from mcp_subagents.models.providers import ProviderName

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", MODES)
async def test_listing_the_tools_builds_the_provider_and_the_first_task_uses_it(
    tmp_path: Path, fake: FakeLLM, mode: str
) -> None:
    environ = provider_environment(fake)
    async with running_app(make_settings(tmp_path), environ=environ) as app:
        async with Client(build_server(app), mode=mode) as client:
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
    fake: FakeLLM, provider: ProviderName
) -> None:
    from mcp_subagents.core.messages import UserMessage
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


async def test_after_the_warm_up_the_first_task_imports_none_of_our_modules(tmp_path: Path, fake: FakeLLM) -> None:
    """What the first run would otherwise import on the event loop (our modules, PyYAML for an agent listed from
    the catalog cache, pathspec for path rules, jsonschema) is imported by the warm-up, in a thread."""
    environ = server_environment(
        tmp_path,
        fake=fake,
        work=tmp_path / "work",
        path=os.environ.get("PATH", SYSTEM_PATH),
        MCP_SUBAGENTS_LOG_LEVEL="DEBUG",
        PYTHONPROFILEIMPORTTIME="1",  # every import is a line on stderr
    )
    task = {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}
    fake.push(turn(text("warm")), turn(text("first")))
    # A server that started once already, so the agents come from the catalog cache as they usually do.
    first_start = await RawStdioServer.start(environ)
    await first_start.request("tools/list", {})
    assert "warm" in await first_start.call_tool("Task", task)
    await first_start.close()

    server = await RawStdioServer.start(environ, stderr=subprocess.PIPE)
    assert server.process.stderr is not None
    stderr = BufferedByteReceiveStream(server.process.stderr)
    with anyio.fail_after(60):
        await server.request("tools/list", {})
        while b"ready for the first Task" not in await stderr.receive_until(b"\n", 1 << 20):
            pass
        lines: list[str] = []

        async def collect() -> None:
            assert server.process.stderr is not None
            async for chunk in server.process.stderr:
                lines.extend(chunk.decode(errors="replace").splitlines())

        async with anyio.create_task_group() as group:
            lines.extend(stderr.buffer.decode(errors="replace").splitlines())
            group.start_soon(collect)
            answer = await server.call_tool("Task", task)
            assert "first" in answer
            await server.close()
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")]
    ours = [name for name in imported if name.split(".")[0] in ("mcp_subagents", "yaml", "pathspec", "jsonschema")]
    assert ours == [], f"imported by the first Task: {ours}"
