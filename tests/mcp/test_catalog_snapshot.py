"""The catalog as last scanned: tools/list reads and stats no file (the watcher rescans off the event loop), while a
Task still uses an agent file added or edited a moment ago."""

from __future__ import annotations

import builtins
import os
import threading
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import pytest
from mcp import Client

from mcp_subagents.definitions import Catalog
from mcp_subagents.mcp.notifications import watch_catalog
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import ScriptedModel, text
from tests.support import make_settings, running_app, text_of, write_agent

pytestmark = pytest.mark.anyio


def _task(agent: str) -> dict[str, str]:
    return {"description": "check", "prompt": "Go.", "subagent_type": agent}


async def test_tools_list_touches_no_file_on_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    for number in range(20):
        write_agent(settings.cwd / ".claude" / "agents", f"agent-{number}")
    async with running_app(settings) as app, Client(build_server(app), mode="legacy") as client:
        await client.list_tools()
        loop_thread = threading.get_ident()
        touched: list[str] = []
        for module, name in [(os, "stat"), (os, "lstat"), (os, "scandir"), (os, "listdir"), (builtins, "open")]:
            real = getattr(module, name)

            def spy(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
                if threading.get_ident() == loop_thread:  # start-up work in worker threads may still be going on
                    touched.append(f"{_name}{args[:1]}")
                return _real(*args, **kwargs)

            monkeypatch.setattr(module, name, spy)
        listed = [await client.list_tools() for _ in range(5)][-1]
        monkeypatch.undo()
    assert touched == []
    assert "agent-19" in listed.tools[0].input_schema["properties"]["subagent_type"]["enum"]


async def test_an_agent_file_added_after_start_runs_at_once(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    model = ScriptedModel([text("reviewed")])
    async with running_app(settings, model=model) as app, Client(build_server(app), mode="legacy") as client:
        await client.list_tools()
        write_agent(settings.cwd / ".claude" / "agents", "reviewer", body="You review.")
        result = await client.call_tool("Task", _task("reviewer"))
    assert not result.is_error, text_of(result)
    assert "reviewed" in text_of(result)
    assert model.requests[0].system.startswith("You review.")


async def test_an_edited_agent_file_is_used_by_the_next_task(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None
    folder = settings.cwd / ".claude" / "agents"
    path = write_agent(folder, "reviewer", body="Old instructions.")
    model = ScriptedModel([text("one"), text("two")])
    async with running_app(settings, model=model) as app, Client(build_server(app), mode="legacy") as client:
        await client.call_tool("Task", _task("reviewer"))
        write_agent(folder, "reviewer", body="New instructions, longer.")
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
        await client.call_tool("Task", _task("reviewer"))
    assert model.requests[0].system.startswith("Old instructions.")
    assert model.requests[1].system.startswith("New instructions, longer.")


async def test_the_watcher_scans_in_a_worker_thread(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    loop_thread = threading.get_ident()
    scanned_on: list[int] = []
    three_scans = anyio.Event()
    async with running_app(settings) as app, anyio.create_task_group() as group:
        server = build_server(app)

        def rescan() -> Catalog:
            scanned_on.append(threading.get_ident())
            if len(scanned_on) == 3:
                anyio.from_thread.run_sync(three_scans.set)
            return app.rescan()

        group.start_soon(partial(watch_catalog, rescan, server.notifier, interval=0.01))
        with anyio.fail_after(5):
            await three_scans.wait()
        group.cancel_scope.cancel()
    assert loop_thread not in scanned_on


async def test_an_unchanged_tree_keeps_the_same_catalog_object(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    async with running_app(settings) as app:
        first = app.catalog()
        assert await app.refresh_catalog() is first
        assert settings.cwd is not None
        write_agent(settings.cwd / ".claude" / "agents", "new-one")
        assert await app.refresh_catalog() is not first
