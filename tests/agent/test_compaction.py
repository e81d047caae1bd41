"""Compaction: a conversation past the threshold, or refused as too long, is summarised and the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.agent.compaction import SUMMARY_REQUEST, summary_messages
from mcp_subagents.agent.loop import AgentRun, Compacted, MessageAppended, RunEvent, run_agent
from mcp_subagents.core.errors import PromptTooLongError, RunError
from mcp_subagents.core.messages import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from mcp_subagents.models.base import ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from mcp_subagents.tools.base import Tool, ToolContext, ToolInput

pytestmark = pytest.mark.anyio

FIRST = UserMessage(content="Fix the bug", context=("<system-reminder>CLAUDE.md rules</system-reminder>",))


class NoteInput(ToolInput):
    value: str


async def _note(_ctx: ToolContext, args: NoteInput) -> str:
    return f"noted {args.value}"


NOTE = Tool(name="Note", description="note", input_model=NoteInput, run=_note, read_only=True)


def make_run(tmp_path: Path, *, threshold: int | None) -> AgentRun:
    return AgentRun(
        agent="worker",
        system="You work.",
        model_id="claude-test",
        tools={"Note": NOTE},
        context=ToolContext(cwd=tmp_path, allowed_roots=(tmp_path,), env={}),
        compact_threshold=threshold,
        thinking=True,
        effort="high",
    )


def big_call(value: str, *, tokens: int) -> ModelResponse:
    call = tool_call("Note", {"value": value})
    return ModelResponse(parts=call.parts, stop_reason="tool_use", usage=Usage(input_tokens=tokens, output_tokens=10))


def summary(content: str) -> ModelResponse:
    return ModelResponse(parts=(TextPart(text=content),), stop_reason="end_turn", usage=Usage(input_tokens=7))


async def test_passing_the_threshold_summarises_and_the_run_goes_on_from_the_summary(tmp_path: Path) -> None:
    model = ScriptedModel([big_call("a", tokens=50), big_call("b", tokens=95), summary("SUMMARY-1"), text("done")])
    events: list[RunEvent] = []

    async def record(event: RunEvent) -> None:
        events.append(event)

    result = await run_agent(make_run(tmp_path, threshold=100), FIRST, model=model, on_event=record)

    assert result.text == "done" and result.stop == "completed"
    assert len(model.requests) == 4
    ask_summary = model.requests[2]
    assert ask_summary.tool_choice == "none"
    assert ask_summary.messages[-1] == UserMessage(content=SUMMARY_REQUEST)
    before = model.requests[1].messages
    assert ask_summary.messages[: len(before)] == before
    assert [type(m) for m in ask_summary.messages[len(before) : -1]] == [AssistantMessage, ToolResultMessage]
    assert (ask_summary.thinking, ask_summary.effort, ask_summary.system) == (True, "high", "You work.")
    after = model.requests[3].messages
    assert len(after) == 1
    restart = after[0]
    assert isinstance(restart, UserMessage)
    assert restart.context == FIRST.context
    assert "SUMMARY-1" in restart.content and "Continue the task" in restart.content
    compacted = [e for e in events if isinstance(e, Compacted)]
    assert len(compacted) == 1
    assert compacted[0].reason == "threshold" and compacted[0].summary == "SUMMARY-1"
    assert compacted[0].replaced == 5
    following = events[events.index(compacted[0]) + 1]
    assert isinstance(following, MessageAppended) and following.message == restart
    assert result.usage.input_tokens == 50 + 95 + 7 + 10


async def test_below_the_threshold_nothing_is_summarised(tmp_path: Path) -> None:
    model = ScriptedModel([big_call("a", tokens=50), big_call("b", tokens=60), text("done")])

    await run_agent(make_run(tmp_path, threshold=1000), FIRST, model=model)

    assert all(request.tool_choice == "auto" for request in model.requests)


async def test_a_prompt_too_long_answer_summarises_and_asks_again(tmp_path: Path) -> None:
    too_long = PromptTooLongError("prompt is too long: 1100000 tokens > 1000000 maximum", status_code=400)
    model = ScriptedModel([big_call("a", tokens=50), too_long, summary("SUMMARY-2"), text("done")])

    result = await run_agent(make_run(tmp_path, threshold=None), FIRST, model=model)

    assert result.text == "done"
    assert result.turns == 2
    assert model.requests[2].messages[-1] == UserMessage(content=SUMMARY_REQUEST)
    restart = model.requests[3].messages[0]
    assert isinstance(restart, UserMessage) and "SUMMARY-2" in restart.content


async def test_a_summary_request_that_is_too_long_is_shrunk_until_it_fits(tmp_path: Path) -> None:
    too_long = PromptTooLongError("prompt is too long", status_code=400)
    model = ScriptedModel([big_call("a" * 5000, tokens=50), too_long, too_long, summary("S"), text("done")])

    result = await run_agent(make_run(tmp_path, threshold=None), FIRST, model=model)

    assert result.text == "done"
    second_try = model.requests[3].messages
    results = [m for m in second_try if isinstance(m, ToolResultMessage)]
    assert results and len(results[0].results[0].content) < 2200


async def test_a_prompt_that_never_fits_ends_the_run_clearly(tmp_path: Path) -> None:
    too_long = PromptTooLongError("prompt is too long", status_code=400)
    model = ScriptedModel([too_long])

    with pytest.raises(RunError, match="no longer fits the model's context window"):
        await run_agent(make_run(tmp_path, threshold=None), FIRST, model=model)


def test_shrinking_drops_older_turns_but_never_orphans_tool_results() -> None:
    def turn(n: int) -> list[AssistantMessage | ToolResultMessage]:
        return [
            AssistantMessage(parts=(ToolCall(id=f"c{n}", name="Note", arguments={"value": "x"}),)),
            ToolResultMessage(results=(ToolResult(call_id=f"c{n}", content="r"),)),
        ]

    conversation = [FIRST, *(m for n in range(6) for m in turn(n))]
    for shrink in range(4):
        messages = summary_messages(conversation, shrink=shrink)
        assert messages[0] == FIRST if shrink == 0 else isinstance(messages[0], UserMessage)
        assert messages[-1] == UserMessage(content=SUMMARY_REQUEST)
        body = messages[1:-1]
        assert isinstance(body[0], AssistantMessage)
        calls = {c.id for m in body if isinstance(m, AssistantMessage) for c in m.tool_calls}
        answered = {r.call_id for m in body if isinstance(m, ToolResultMessage) for r in m.results}
        assert answered == calls
    assert len(summary_messages(conversation, shrink=3)) < len(summary_messages(conversation, shrink=1))


async def test_a_context_still_over_the_threshold_is_not_summarised_again_at_once(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            big_call("a", tokens=500),
            summary("S1"),
            big_call("b", tokens=500),  # the summary plus a huge first message is still over the threshold
            big_call("c", tokens=500),
            summary("S2"),
            text("done"),
        ]
    )

    result = await run_agent(make_run(tmp_path, threshold=100), FIRST, model=model)

    assert result.text == "done"
    asked = [request.tool_choice for request in model.requests]
    assert asked == ["auto", "none", "auto", "auto", "none", "auto"]
