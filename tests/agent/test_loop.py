from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent.loop import (
    CUT_OFF_TOOL_CALL_NOTICE,
    AgentRun,
    ModelResponded,
    RunEvent,
    ToolFinished,
    ToolStarted,
    TurnStarted,
    run_agent,
)
from mcp_subagents.core.errors import ModelAPIError, ModelRefusalError, RunError, ToolError
from mcp_subagents.core.hook_points import HookPermission
from mcp_subagents.core.messages import AssistantMessage, TextPart, ToolCall, ToolResultMessage, Usage, UserMessage
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call, tool_calls
from mcp_subagents.tools.base import Tool, ToolContext, ToolInput

pytestmark = pytest.mark.anyio


class EchoInput(ToolInput):
    value: str


def make_tool(
    name: str, *, read_only: bool = True, run: Callable[[ToolContext, EchoInput], Awaitable[str]] | None = None
) -> Tool:
    async def default_run(_ctx: ToolContext, args: EchoInput) -> str:
        return f"{name}:{args.value}"

    return Tool(
        name=name, description=f"{name} tool", input_model=EchoInput, run=run or default_run, read_only=read_only
    )


def make_run(tmp_path: Path, *tools: Tool, max_turns: int = 10) -> AgentRun:
    return AgentRun(
        agent="tester",
        system="You test.",
        model_id="claude-test",
        tools={t.name: t for t in tools},
        context=ToolContext(cwd=tmp_path, allowed_roots=(tmp_path,), env={}),
        max_turns=max_turns,
    )


async def test_a_text_reply_ends_the_run_with_that_text(tmp_path: Path) -> None:
    model = ScriptedModel([text("all done")])
    result = await run_agent(make_run(tmp_path), "do it", model=model)
    assert result.text == "all done"
    assert result.stop == "completed"
    assert result.turns == 1
    assert model.requests[0].system == "You test."
    assert model.requests[0].messages == (UserMessage(content="do it"),)


async def test_tool_result_is_fed_back_before_the_final_answer(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("echo", {"value": "hi"}, id="c1"), text("got it")])
    result = await run_agent(make_run(tmp_path, make_tool("echo")), "go", model=model)
    assert result.text == "got it"
    assert result.tool_uses == 1
    last = model.requests[1].messages[-1]
    assert isinstance(last, ToolResultMessage)
    assert last.results[0].call_id == "c1"
    assert last.results[0].content == "echo:hi"
    assert not last.results[0].is_error
    model.assert_complete()


async def test_usage_is_summed_over_turns(tmp_path: Path) -> None:
    first = ModelResponse(
        parts=(ToolCall(id="a", name="echo", arguments={"value": "x"}),),
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=5, cache_creation_tokens=100),
    )
    second = ModelResponse(
        parts=(TextPart(text="ok"),),
        stop_reason="end_turn",
        usage=Usage(input_tokens=3, output_tokens=7, cache_read_tokens=100),
    )
    result = await run_agent(make_run(tmp_path, make_tool("echo")), "go", model=ScriptedModel([first, second]))
    assert result.usage == Usage(input_tokens=13, output_tokens=12, cache_creation_tokens=100, cache_read_tokens=100)


async def test_invalid_arguments_become_an_error_result_the_model_reads(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("echo", {"wrong": 1}, id="c1"), text("sorry")])
    result = await run_agent(make_run(tmp_path, make_tool("echo")), "go", model=model)
    assert result.text == "sorry"
    tool_result = model.requests[1].messages[-1]
    assert isinstance(tool_result, ToolResultMessage)
    assert tool_result.results[0].is_error
    assert "value" in tool_result.results[0].content and "wrong" in tool_result.results[0].content


async def test_unknown_tool_and_crashing_tool_do_not_crash_the_run(tmp_path: Path) -> None:
    async def boom(_ctx: ToolContext, _args: EchoInput) -> str:
        raise ValueError("kaput")

    async def refuse(_ctx: ToolContext, _args: EchoInput) -> str:
        raise ToolError("not allowed here")

    model = ScriptedModel(
        [
            tool_calls(("nope", {}, "c1"), ("boom", {"value": "v"}, "c2"), ("refuse", {"value": "v"}, "c3")),
            text("done"),
        ]
    )
    run = make_run(tmp_path, make_tool("boom", run=boom), make_tool("refuse", run=refuse))
    result = await run_agent(run, "go", model=model)
    assert result.text == "done"
    results = model.requests[1].messages[-1]
    assert isinstance(results, ToolResultMessage)
    assert [r.is_error for r in results.results] == [True, True, True]
    assert "no tool named 'nope'" in results.results[0].content
    assert "ValueError: kaput" in results.results[1].content
    assert results.results[2].content == "Error: not allowed here"


async def test_read_only_calls_in_one_turn_run_concurrently_and_keep_call_order(tmp_path: Path) -> None:
    both_started = anyio.Event()
    started: list[str] = []

    async def slow(_ctx: ToolContext, args: EchoInput) -> str:
        started.append(args.value)
        if len(started) == 2:
            both_started.set()
        with anyio.fail_after(5):
            await both_started.wait()  # only finishes if the other call runs at the same time
        return args.value

    model = ScriptedModel(
        [
            tool_calls(("slow", {"value": "first"}, "c1"), ("slow", {"value": "second"}, "c2")),
            text("done"),
        ]
    )
    await run_agent(make_run(tmp_path, make_tool("slow", run=slow)), "go", model=model)
    results = model.requests[1].messages[-1]
    assert isinstance(results, ToolResultMessage)
    assert [(r.call_id, r.content) for r in results.results] == [("c1", "first"), ("c2", "second")]


