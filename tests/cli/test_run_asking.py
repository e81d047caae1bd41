"""`mcp-subagents run` asking its task's permission questions at the terminal: the real command on a real pty,
against the fake Messages API, with a model that writes a file (a call the default mode asks about). The person
answers allow, always or deny (a letter or the word; anything else is asked again); a question answered from
another shell withdraws the prompt; Ctrl-D leaves it open for other places; Ctrl-C stops the task. Without a
terminal on stdin nothing is asked: the question waits for `tasks answer`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_subagents.cli import main
from mcp_subagents.cli.tasks import os_user
from tests.cli.terminal_support import CTRL_C, CTRL_D, Terminal, environment
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn

RUN = ["run", "general-purpose", "Write the notes."]
PROMPT = b"[a]llow once, [A]lways allow, [d]eny: "


def write_the_notes(fake: FakeLLM, work: Path) -> None:
    """The model writes `notes.txt`, then answers with what the call gave back."""
    call = tool_use("Write", {"file_path": str(work / "notes.txt"), "content": "written\n"})
    fake.push(turn(text("Writing the notes."), call), lambda body: turn(text(f"The Write call gave: {_result(body)}")))


def _result(body: dict[str, Any]) -> str:
    (result,) = [block for block in body["messages"][-1]["content"] if block["type"] == "tool_result"]
    content = result["content"]
    return content if isinstance(content, str) else " ".join(part["text"] for part in content)


def asking_run(tmp_path: Path, fake: FakeLLM) -> tuple[Terminal, Path, dict[str, str]]:
    """`run` on a terminal, stopped at its question (which would wait two minutes for an answer)."""
    work = tmp_path / "work"
    write_the_notes(fake, work)
    env = environment(tmp_path, fake, work=work, MCP_SUBAGENTS_ASK_TIMEOUT="120")
    terminal = Terminal(RUN, env, tmp_path)
    terminal.read_until(PROMPT)
    return terminal, work, env


def task_id_on(screen: bytes) -> str:
    return screen.split(b"\r\n  Task ", 1)[1].split(b".", 1)[0].decode()


def answer_lines(tmp_path: Path, task_id: str) -> list[dict[str, Any]]:
    transcript = tmp_path / "state" / "tasks" / f"{task_id}.jsonl"
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    return [line for line in lines if line["type"] == "answer"]


def tasks_answer(env: dict[str, str], task_id: str, flag: str) -> None:
    """`mcp-subagents tasks answer` from another shell."""
    command = [sys.executable, "-m", "mcp_subagents", "tasks", "answer", task_id, flag]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("keys", "choice"),
    [(b"a\n", "allow"), (b"always\n", "always"), (b"maybe\n", "deny")],
    ids=["a", "always", "re-asked-then-deny"],
)
def test_the_question_is_asked_at_the_terminal_and_the_answer_decides_the_call(
    tmp_path: Path, fake: FakeLLM, keys: bytes, choice: str
) -> None:
    terminal, work, _ = asking_run(tmp_path, fake)
    notes, local = work / "notes.txt", work / ".claude" / "settings.local.json"
    screen = terminal.read_until(PROMPT).decode()
    headline = f"\r\nSubagent 'general-purpose' asks to run Write: {notes}\r\n"
    assert headline in screen and "waiting for you" not in screen.split(headline)[1]  # no status line over it
    assert f"  Always allow adds Edit(./notes.txt) to {local}.\r\nAllow it? {PROMPT.decode()}" in screen
    terminal.type(keys)
    if choice == "deny":
        terminal.read_until(
            b"Type a to allow once, A to always allow or d to deny (or the whole word).\r\nAllow it? " + PROMPT
        )
        terminal.type(b"D\n")
    done = {
        "allow": b"Allowed once.",
        "always": f"Always allowed. Edit(./notes.txt) is allowed from now on (added to {local}).".encode(),
        "deny": b"Denied: the agent is told you refused it.",
    }
    terminal.read_until(done[choice])
    assert terminal.wait() == 0
    shown = terminal.screen.decode()
    if choice == "deny":
        assert "The Write call gave: Error: Permission denied: The person denied this call (the terminal)." in shown
        assert not notes.exists()
    else:
        assert f"The Write call gave: File created successfully at: {notes}" in shown
        assert notes.read_text() == "written\n"
    if choice == "always":
        assert json.loads(local.read_text())["permissions"]["allow"] == ["Edit(./notes.txt)"]
    else:
        assert not local.exists()
    (answered,) = answer_lines(tmp_path, task_id_on(terminal.screen))
    assert (answered["by"], answered["via"]) == (os_user(), "the terminal")


def test_an_answer_from_another_shell_withdraws_the_prompt_and_says_where_it_came_from(
    tmp_path: Path, fake: FakeLLM
) -> None:
    terminal, work, env = asking_run(tmp_path, fake)
    tasks_answer(env, task_id_on(terminal.screen), "--allow")
    terminal.read_until(f"Answered elsewhere: allowed by {os_user()} via mcp-subagents tasks answer.".encode())
    assert terminal.wait() == 0  # nothing more was asked of the terminal
    assert (work / "notes.txt").read_text() == "written\n"


def test_end_of_input_leaves_the_question_open_for_other_places(tmp_path: Path, fake: FakeLLM) -> None:
    terminal, work, env = asking_run(tmp_path, fake)
    terminal.type(CTRL_D)
    terminal.read_until(b"No answer from this terminal: the question stays open for `mcp-subagents tasks answer ")
    terminal.read_until(b"waiting for you")  # the status line is back, and says so
    tasks_answer(env, task_id_on(terminal.screen), "--deny")
    terminal.read_until(b"Permission denied: The person denied this call (mcp-subagents tasks answer).")
    assert terminal.wait() == 0
    assert not (work / "notes.txt").exists()


def test_ctrl_c_at_the_prompt_stops_the_task(tmp_path: Path, fake: FakeLLM) -> None:
    terminal, work, _ = asking_run(tmp_path, fake)
    terminal.type(CTRL_C)
    terminal.read_until(b"Continue it with:")
    assert terminal.wait() == 130
    assert not (work / "notes.txt").exists() and "Traceback" not in terminal.screen.decode()
    assert answer_lines(tmp_path, task_id_on(terminal.screen)) == []


@pytest.mark.anyio
async def test_without_a_terminal_on_stdin_the_question_waits_for_tasks_answer(tmp_path: Path, fake: FakeLLM) -> None:
    work = tmp_path / "work"
    write_the_notes(fake, work)
    env = environment(tmp_path, fake, work=work, MCP_SUBAGENTS_ASK_TIMEOUT="120")
    process = await anyio.open_process([sys.executable, "-m", "mcp_subagents", *RUN], env=env, cwd=tmp_path)
    assert process.stderr is not None and process.stdout is not None and process.stdin is not None
    stderr = BufferedByteReceiveStream(process.stderr)
    seen = b""
    try:
        with anyio.fail_after(30):
            while b"[waiting] waiting for you: " not in seen:
                seen += await stderr.receive_until(b"\n", 65536) + b"\n"
        task_id = json.loads(next((tmp_path / "state" / "tasks").glob("*.jsonl")).read_text().splitlines()[0])
        await anyio.to_thread.run_sync(tasks_answer, env, task_id["task_id"], "--allow")
        with anyio.fail_after(30):
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
    assert process.returncode == 0
    assert b"Allow it?" not in seen
    assert (work / "notes.txt").read_text() == "written\n"


def test_the_help_says_where_a_question_is_asked(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # the description on one line, not wrapped at a hyphen
    with pytest.raises(SystemExit) as exited:
        main(["run", "--help"])
    shown = capsys.readouterr().out
    assert exited.value.code == 0
    assert "When stdin is a terminal, the task's permission questions are asked there" in shown
    assert "for `mcp-subagents tasks answer` or the dashboard, and is denied after --ask-timeout." in shown
