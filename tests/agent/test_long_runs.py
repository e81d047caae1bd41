"""Long runs through the whole server and the real Anthropic SDK: compaction at the threshold and on a
prompt-too-long answer, resume after a compaction, and an overload storm that the task waits out."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.agent.compaction import SUMMARY_REQUEST
from tests.fakes.fake_llm import FakeLLM, error, text, tool_use, turn
from tests.support import connected, make_settings, provider_environment, text_of, write_agent

pytestmark = pytest.mark.anyio

KEY = "sk-ant-test-longruns-0123456789"
TASK = {"description": "long", "prompt": "Work through the notes", "subagent_type": "worker"}


def environ(fake: FakeLLM) -> dict[str, str]:
    return provider_environment(fake, KEY)


def texts(message: dict[str, Any]) -> list[str]:
    return [block.get("text", "") for block in message["content"]]


def setup(tmp_path: Path, **overrides: Any) -> tuple[Any, Path]:
    settings = make_settings(tmp_path, **overrides)
    assert settings.cwd is not None
    (settings.cwd / "CLAUDE.md").write_text("LONG-RUN-RULE\n", encoding="utf-8")
    notes = settings.cwd / "notes.txt"
    notes.write_text("NOTE-CONTENT\n", encoding="utf-8")
    write_agent(settings.cwd / ".claude" / "agents", "worker", extra="tools: Read\n")
    return settings, notes


def task_id_of(result_text: str) -> str:
    return result_text.split("task_id: ")[1].split(";")[0]


async def test_a_run_past_the_threshold_is_summarised_recorded_and_resumable(tmp_path: Path, fake: FakeLLM) -> None:
    settings, notes = setup(tmp_path, compact_threshold=1000)
    fake.push(
        turn(tool_use("Read", {"file_path": str(notes)}), input_tokens=900, output_tokens=200),
        turn(text("SUMMARY-E2E: read notes.txt, it says NOTE-CONTENT.")),
        turn(text("Finished after the summary.")),
        turn(text("Resumed fine.")),
    )

    async with connected(settings, environ=environ(fake)) as client:
        first = await client.call_tool("Task", TASK)
        task_id = task_id_of(text_of(first))
        resumed = await client.call_tool("Task", {**TASK, "prompt": "One more thing", "resume": task_id})

    assert not first.is_error and "Finished after the summary." in text_of(first)
    summary_request, after, resume_request = (r["body"] for r in fake.requests[1:])
    assert summary_request["tool_choice"] == {"type": "none"}
    assert texts(summary_request["messages"][-1])[-1] == SUMMARY_REQUEST
    assert summary_request["thinking"] == {"type": "adaptive", "display": "omitted"}
    [restart] = after["messages"]
    blocks = texts(restart)
    assert "LONG-RUN-RULE" in blocks[0]  # the context survives the summary
    assert "SUMMARY-E2E" in blocks[-1]
    assert [block["type"] for block in restart["content"]] == ["text"] * len(blocks)  # the tool round is gone
    transcript = settings.state_dir / "tasks" / f"{task_id}.jsonl"
    entries = [json.loads(line) for line in transcript.read_text(encoding="utf-8").splitlines()]
    [compaction] = [entry for entry in entries if entry["type"] == "compaction"]
    assert compaction["reason"] == "threshold" and compaction["replaced"] == 3
    assert compaction["summary"].startswith("SUMMARY-E2E")
    output = (settings.state_dir / "tasks" / f"{task_id}.output").read_text(encoding="utf-8")
    assert "conversation of 3 messages summarised (it passed the compaction threshold)" in output

    assert not resumed.is_error and "Resumed fine." in text_of(resumed)
    history = resume_request["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert "SUMMARY-E2E" in texts(history[0])[-1] and "LONG-RUN-RULE" in texts(history[0])[0]
    assert texts(history[2]) == ["One more thing"]


async def test_a_prompt_too_long_answer_is_summarised_and_asked_again(tmp_path: Path, fake: FakeLLM) -> None:
    settings, notes = setup(tmp_path)
    fake.push(
        turn(tool_use("Read", {"file_path": str(notes)})),
        error(400, message="prompt is too long: 1000123 tokens > 1000000 maximum"),
        turn(text("SUMMARY-PTL")),
        turn(text("Done despite the long prompt.")),
    )

    async with connected(settings, environ=environ(fake)) as client:
        result = await client.call_tool("Task", TASK)

    assert not result.is_error and "Done despite the long prompt." in text_of(result)
    assert len(fake.requests) == 4
    assert texts(fake.requests[2]["body"]["messages"][-1])[-1] == SUMMARY_REQUEST
    assert "SUMMARY-PTL" in texts(fake.requests[3]["body"]["messages"][0])[-1]


async def test_an_overload_storm_is_waited_out(tmp_path: Path, fake: FakeLLM) -> None:
    """In Claude Code 2.1.328 a subagent retried 11 times over 188 s; here five 529s ended a task in a second."""
    settings, _ = setup(tmp_path)
    fast = {"retry-after-ms": "1"}
    fake.push(*[error(529, message="FAKE-529 Overloaded", headers=fast)] * 6, turn(text("Worked after the storm.")))

    async with connected(settings, environ=environ(fake)) as client:
        result = await client.call_tool("Task", TASK)

    assert not result.is_error, text_of(result)
    assert "Worked after the storm." in text_of(result)
    assert len(fake.requests) == 7


def without_breakpoints(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **message,
            "content": [{k: v for k, v in block.items() if k != "cache_control"} for block in message["content"]],
        }
        for message in messages
    ]


async def test_every_request_of_a_long_task_carries_the_whole_conversation(tmp_path: Path, fake: FakeLLM) -> None:
    """The adapter keeps the final turns encoded from one request to the next: each request must still send every
    turn so far, unchanged, with the one cache breakpoint on the last block; a retried request sends the same."""
    settings, notes = setup(tmp_path)
    reads = [turn(tool_use("Read", {"file_path": str(notes)}, id=f"toolu_{n:03d}")) for n in range(30)]
    fake.push(*reads[:15], error(529, message="Overloaded", headers={"retry-after-ms": "1"}), *reads[15:])
    fake.push(turn(text("Read it thirty times.")))

    async with connected(settings, environ=environ(fake)) as client:
        result = await client.call_tool("Task", TASK)

    assert not result.is_error and "Read it thirty times." in text_of(result)
    sent = [entry["body"]["messages"] for entry in fake.requests]
    assert len(sent) == 32 and sent[15] == sent[16]  # the overloaded request, and its retry
    del sent[15]
    for number, (before, after) in enumerate(itertools.pairwise(sent)):
        assert without_breakpoints(after[:-2]) == without_breakpoints(before)
        call, results = after[-2:]
        assert call == {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": f"toolu_{number:03d}", "name": "Read", "input": {"file_path": str(notes)}}
            ],
        }
        assert [block["tool_use_id"] for block in results["content"]] == [f"toolu_{number:03d}"]
        assert "NOTE-CONTENT" in results["content"][0]["content"]
        assert json.dumps(after).count("cache_control") == 1
        assert results["content"][-1]["cache_control"] == {"type": "ephemeral"}
