"""A server killed mid-task: the next server on the same state directory reports the task and resumes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_subagents.transcripts import INTERRUPTED_TOOL_RESULT
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.processes import wait_until_gone

pytestmark = pytest.mark.anyio


class RawStdioServer:
    """Newline-delimited JSON-RPC over a real subprocess's pipes, so the test can SIGKILL it."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._out = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    @classmethod
    async def start(cls, environ: dict[str, str]) -> RawStdioServer:
        process = await anyio.open_process(
            [sys.executable, "-m", "mcp_subagents", "serve"], env=environ, stderr=subprocess.DEVNULL
        )
        server = cls(process)
        await server.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
        )
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return server

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps(message) + "\n").encode())

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        while True:
            message = json.loads(await self._out.receive_until(b"\n", 1 << 20))
            if message.get("id") == self._next_id:
                assert "result" in message, message
                return message["result"]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        return "".join(block.get("text", "") for block in result["content"])


async def test_a_killed_server_leaves_an_interrupted_task_that_a_new_server_resumes(
    tmp_path: Path, fake: FakeLLM
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    environ = {
        "HOME": str(tmp_path),
        "PATH": "/usr/bin:/bin",
        "ANTHROPIC_API_KEY": "sk-test-key-12345",
        "ANTHROPIC_BASE_URL": fake.url,
        "MCP_SUBAGENTS_CWD": str(work),
        "MCP_SUBAGENTS_STATE_DIR": str(tmp_path / "state"),
        "MCP_SUBAGENTS_PERMISSION_MODE": "bypassPermissions",
    }
    fake.push(turn(text("Working on it."), tool_use("Bash", {"command": f"echo \"$PPID $$\" > '{fifo}'; sleep 1000"})))
    task = {"description": "long job", "prompt": "Do the long job.", "subagent_type": "general-purpose"}
    with anyio.fail_after(60):
        first = await RawStdioServer.start(environ)
        launched = await first.call_tool("Task", {**task, "run_in_background": True})
        task_id = launched.split("task_id: ")[1].split()[0]
        server_pid, shell_pid = map(int, (await anyio.to_thread.run_sync(fifo.read_text)).split())
        assert server_pid == first.process.pid
        first.process.send_signal(signal.SIGKILL)  # a crash: no cleanup runs
        await first.process.wait()
        os.killpg(shell_pid, signal.SIGKILL)  # the orphaned Bash command of the dead server
        await wait_until_gone(shell_pid)

        fake.push(turn(text("Resumed and finished.")))
        second = await RawStdioServer.start(environ)
        status = await second.call_tool("TaskOutput", {"task_id": task_id})
        resumed = await second.call_tool("Task", {**task, "prompt": "Carry on.", "resume": task_id})
        second.process.terminate()
        await second.process.wait()

    assert "<status>interrupted</status>" in status and f'resume: "{task_id}"' in status
    assert f"[Resumed task {task_id}.]" in resumed and "Resumed and finished." in resumed
    sent = fake.requests[-1]["body"]["messages"]
    assert sent[0]["content"][0]["text"] == "Do the long job."
    assert sent[1]["role"] == "assistant" and sent[1]["content"][-1]["type"] == "tool_use"
    closing = sent[2]["content"]
    assert closing[0]["type"] == "tool_result" and closing[0]["is_error"] is True
    assert INTERRUPTED_TOOL_RESULT in json.dumps(closing[0]["content"])
    assert closing[-1]["text"] == "Carry on."