async def test_writing_calls_run_one_after_another_in_order(tmp_path: Path) -> None:
    order: list[str] = []

    async def record(_ctx: ToolContext, args: EchoInput) -> str:
        order.append(f"start {args.value}")
        await anyio.lowlevel.checkpoint()
        order.append(f"end {args.value}")
        return args.value

    model = ScriptedModel(
        [
            tool_calls(("write", {"value": "a"}, None), ("write", {"value": "b"}, None)),
            text("done"),
        ]
    )
    await run_agent(make_run(tmp_path, make_tool("write", read_only=False, run=record)), "go", model=model)
    assert order == ["start a", "end a", "start b", "end b"]


async def test_turn_limit_ends_the_run_with_the_text_so_far(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            tool_call("echo", {"value": "1"}, say="looking at one"),
            tool_call("echo", {"value": "2"}, say="looking at two"),
        ]
    )
    result = await run_agent(make_run(tmp_path, make_tool("echo"), max_turns=2), "go", model=model)
    assert result.stop == "max_turns"
    assert result.turns == 2
    assert result.text == "looking at two"
    model.assert_complete()


async def test_a_cut_off_tool_call_is_never_run(tmp_path: Path) -> None:
    ran: list[str] = []

    async def record(_ctx: ToolContext, args: EchoInput) -> str:
        ran.append(args.value)
        return "ran"

    cut = ModelResponse(
        parts=(TextPart(text="writing"), ToolCall(id="c1", name="w", arguments={"value": "half"})),
        stop_reason="max_tokens",
    )
    model = ScriptedModel([cut, text("recovered")])
    result = await run_agent(make_run(tmp_path, make_tool("w", run=record)), "go", model=model)
    assert ran == []
    assert result.text == "recovered"
    followup = model.requests[1].messages
    assert followup[-2] == AssistantMessage(parts=(TextPart(text="writing"),))
    assert followup[-1] == UserMessage(content=CUT_OFF_TOOL_CALL_NOTICE)


async def test_text_cut_at_max_tokens_is_returned_and_marked(tmp_path: Path) -> None:
    result = await run_agent(make_run(tmp_path), "go", model=ScriptedModel([text("partial", stop_reason="max_tokens")]))
    assert (result.text, result.stop) == ("partial", "max_tokens")


async def test_refusal_ends_the_run_with_a_clear_error(tmp_path: Path) -> None:
    refusal = ModelResponse(parts=(), stop_reason="refusal", refusal_explanation="policy")
    with pytest.raises(ModelRefusalError, match="refused to continue: policy"):
        await run_agent(make_run(tmp_path), "go", model=ScriptedModel([refusal]))


async def test_a_full_context_window_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="context window"):
        await run_agent(
            make_run(tmp_path), "go", model=ScriptedModel([ModelResponse(parts=(), stop_reason="context_window")])
        )


async def test_provider_errors_propagate(tmp_path: Path) -> None:
    with pytest.raises(ModelAPIError, match="overloaded"):
        await run_agent(make_run(tmp_path), "go", model=ScriptedModel([ModelAPIError("overloaded")]))


async def test_events_describe_each_turn_and_tool_call(tmp_path: Path) -> None:
    events: list[RunEvent] = []

    async def collect(event: RunEvent) -> None:
        events.append(event)

    model = ScriptedModel([tool_call("echo", {"value": "v"}, id="c1"), text("done")])
    await run_agent(make_run(tmp_path, make_tool("echo")), "go", model=model, on_event=collect)
    kinds = [type(e) for e in events if not type(e).__name__ == "MessageAppended"]
    assert kinds == [TurnStarted, ModelResponded, ToolStarted, ToolFinished, TurnStarted, ModelResponded]


async def test_history_is_sent_before_the_new_prompt(tmp_path: Path) -> None:
    history = [UserMessage(content="earlier"), AssistantMessage(parts=(TextPart(text="earlier answer"),))]
    model = ScriptedModel([text("continued")])
    result = await run_agent(make_run(tmp_path), "and now", model=model, history=history)
    assert model.requests[0].messages == (*history, UserMessage(content="and now"))
    assert len(result.messages) == 4


async def test_a_gate_can_deny_a_call(tmp_path: Path) -> None:
    async def deny(call: ToolCall, _tool: Tool, _hint: HookPermission) -> None:
        raise ToolError(f"{call.name} denied by rule")

    run = make_run(tmp_path, make_tool("echo"))
    run = replace(run, gate=deny)
    model = ScriptedModel([tool_call("echo", {"value": "v"}), text("ok")])
    await run_agent(run, "go", model=model)
    results = model.requests[1].messages[-1]
    assert isinstance(results, ToolResultMessage)
    assert results.results[0].content == "Error: echo denied by rule"


async def test_scripted_function_steps_see_the_request(tmp_path: Path) -> None:
    def answer(request: ModelRequest) -> ModelResponse:
        return text(f"{len(request.tools)} tools")

    result = await run_agent(make_run(tmp_path, make_tool("a"), make_tool("b")), "go", model=ScriptedModel([answer]))
    assert result.text == "2 tools"
