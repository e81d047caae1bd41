"""What a model writes reaches a person's terminal inert: `tasks list/show/tail` and `run`.

Before, the model's answer, the tool names it made up and the description its host gave went to the terminal raw:
an OSC 52 sequence set the person's clipboard, `\\x1b[2J` and `\\x1bc` cleared the screen, `\\x1b[8m` hid text,
and bidi overrides and zero-width characters changed what the person read.
"""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.stdio_raw import RawStdioServer

from .inert_support import HOSTILE, HOSTILE_TOOL, RAW, assert_inert
from .server import Scene, make_scene

pytestmark = pytest.mark.anyio

HOSTILE_DESCRIPTION = "fix it\x1b[2J\u202eplease"


def _model_turns(fake: FakeLLM) -> None:
    fake.push(turn(text("Looking."), tool_use(HOSTILE_TOOL, {"file_path": "notes\u202e.md"})), turn(text(HOSTILE)))


def _cli(scene: Scene, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", *args], env=scene.environ, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode("utf-8")


async def test_tasks_list_show_and_tail_print_a_hostile_task_inert(tmp_path: Path, fake: FakeLLM) -> None:
    scene = make_scene(tmp_path, fake, sandbox="off")
    _model_turns(fake)
    server = await RawStdioServer.start(scene.environ, stderr=subprocess.DEVNULL)
    task = {"description": HOSTILE_DESCRIPTION, "prompt": "Look.", "subagent_type": "general-purpose"}
    with anyio.fail_after(60):
        result = await server.call_tool("Task", task)
    await server.close()
    assert "\x1b]52;c;" in result  # what the host's model reads is the answer as written
    [transcript] = (scene.state / "tasks").glob("*.jsonl")

    listed = _cli(scene, "tasks", "list")
    assert "fix it\\x1b[2J\\u202eplease" in listed and "\x1b" not in listed and "\u202e" not in listed
    shown = _cli(scene, "tasks", "show", transcript.stem)
    assert_inert(shown)
    assert "fix it\\x1b[2J\\u202eplease" in shown
    tailed = _cli(scene, "tasks", "tail", transcript.stem)
    assert "Read\\x1b]52;c;aGk=\\x07\\u202e" in tailed  # the made-up tool, in the output file's lines
    assert not any(raw in tailed for raw in RAW)


def _run_scene(tmp_path: Path, fake: FakeLLM) -> Scene:
    scene = make_scene(tmp_path, fake, sandbox="off")
    _model_turns(fake)
    return scene


def test_run_prints_the_answer_and_its_progress_inert(tmp_path: Path, fake: FakeLLM) -> None:
    scene = _run_scene(tmp_path, fake)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "run", "general-purpose", "Look."],
        env=scene.environ,
        capture_output=True,
        timeout=60,
        check=False,
    )
    answer, progress = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert done.returncode == 0, progress
    assert_inert(answer)
    assert "Read\\x1b]52;c;aGk=\\x07\\u202e" in progress  # one line per tool call (stderr is not a terminal)
    assert not any(raw in progress for raw in RAW)


def test_runs_status_line_on_a_terminal_is_inert(tmp_path: Path, fake: FakeLLM) -> None:
    scene = _run_scene(tmp_path, fake)
    leader, follower = pty.openpty()  # stderr on a terminal: the live status line, redrawn at every event
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # wide enough for the whole line
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcp_subagents", "run", "general-purpose", "Look."],
            env=scene.environ,
            stdout=subprocess.PIPE,
            stderr=follower,
            timeout=60,
            check=False,
        )
        os.close(follower)
        terminal = _read_all(leader).decode("utf-8")
    finally:
        os.close(leader)
    assert done.returncode == 0
    assert "\x1b[2K" in terminal  # the status line is drawn (with its own escape sequence)
    assert "Read\\x1b]52;c;aGk=\\x07\\u202e" in terminal
    for raw in ("\x1b]52", "\x07", "\u202e"):
        assert raw not in terminal


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


HOSTILE_AGENT_FILE = (
    "---\n"
    "name: reviewer\n"
    'description: "Reviews code\\e]52;c;aGk=\\a \\u202eevil \\x1b[2J"\n'
    'skills: ["style\\e]52;c;aGk=\\a\\u202e"]\n'
    "---\n"
    "You review code.\n"
)


def test_agents_list_and_the_log_show_a_project_agent_file_inert(tmp_path: Path, fake: FakeLLM) -> None:
    # Before, `agents list` printed a project's agent description raw, and log lines quoted its names raw.
    scene = make_scene(tmp_path, fake, sandbox="off")
    agents = scene.work / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(HOSTILE_AGENT_FILE, encoding="utf-8")
    listed = _cli(scene, "agents", "list")
    assert "Reviews code\\x1b]52;c;aGk=\\x07 \\u202eevil \\x1b[2J" in listed
    assert not any(raw in listed for raw in RAW)
    fake.push(turn(text("Looks fine.")))
    done = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", "run", "reviewer", "Review."],
        env=scene.environ,
        capture_output=True,
        timeout=60,
        check=False,
    )
    logged = done.stderr.decode("utf-8")
    assert done.returncode == 0, logged
    assert "lists skill style\\x1b]52;c;aGk=\\x07\\u202e, which was not found" in logged
    assert not any(raw in logged for raw in RAW)
