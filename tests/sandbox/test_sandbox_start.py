"""When the server sets up the Bash sandbox: `--sandbox on` still at start (it refuses to start where the sandbox
cannot run); otherwise right after the host first lists the tools, so importing it and probing bubblewrap stay off
the start-up, and still before any Task runs a tool."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.core.errors import ConfigError
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from mcp_subagents.runtime.request import TaskRequest
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.sandbox import SandboxRuntime
from tests.processes import is_running
from tests.stdio_raw import RawStdioServer
from tests.support import SYSTEM_PATH, make_settings, running_app, server_environment


class _SandboxReport(logging.Handler):
    """Keeps the line the server logs once the sandbox is set up ("Bash sandbox on (...)" or "... off: why")."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.logged = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Bash sandbox "):
            self.lines.append(message)
            self.logged.set()


@pytest.fixture
def sandbox_report() -> Iterator[_SandboxReport]:
    report = _SandboxReport()
    logger = logging.getLogger("mcp_subagents")
    logger.addHandler(report)
    yield report
    logger.removeHandler(report)


def _missing_bubblewrap(tmp_path: Path) -> None:
    user_settings = tmp_path / "home" / ".claude" / "settings.json"
    user_settings.parent.mkdir(parents=True, exist_ok=True)
    user_settings.write_text(json.dumps({"sandbox": {"bwrapPath": str(tmp_path / "no-such-bwrap")}}))


def test_sandbox_on_where_it_cannot_run_still_refuses_to_start(tmp_path: Path) -> None:
    _missing_bubblewrap(tmp_path)
    with pytest.raises(ConfigError, match="--sandbox on: the sandbox cannot run here"):
        Subagents(make_settings(tmp_path, sandbox="on"), environ={})


@pytest.mark.anyio
async def test_the_sandbox_is_set_up_after_the_first_tools_list_before_any_task(
    tmp_path: Path, sandbox_report: _SandboxReport
) -> None:
    _missing_bubblewrap(tmp_path)  # the same wherever the test runs: auto, and no bubblewrap, so off and why
    report = sandbox_report
    async with running_app(make_settings(tmp_path, sandbox="auto"), environ={}) as app:
        async with Client(build_server(app), mode="auto") as client:
            assert report.lines == []  # started and connected: nothing set up yet
            await client.list_tools()
            with anyio.fail_after(30):
                assert await anyio.to_thread.run_sync(report.logged.wait, 30)
            await client.list_tools()
        assert app.sandbox.state == "off"
    assert len(report.lines) == 1  # set up once
    assert report.lines[0].startswith(f"Bash sandbox off: {tmp_path / 'no-such-bwrap'} cannot run")


@pytest.mark.anyio
async def test_a_task_that_comes_before_any_tools_list_sets_the_sandbox_up_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sandbox_report: _SandboxReport
) -> None:
    _missing_bubblewrap(tmp_path)
    built_in: list[threading.Thread] = []  # the probe runs a process: not on the event loop's thread
    build = Subagents._build_sandbox  # pyright: ignore[reportPrivateUsage]

    def recording_build(app: Subagents) -> SandboxRuntime:
        built_in.append(threading.current_thread())
        return build(app)

    monkeypatch.setattr(Subagents, "_build_sandbox", recording_build)
    report = sandbox_report
    model = ScriptedModel([tool_call("Bash", {"command": "echo from-bash"}), text("done")])
    settings = make_settings(tmp_path, sandbox="auto", model="claude-sonnet-4-6")
    async with running_app(settings, model=model) as app:
        assert report.lines == []
        record = app.launch(TaskRequest(description="d", prompt="p", subagent_type="general-purpose"))
        with anyio.fail_after(30):
            await record.done.wait()
    assert record.outcome is not None and record.outcome.state == "completed"
    assert len(report.lines) == 1 and report.lines[0].startswith("Bash sandbox off: ")
    assert len(built_in) == 1 and built_in[0] is not threading.main_thread()


@pytest.mark.anyio
async def test_a_server_closed_right_after_listing_the_tools_ends_its_probe_and_reports_no_sandbox_off(
    tmp_path: Path,
) -> None:
    """A host that lists the tools and leaves at once (`claude -p` that never delegates): the probe the warm-up
    started is ended and waited for, not killed at exit and reported as a sandbox that cannot run."""
    started = tmp_path / "started"
    os.mkfifo(started)
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "bwrap").write_text(f'#!/bin/sh\necho $$ > "{started}"\nexec sleep 60\n', encoding="utf-8")
    (slow / "bwrap").chmod(0o755)
    environ = server_environment(tmp_path / "home", work=tmp_path / "work", path=f"{slow}:{SYSTEM_PATH}")
    environ["MCP_SUBAGENTS_LOG_LEVEL"] = "INFO"
    server = await RawStdioServer.start(environ, stderr=subprocess.PIPE)
    await server.request("tools/list", {})
    with anyio.fail_after(30):
        probing = await _pid_written_to(started)
        await server.close()
    assert server.process.stderr is not None
    said = b"".join([chunk async for chunk in server.process.stderr]).decode(errors="replace")
    assert server.process.returncode == 0
    assert "Bash sandbox off" not in said and "cannot create a sandbox" not in said
    assert not is_running(probing)


async def _pid_written_to(fifo: Path) -> int:
    descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        await anyio.wait_readable(descriptor)
        return int(os.read(descriptor, 64).split()[0])
    finally:
        os.close(descriptor)
