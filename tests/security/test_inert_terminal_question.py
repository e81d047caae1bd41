"""A hostile model's permission question at the terminal of `mcp-subagents run`: the model chooses the path and the
content of the file it asks to write, and fills them with escape sequences (a screen clear, hidden text, OSC 52 to
set the clipboard) and bidi overrides that would make the question read as something harmless, or rewrite the
prompt line, before the person answers it. The question reaches the terminal inert."""

from __future__ import annotations

from pathlib import Path

from tests.cli.terminal_support import Terminal, environment
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn

from .inert_support import HOSTILE, assert_inert


def test_a_hostile_question_is_shown_inert_before_the_person_answers(tmp_path: Path, fake: FakeLLM) -> None:
    work = tmp_path / "work"
    path = work / "notes\u202etxt.sh"
    fake.push(
        turn(text("Writing."), tool_use("Write", {"file_path": str(path), "content": HOSTILE})),
        turn(text("Done.")),
    )
    env = environment(tmp_path, fake, work=work, MCP_SUBAGENTS_ASK_TIMEOUT="120")
    terminal = Terminal(["run", "general-purpose", "Write the notes."], env, tmp_path)
    screen = terminal.read_until(b"[d]eny: ").decode()
    question = screen[screen.index("Subagent 'general-purpose' asks to run Write") : screen.rindex("Allow it?")]
    assert_inert(question)
    assert f"asks to run Write: {work}/notes\\u202etxt.sh\r\n" in question
    terminal.type(b"d\n")
    terminal.read_until(b"Denied")
    assert terminal.wait() == 0
    assert not path.exists()
