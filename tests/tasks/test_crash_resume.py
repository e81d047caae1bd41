"""A server killed mid-task: the next server on the same state directory reports the task and resumes it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import pytest

from mcp_subagents.tasks.transcripts import INTERRUPTED_TOOL_RESULT, INTERRUPTED_WHILE_ASKING
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.processes import wait_until_gone
from tests.stdio_raw import RawStdioServer
from tests.support import server_environment

pytestmark = pytest.mark.anyio


async def test_a_killed_server_leaves_an_interrupted_task_that_a_new_server_resumes(
    tmp_path: Path, fake: FakeLLM
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    # The sandbox is off: the command reports the server as its parent, and that takes no sandbox.
    environ = server_environment(
        tmp_path, fake=fake, work=work, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions"
    )
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
    assert sent[0]["content"][-1]["text"] == "Do the long job."  # after the attribution reminder (it has Bash)
    assert sent[1]["role"] == "assistant" and sent[1]["content"][-1]["type"] == "tool_use"
    closing = sent[2]["content"]
    assert closing[0]["type"] == "tool_result" and closing[0]["is_error"] is True
    assert INTERRUPTED_TOOL_RESULT in json.dumps(closing[0]["content"])
    assert closing[-1]["text"] == "Carry on."


async def test_a_question_waiting_when_the_server_died_is_shown_and_resuming_tells_the_model_it_never_ran(
    tmp_path: Path, fake: FakeLLM
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    environ = server_environment(tmp_path, fake=fake, work=work, sandbox="off")
    fake.push(turn(tool_use("Bash", {"command": "touch asked.txt"})))
    task = {"description": "asks first", "prompt": "Touch it.", "subagent_type": "general-purpose"}
    with anyio.fail_after(60):
        first = await RawStdioServer.start(environ)
        launched = await first.call_tool("Task", {**task, "run_in_background": True})
        task_id = launched.split("task_id: ")[1].split()[0]
        waiting = ""
        while "<status>waiting</status>" not in waiting:  # each call waits on the task up to its timeout
            waiting = await first.call_tool("TaskOutput", {"task_id": task_id, "timeout": 1000})
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()

        fake.push(turn(text("Resumed.")))
        second = await RawStdioServer.start(environ)
        status = await second.call_tool("TaskOutput", {"task_id": task_id})
        await second.call_tool("Task", {**task, "prompt": "Carry on.", "resume": task_id})
        second.process.terminate()
        await second.process.wait()

    assert "waiting for you: Subagent 'general-purpose' asks to run Bash: touch asked.txt" in waiting
    assert "<status>interrupted</status>" in status
    assert "It was waiting for you: Subagent 'general-purpose' asks to run Bash: touch asked.txt." in status
    closing = fake.requests[-1]["body"]["messages"][2]["content"]
    assert closing[0]["type"] == "tool_result" and INTERRUPTED_WHILE_ASKING in json.dumps(closing[0]["content"])
    assert not (work / "asked.txt").exists()
