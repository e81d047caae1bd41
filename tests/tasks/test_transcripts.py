from __future__ import annotations

import json
from pathlib import Path

from mcp_subagents.core.messages import (
    AssistantMessage,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from mcp_subagents.core.redaction import Redactor
from mcp_subagents.permissions.asking import Denial
from mcp_subagents.tasks.outcome import RunCounts, TaskOutcome
from mcp_subagents.tasks.transcripts import (
    INTERRUPTED_TOOL_RESULT,
    TranscriptHeader,
    TranscriptWriter,
    read_history,
    read_summary,
)

HEADER = TranscriptHeader(task_id="t1", agent="Explore", description="look", created=1.0)


def test_messages_round_trip_and_the_end_line_gives_the_state(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path / "t1.jsonl")
    writer.header(HEADER)
    messages = [
        UserMessage(content="hi"),
        AssistantMessage(parts=(TextPart(text="ok"), ToolCall(id="c", name="Read", arguments={"file_path": "/x"}))),
        ToolResultMessage(results=()),
        AssistantMessage(parts=(TextPart(text="done"),)),
    ]
    for message in messages:
        writer.message(message)
    outcome = TaskOutcome(
        state="completed",
        counts=RunCounts(turns=2, tool_uses=1, usage=Usage(input_tokens=7), duration_s=0.5),
        text="done",
        stop="max_turns",
        denials=(Denial(tool="Bash", arguments='{"command": "rm x"}', reason="denied by a rule"),),
    )
    writer.finished(outcome)
    assert read_history(tmp_path / "t1.jsonl") == messages
    summary = read_summary(tmp_path / "t1.jsonl")
    assert summary is not None and summary.outcome == outcome and summary.header == HEADER
    end = json.loads((tmp_path / "t1.jsonl").read_text(encoding="utf-8").splitlines()[-1])
    assert end["state"] == "completed" and end["outcome"]["text"] == "done"  # data, not rendered text


def test_an_end_line_from_before_outcomes_were_data_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "t1.jsonl"
    TranscriptWriter(path).header(HEADER)
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"type": "end", "state": "failed", "result": "<task_error>boom</task_error>"}) + "\n")
    summary = read_summary(path)
    assert summary is not None and summary.outcome is not None
    assert summary.outcome.state == "failed" and summary.outcome.rendered == "<task_error>boom</task_error>"


def test_a_line_cut_short_by_a_crash_is_skipped_and_open_tool_calls_are_closed(tmp_path: Path) -> None:
    path = tmp_path / "t1.jsonl"
    writer = TranscriptWriter(path)
    writer.header(HEADER)
    writer.message(UserMessage(content="go"))
    writer.message(AssistantMessage(parts=(ToolCall(id="c1", name="Bash", arguments={"command": "make"}),)))
    with path.open("a", encoding="utf-8") as out:
        out.write('{"type": "message", "message": {"role": "tool_res')  # the crash
    history = read_history(path)
    assert len(history) == 3
    closing = history[-1]
    assert isinstance(closing, ToolResultMessage)
    assert closing.results[0].call_id == "c1" and closing.results[0].is_error
    assert closing.results[0].content == INTERRUPTED_TOOL_RESULT
    summary = read_summary(path)
    assert summary is not None and summary.outcome is None  # no end line: the server died while it ran


def test_secrets_are_redacted_from_transcript_lines(tmp_path: Path) -> None:
    writer = TranscriptWriter(tmp_path / "t.jsonl", redact=Redactor(["sk-abcdefgh"]))
    writer.header(HEADER)
    writer.message(UserMessage(content="my key is sk-abcdefgh"))
    content = (tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert "sk-abcdefgh" not in content and "[redacted]" in content


def test_thinking_context_blocks_and_compactions_survive_a_resume(tmp_path: Path) -> None:
    path = tmp_path / "t1.jsonl"
    writer = TranscriptWriter(path)
    writer.header(HEADER)
    writer.message(UserMessage(content="go", context=("<system-reminder>rules</system-reminder>",), attachments=("s",)))
    writer.message(AssistantMessage(parts=(ThinkingPart(text="", signature="sig-1"), TextPart(text="first"))))
    writer.compaction("SUMMARY", "threshold", 2)
    restart = UserMessage(content="summary follows", context=("<system-reminder>rules</system-reminder>",))
    later = AssistantMessage(
        parts=(
            ThinkingPart(text="", signature="sig-2"),
            ProviderPart(provider="anthropic", data={"type": "redacted_thinking", "data": "opaque"}),
            TextPart(text="after"),
        )
    )
    writer.message(restart)
    writer.message(later)

    assert read_history(path) == [restart, later]


def test_the_summary_reads_an_end_line_bigger_than_a_read_block(tmp_path: Path) -> None:
    """Only the first and last lines are read for a summary; the last one may be long (a whole final answer)."""
    path = tmp_path / "t1.jsonl"
    writer = TranscriptWriter(path)
    writer.header(HEADER)
    writer.message(UserMessage(content="x" * 300_000))
    answer = "".join(f"line {i}\n" for i in range(30_000))  # ~250 KB
    writer.finished(TaskOutcome(state="completed", text=answer))
    summary = read_summary(path)
    assert summary is not None and summary.header == HEADER
    assert summary.outcome is not None and summary.outcome.text == answer


def test_a_transcript_of_one_line_or_cut_in_its_end_line_has_no_outcome(tmp_path: Path) -> None:
    path = tmp_path / "t1.jsonl"
    TranscriptWriter(path).header(HEADER)
    only_header = read_summary(path)
    assert only_header is not None and only_header.header == HEADER and only_header.outcome is None
    with path.open("a", encoding="utf-8") as out:
        out.write('{"type": "end", "state": "completed", "outcome": {"state": "compl')  # the crash
    cut = read_summary(path)
    assert cut is not None and cut.header == HEADER and cut.outcome is None


def test_a_tasks_prompt_line_is_the_first_line_of_its_own_prompt_not_the_history_it_continues(
    tmp_path: Path,
) -> None:
    from mcp_subagents.tasks.files import first_line, read_task

    writer = TranscriptWriter(tmp_path / "t1.jsonl")
    writer.header(HEADER)
    writer.message(UserMessage(content="The first job\nin detail"))  # the conversation a resumed task continues
    writer.message(AssistantMessage(parts=(TextPart(text="done"),)))
    before_start = read_task(tmp_path / "t1.jsonl")
    assert before_start is not None and before_start.prompt_line == ""
    writer.running()
    writer.message(UserMessage(content="\n  Now   the second\tstep  \nwith more", context=("CLAUDE.md says...",)))
    snapshot = read_task(tmp_path / "t1.jsonl")
    assert snapshot is not None and snapshot.prompt_line == "Now the second step"
    assert first_line("x" * 200, 10) == "xxxxxxxxx…" and first_line("\n \n") == ""
