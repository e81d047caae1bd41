"""Hygiene and faults as a host sees them: a clean stdout, no secret anywhere, provider faults that end cleanly,
and hosts that vanish mid-task."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.fakes.fake_llm import FakeLLM, Turn, error, hang, malformed, text, tool_use, turn
from tests.stdio_raw import RawStdioServer
from tests.support import connected, http_server, make_settings, matched, server_environment, text_of

pytestmark = pytest.mark.anyio

SECRET = "sk-ant-hygiene-0123456789abcdef"
TASK = {"description": "noisy", "prompt": "Make noise.", "subagent_type": "general-purpose"}


def environment(tmp_path: Path, fake: FakeLLM) -> dict[str, str]:
    return server_environment(
        tmp_path,
        fake=fake,
        key=SECRET,
        work=tmp_path / "work",
        MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions",
        MCP_SUBAGENTS_LOG_LEVEL="DEBUG",
    )


async def test_only_protocol_reaches_stdout_and_no_secret_reaches_any_output(tmp_path: Path, fake: FakeLLM) -> None:
    noise = "for i in $(seq 1 300); do echo out-$i; echo err-$i >&2; done; echo to-dev-stdout > /dev/stdout"
    fake.push(
        turn(tool_use("Bash", {"command": noise}), tool_use("Read", {"file_path": "/etc/passwd"})),
        turn(text(f"I saw the key {SECRET} somewhere")),  # a model repeating a secret
        error(401, message=f"invalid key {SECRET}"),
    )
    stderr_path = tmp_path / "stderr.log"
    with stderr_path.open("wb") as stderr, anyio.fail_after(60):
        server = await RawStdioServer.start(environment(tmp_path, fake), stderr=stderr.fileno())
        noisy = await server.call_tool("Task", TASK)
        rejected = await server.call_tool("Task", TASK)
        rest = await server.close()

    lines = [*server.stdout_lines, *rest.splitlines(keepends=True)]
    assert lines, "the server said nothing"
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line

    assert "[redacted]" in noisy and SECRET not in noisy
    assert "authentication" in rejected.lower() or "api key" in rejected.lower()
    bash_result = json.dumps(fake.requests[1]["body"]["messages"][-1])
    assert "out-300" in bash_result and "err-300" in bash_result and "to-dev-stdout" in bash_result
    written = [stderr_path, *(p for p in (tmp_path / "state").rglob("*") if p.is_file())]
    for path in written:
        assert SECRET not in path.read_text(encoding="utf-8", errors="replace"), path
    assert "DEBUG" in stderr_path.read_text(encoding="utf-8")  # the logs really were verbose


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
async def test_model_requests_are_logged_only_at_debug_level(tmp_path: Path, fake: FakeLLM, level: str) -> None:
    fake.push(turn(text("done")))
    stderr_path = tmp_path / "stderr.log"
    environ = {**environment(tmp_path, fake), "MCP_SUBAGENTS_LOG_LEVEL": level}
    with stderr_path.open("wb") as stderr, anyio.fail_after(60):
        server = await RawStdioServer.start(environ, stderr=stderr.fileno())
        answer = await server.call_tool("Task", TASK)
        await server.close()
    assert "done" in answer
    logged = stderr_path.read_text(encoding="utf-8")
    assert ("HTTP Request: POST" in logged) == (level == "DEBUG"), logged


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("scenario", "deadline", "expected"),
    [
        ("connection refused", 30, "Could not connect to the Anthropic API at http://127.0.0.1:"),
        ("malformed", 30, "Anthropic API sent a stream that could not be parsed"),
        ("hang", 0.5, "timed out after 0.5 s"),
        ("overloaded", 30, "Anthropic API error 529 overloaded_error"),
    ],
)
async def test_provider_faults_end_in_a_clear_task_error(
    tmp_path: Path, fake: FakeLLM, scenario: str, deadline: float, expected: str
) -> None:
    url = f"http://127.0.0.1:{closed_port()}" if scenario == "connection refused" else fake.url
    fast_retry = {"retry-after-ms": "1"}
    steps = {"malformed": [malformed()], "hang": [hang()], "overloaded": [error(529, headers=fast_retry)] * 3}
    fake.push(*steps.get(scenario, []))
    settings = make_settings(tmp_path, model_deadline=deadline, max_retries=2)
    async with connected(settings, environ={"ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_BASE_URL": url}) as client:
        with anyio.fail_after(20):
            result = await client.call_tool("Task", TASK)
        fake.push(turn(text("healthy again")))
        if scenario == "connection refused":
            assert (await client.list_tools()).tools  # still serving
        else:
            assert "healthy again" in text_of(await client.call_tool("Task", TASK))
    assert result.is_error
    body = text_of(result)
    assert body.startswith('<task_error agent="general-purpose">') and expected in body, body
    assert SECRET not in body


async def test_a_host_that_disconnects_mid_task_leaves_background_work_running(tmp_path: Path, fake: FakeLLM) -> None:
    def answer(body: dict[str, Any]) -> Turn:  # by prompt: the two requests may arrive in either order
        if body["messages"][0]["content"][-1]["text"] == "in the background":  # the prompt ends the first message
            return turn(text("background done"), delay=1.0)
        return turn(text("foreground done"), delay=30)

    fake.default = answer
    async with http_server(tmp_path, "streamable-http", environ=environment(tmp_path, fake)) as url:
        with anyio.fail_after(30):
            async with Client(url, mode="legacy") as first:
                background = {**TASK, "prompt": "in the background", "run_in_background": True}
                launched = text_of(await first.call_tool("Task", background))
                task_id = matched(r"task_id: (\w+)", launched)
                with anyio.move_on_after(0.3):  # the host goes away in the middle of a foreground call
                    await first.call_tool("Task", TASK)
            async with Client(url, mode="legacy") as second:
                result = text_of(await second.call_tool("TaskOutput", {"task_id": task_id, "timeout": 20000}))
    assert "<status>completed</status>" in result and "background done" in result
