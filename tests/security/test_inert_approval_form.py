"""The permission question a person answers, and the progress and log lines a host shows, are inert.

Before, the model's tool arguments went into the question raw: a command or a path holding `\\x1b[8m` (hidden
text), a bidi override or zero-width characters read differently in the host's form than what would run, and OSC 52
could set the person's clipboard where a host shows the form in a terminal. The made-up tool names and the answer
went raw into progress and log notifications.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.support import MODES

from .inert_support import ESCAPED, HOSTILE, HOSTILE_TOOL, RAW, assert_inert
from .server import TASK, make_scene

pytestmark = pytest.mark.anyio


def _stdio(environ: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=environ)


@pytest.mark.parametrize("mode", MODES)
async def test_the_permission_question_shows_hostile_arguments_inert(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    fake.push(
        turn(tool_use("Write", {"file_path": "notes\u202etxt.md", "content": HOSTILE})),
        turn(tool_use("Bash", {"command": f"rm -rf build # {HOSTILE}"})),
        turn(text("done")),
    )
    questions: list[str] = []

    async def decline(_context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        questions.append(params.message)
        return types.ElicitResult(action="decline")

    with anyio.fail_after(60):
        async with Client(_stdio(scene.environ), mode=mode, elicitation_callback=decline) as client:  # pyright: ignore[reportArgumentType]
            await client.call_tool("Task", TASK)
    write, bash = questions
    assert "File:\nnotes\\u202etxt.md\n" in write
    assert_inert(write)
    assert "Command:\nrm -rf build # Done.\\x1b]52;c;" in bash
    assert_inert(bash)
    assert not (tmp_path / "home" / "project" / "notes\u202etxt.md").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_progress_and_log_notifications_are_inert(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    fake.push(turn(text(HOSTILE), tool_use(HOSTILE_TOOL, {"file_path": "x"})), turn(text(HOSTILE)))
    progress_lines: list[str] = []
    logged: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_lines.append(message or "")

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.data)

    with anyio.fail_after(60):
        async with Client(_stdio(scene.environ), mode=mode, logging_callback=on_log, log_level="info") as client:
            result = await client.call_tool("Task", TASK, progress_callback=on_progress)
    assert "\x1b]52;c;" in "".join(getattr(block, "text", "") for block in result.content)  # the host's model's
    tool_lines = [line for line in progress_lines if "Read" in line]
    assert tool_lines == ["turn 1: Read\\x1b]52;c;aGk=\\x07\\u202e"]
    events = "\n".join(str(data["event"]) for data in logged)
    assert "Read\\x1b]52;c;aGk=\\x07\\u202e" in events
    assert_inert(events, escapes=ESCAPED[:2])  # the answer is shortened there, but what is left is inert
    assert not any(raw in line for line in progress_lines for raw in RAW)
