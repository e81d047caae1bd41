"""`serve` pauses the garbage collector while it starts (its passes over the SDK's objects found next to nothing and
cost a tenth of the start-up) and must have it running again, with what start-up built frozen, once it serves; a
start-up that fails must not leave it off either (`main` can be called in-process)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.stdio_raw import RawStdioServer
from tests.support import SYSTEM_PATH, server_environment

REPORTS_THE_COLLECTOR = """
import gc, signal, sys
from mcp_subagents.cli import main

def report(*_):
    state = "on" if gc.isenabled() else "off"
    sys.stderr.write(f"collector {state}, {gc.get_freeze_count()} frozen\\n")
    sys.stderr.flush()

signal.signal(signal.SIGUSR1, report)
try:
    main(sys.argv[1:])
except SystemExit:
    report()
    raise
"""


def _environ(tmp_path: Path) -> dict[str, str]:
    return server_environment(tmp_path, work=tmp_path / "work", path=os.environ.get("PATH", SYSTEM_PATH))


async def _report_line(stderr: BufferedByteReceiveStream) -> str:
    while True:
        line = (await stderr.receive_until(b"\n", 1 << 20)).decode()
        if line.startswith("collector "):
            return line


@pytest.mark.anyio
async def test_a_serving_server_collects_garbage_with_its_start_up_frozen(tmp_path: Path) -> None:
    command = [sys.executable, "-c", REPORTS_THE_COLLECTOR, "serve"]
    process = await anyio.open_process(command, env=_environ(tmp_path), stderr=subprocess.PIPE)
    assert process.stderr is not None
    server = RawStdioServer(process)
    try:
        with anyio.fail_after(60):
            await server.request(
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
            )
            await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            tools = await server.request("tools/list", {})
            assert {tool["name"] for tool in tools["tools"]} >= {"Task", "TaskOutput", "TaskStop"}
            process.send_signal(signal.SIGUSR1)
            line = await _report_line(BufferedByteReceiveStream(process.stderr))
            await server.close()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    state, frozen = line.removeprefix("collector ").split(", ")
    assert state == "on"
    assert int(frozen.split()[0]) > 50_000  # the MCP SDK's modules and models, and ours


def test_a_failed_start_up_leaves_the_collector_on(tmp_path: Path) -> None:
    # Refused after the collector was paused: an HTTP listener on every interface with no way to authenticate.
    command = [sys.executable, "-c", REPORTS_THE_COLLECTOR, "serve", "--transport", "streamable-http"]
    result = subprocess.run(
        [*command, "--host", "0.0.0.0", "--port", "0"],
        env=_environ(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "collector on," in result.stderr
