"""A task that hammers the disk never starves the protocol: tools/list and TaskStop answer within a second.

Before, 45 parallel Reads of a huge file took every thread of anyio's shared pool, the stdio reader among them
needed one too, and the whole server froze until the reads were done.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.tools.base import TOOL_THREADS
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.stdio_raw import RawStdioServer

from .server import TASK, make_scene

pytestmark = pytest.mark.anyio

PARALLEL_READS = 45
HUGE = 1024**3
"""Sparse, one line: every Read walks all of it looking for the end of its first line."""


async def test_tools_list_and_task_stop_answer_while_reads_hog_the_threads(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    huge = scene.work / "huge.log"
    with huge.open("wb") as file:
        file.write(b"a" * 8192)
        file.truncate(HUGE)
    reads = [tool_use("Read", {"file_path": str(huge), "allow_large": True}) for _ in range(PARALLEL_READS)]
    fake.push(turn(*reads), turn(text("read them all")))
    server = await RawStdioServer.start(scene.environ, stderr=subprocess.DEVNULL)
    try:
        await server.send(
            {"jsonrpc": "2.0", "id": 100, "method": "tools/call", "params": {"name": "Task", "arguments": TASK}}
        )
        task_id = await reads_started(server)
        with anyio.fail_after(1):
            await server.send({"jsonrpc": "2.0", "id": 101, "method": "tools/list", "params": {}})
            listed = await answer(server, 101)
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["Task", "TaskOutput", "TaskStop"]
        with anyio.fail_after(1):
            stop = {"name": "TaskStop", "arguments": {"task_id": task_id}}
            await server.send({"jsonrpc": "2.0", "id": 102, "method": "tools/call", "params": stop})
            stopped = await answer(server, 102)
        assert "Successfully stopped" in json.dumps(stopped)
        with anyio.fail_after(10):
            result = await answer(server, 100)
        assert "was stopped" in json.dumps(result)
    finally:
        await server.close()
        os.unlink(huge)


async def reads_started(server: RawStdioServer) -> str:
    """Wait until the server has reported more Reads started (log notifications) than all the tool threads can run
    at once; return the task id."""
    started = 0
    task_id = ""
    with anyio.fail_after(60):
        while started < TOOL_THREADS + 4:
            message = await server.next_message()
            if message.get("method") == "notifications/message":
                data = message["params"]["data"]
                task_id = data["task_id"]
                started += "tool Read" in data["event"]
    return task_id


_answers: dict[int, dict[str, Any]] = {}


async def answer(server: RawStdioServer, request_id: int) -> dict[str, Any]:
    """The answer to `request_id`; answers to other requests that arrive first are kept for their turn."""
    while request_id not in _answers:
        message = await server.next_message()
        if "id" in message:
            _answers[message["id"]] = message
    return _answers.pop(request_id)
