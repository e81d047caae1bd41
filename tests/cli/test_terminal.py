"""`run` and `serve` at a terminal (a real pty with the process as its session leader, so Ctrl-C is the terminal's
own SIGINT), and `run` writing for a person when its output is not a terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.cli import main
from tests.cli.terminal_support import CTRL_C, Terminal, environment
from tests.fakes.fake_llm import FakeLLM, hang, text, tool_use, turn


def test_run_on_a_terminal_shows_a_status_line_and_ctrl_c_stops_the_task_cleanly(tmp_path: Path, fake: FakeLLM) -> None:
    fake.push(turn(text("Searching."), tool_use("Glob", {"pattern": "*"}), input_tokens=1000, output_tokens=100))
    fake.push(hang())  # the second model request never answers: the task is busy until Ctrl-C
    terminal = Terminal(["run", "general-purpose", "find things"], environment(tmp_path, fake), tmp_path)
    screen = terminal.read_until(b"turn 2/50")
    assert b"general-purpose \xc2\xb7 turn 1/50" in screen and b"$0.0045" in screen and b"1.1k tokens" in screen
    assert b"HTTP Request" not in screen
    terminal.type(CTRL_C)
    screen = terminal.read_until(b"Continue it with:")
    assert terminal.wait() == 130
    shown = terminal.screen.decode()
    assert "Traceback" not in shown
    task_id = shown.split("Stopped task ")[1].split()[0]
    assert f"mcp-subagents run --resume {task_id}" in shown
    transcript = (tmp_path / "state" / "tasks" / f"{task_id}.jsonl").read_text()
    assert '"state": "stopped"' in transcript


def test_serve_on_a_terminal_says_what_it_waits_for_and_stops_on_ctrl_c(tmp_path: Path, fake: FakeLLM) -> None:
    terminal = Terminal(["serve"], environment(tmp_path, fake), tmp_path)
    terminal.read_until(b"waits for an MCP host")
    terminal.type(CTRL_C)
    code = terminal.wait()
    shown = terminal.screen.decode()
    assert code in (0, 130), shown
    assert "Traceback" not in shown and "mcp-subagents: stopped" in shown, shown


def test_run_prints_the_answer_for_a_person_and_the_envelope_with_raw(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in environment(tmp_path, fake).items():
        monkeypatch.setenv(name, value)
    fake.push(
        turn(text("Looking."), tool_use("Glob", {"pattern": "*"}), input_tokens=1000, output_tokens=100),
        turn(text("Nothing here."), input_tokens=1000, output_tokens=100),
    )
    with pytest.raises(SystemExit) as exited:
        main(["run", "general-purpose", "look"])
    out, err = capsys.readouterr()
    assert exited.value.code == 0
    assert out == "Nothing here.\n"
    assert "[turn 1] tool Glob" in err  # not a terminal: plain progress lines
    assert "general-purpose completed · 2 turn(s) · 1 tool use(s) · 2,200 tokens · $0.009 · " in err
    assert "HTTP Request" not in err

    fake.push(turn(text("Raw answer."), input_tokens=10, output_tokens=5))
    with pytest.raises(SystemExit):
        main(["run", "general-purpose", "look", "--raw"])
    out, _ = capsys.readouterr()
    assert out.startswith('<task_result agent="general-purpose">Raw answer.</task_result>\n<usage>')


def test_run_resumes_a_task_and_rejects_a_bad_command_line(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in environment(tmp_path, fake).items():
        monkeypatch.setenv(name, value)
    fake.push(turn(text("First part.")))
    with pytest.raises(SystemExit):
        main(["run", "general-purpose", "start", "--raw"])
    task_id = capsys.readouterr().out.split("task_id: ")[1].split(";")[0]
    fake.push(turn(text("Second part.")))
    with pytest.raises(SystemExit) as exited:
        main(["run", "--resume", task_id, "go on"])
    out, _ = capsys.readouterr()
    assert exited.value.code == 0 and out == "Second part.\n"
    last_request = fake.requests[-1]["body"]["messages"]
    assert "First part." in str(last_request)
    for argv, message in (
        (["run", "general-purpose"], "give the agent and the prompt"),
        (["run", "--resume", task_id, "general-purpose", "go"], "with --resume, give only the prompt"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2 and message in capsys.readouterr().err
