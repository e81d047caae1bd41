"""Hosts are told to list tools again when agent files change, in both protocol eras."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import mcp_types as types
import pytest
from mcp import Client

from mcp_subagents.mcp.notifications import watch_catalog
from mcp_subagents.mcp.server import build_server
from tests.support import make_settings, running_app, write_agent

pytestmark = pytest.mark.anyio


async def test_a_2025_era_host_is_notified_when_an_agent_file_appears(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with running_app(settings) as app, anyio.create_task_group() as group:
        server = build_server(app)
        group.start_soon(partial(watch_catalog, app.rescan, server.notifier, interval=0.02, baseline=app.catalog()))
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            await client.list_tools()
            write_agent(settings.cwd / ".claude" / "agents", "fresh", description="New agent")
            with anyio.fail_after(5):
                await changed.wait()
            enum = (await client.list_tools()).tools[0].input_schema["properties"]["subagent_type"]["enum"]
            assert "fresh" in enum
        group.cancel_scope.cancel()


async def test_a_2026_era_host_hears_of_it_on_its_listen_stream(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    async with running_app(settings) as app, anyio.create_task_group() as group:
        server = build_server(app)
        group.start_soon(partial(watch_catalog, app.rescan, server.notifier, interval=0.02, baseline=app.catalog()))
        async with Client(server) as client, client.listen(tools_list_changed=True) as events:
            write_agent(settings.cwd / ".claude" / "agents", "fresh", description="New agent")
            with anyio.fail_after(5):
                event = await events.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
        group.cancel_scope.cancel()


async def test_an_unchanged_catalog_sends_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            notifications.append(message)

    async with running_app(settings) as app, anyio.create_task_group() as group:
        server = build_server(app)
        loads = 0
        checked_ten_times = anyio.Event()

        def counting_load() -> Any:  # runs in a worker thread
            nonlocal loads
            loads += 1
            if loads == 10:
                anyio.from_thread.run_sync(checked_ten_times.set)
            return app.rescan()

        group.start_soon(partial(watch_catalog, counting_load, server.notifier, interval=0.01))
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            with anyio.fail_after(30):
                await checked_ten_times.wait()
            # A legacy-era round trip: what the server sent before its answer has arrived.
            await client.send_ping()  # pyright: ignore[reportDeprecated]
        group.cancel_scope.cancel()
    assert notifications == []
