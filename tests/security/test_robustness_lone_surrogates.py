"""Text that is not valid Unicode in a model's answer reaches no one as a crash.

Before, one model answer holding a lone surrogate (`"\\ud800"` in the API's JSON) ended the stdio server: writing the
result (and the log notification that carried the answer) to stdout raised `UnicodeEncodeError`. Over Streamable
HTTP the host got JSON it refused ("unexpected end of hex escape") or an event stream that broke off; over SSE the
connection closed. And `mcp-subagents tasks show` of the task died with a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn

from .http_harness import mcp_client, server_process
from .server import TASK, Scene, make_scene, run_task

pytestmark = pytest.mark.anyio

ANSWER = "half of a pair \ud83d, a lone low \udfff and \ud800 alone"


def _all_valid_json(lines: list[bytes]) -> list[dict[str, Any]]:
    """Every line the server wrote, decoded strictly: a lone surrogate cannot hide in a valid UTF-8 line."""
    return [json.loads(line.decode("utf-8")) for line in lines]


def _cli(scene: Scene, *args: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "mcp_subagents", *args]
    return subprocess.run(command, env=scene.environ, capture_output=True, timeout=60, check=False)


async def test_a_lone_surrogate_in_an_answer_leaves_the_stdio_server_serving(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    result, server = await run_task(scene, fake, turn(text(ANSWER)), finish=False)
    try:
        assert "half of a pair \ufffd, a lone low \ufffd and \ufffd alone" in result
        fake.push(turn(text("the second task")))
        with anyio.fail_after(60):
            assert "the second task" in await server.call_tool("Task", TASK)
    finally:
        rest = await server.close()
    messages = _all_valid_json([*server.stdout_lines, *rest.splitlines()])
    logged = [m["params"]["data"]["event"] for m in messages if m.get("method") == "notifications/message"]
    assert any("half of a pair \ufffd, a lone low \ufffd and \ufffd alone" in event for event in logged)


async def test_tasks_show_list_and_tail_print_such_a_task(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    _, server = await run_task(scene, fake, turn(text(ANSWER)), finish=False)
    await server.close()
    [transcript] = (scene.state / "tasks").glob("*.jsonl")
    for args in (("show", transcript.stem), ("tail", transcript.stem), ("list",)):
        done = _cli(scene, "tasks", *args)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        shown = done.stdout.decode("utf-8")  # strictly: what reached the terminal is valid UTF-8
        if args[0] != "list":
            assert "half of a pair \ufffd, a lone low \ufffd and \ufffd alone" in shown


@pytest.mark.parametrize(
    ("transport", "mode"), [("streamable-http", "legacy"), ("streamable-http", "auto"), ("sse", "legacy")]
)
async def test_a_lone_surrogate_in_an_answer_reaches_an_http_host_as_text(
    tmp_path: Path, fake: FakeLLM, transport: str, mode: str
) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    async with server_process(["--transport", transport], scene.environ) as process:
        for answer, expected in ((ANSWER, "half of a pair \ufffd, a lone low \ufffd"), ("the second task", "second")):
            fake.push(turn(text(answer)))
            async with mcp_client(process.url, mode=mode) as client:
                result = await client.call_tool("Task", TASK)
            assert expected in "".join(getattr(block, "text", "") for block in result.content)
        assert "Traceback" not in "".join(process.stderr)


async def test_a_task_whose_answer_holds_one_goes_on_to_its_next_turn(tmp_path: Path, fake: FakeLLM) -> None:
    """The answer's text goes back to the model in the next request: it must be encodable there too."""
    scene = make_scene(tmp_path, fake, sandbox="off")
    (scene.work / "notes.txt").write_text("hello\n")
    result, server = await run_task(scene, fake, turn(text(ANSWER), tool_use("Read", {"file_path": "notes.txt"})))
    await server.close()
    assert "<task_result" in result and "done" in result
    follow_up = json.dumps(fake.requests[-1]["body"]["messages"], ensure_ascii=False)
    assert "half of a pair \ufffd" in follow_up and "hello" in follow_up
