"""`run_agent`: the one tool-use loop. Knows nothing of MCP or of any provider SDK."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

import anyio

from .errors import ModelRefusalError, RunError, ToolError
from .messages import (
    AssistantMessage,
    Message,
    TextPart,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .models.base import Model, ModelRequest, ModelResponse
from .tools.base import Tool, ToolContext, safe_text

logger = logging.getLogger(__name__)

MAX_TOOL_RESULT_CHARS = 100_000
CUT_OFF_TOOL_CALL_NOTICE = (
    "Your last response hit the output token limit while writing a tool call, so the call was not run. "
    "Continue the task; keep each tool call's input smaller (for example, write a large file in several steps)."
)

ToolGate = Callable[[ToolCall, Tool], Awaitable[None]]
"""Called before each tool runs; raises `ToolError` to deny the call (the model reads why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRun:
    """Everything one run needs, resolved from the definition, the Task call and the settings."""

    agent: str
    system: str
    model_id: str
    tools: Mapping[str, Tool]
    context: ToolContext
    max_turns: int = 50
    max_tokens: int = 16_384
    gate: ToolGate | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    turn: int
    max_turns: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponded:
    turn: int
    message: AssistantMessage
    usage: Usage
    stop_reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStarted:
    turn: int
    call: ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFinished:
    turn: int
    call: ToolCall
    result: ToolResult
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAppended:
    """Every message added to the conversation, in order; the transcript is built from these."""

    message: Message


RunEvent: TypeAlias = TurnStarted | ModelResponded | ToolStarted | ToolFinished | MessageAppended
EventHandler = Callable[[RunEvent], Awaitable[None]]

StopKind: TypeAlias = Literal["completed", "max_turns", "max_tokens"]


@dataclass(slots=True, kw_only=True)
class RunResult:
    text: str
    stop: StopKind
    messages: list[Message]
    usage: Usage
    turns: int
    tool_uses: int
    duration_s: float


@dataclass(slots=True)
class _RunState:
    messages: list[Message]
    on_event: EventHandler
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_uses: int = 0
    last_text: str = ""
    started: float = field(default_factory=time.monotonic)

    async def append(self, message: Message) -> None:
        self.messages.append(message)
        await self.on_event(MessageAppended(message=message))

    def result(self, stop: StopKind, text: str | None = None) -> RunResult:
        return RunResult(
            text=self.last_text if text is None else text,
            stop=stop,
            messages=self.messages,
            usage=self.usage,
            turns=self.turns,
            tool_uses=self.tool_uses,
            duration_s=time.monotonic() - self.started,
        )


async def _ignore(_: RunEvent) -> None:
    return None


async def run_agent(
    run: AgentRun,
    prompt: str,
    *,
    model: Model,
    history: Sequence[Message] = (),
    on_event: EventHandler | None = None,
) -> RunResult:
    """Loop model request -> tool calls -> tool results until the model answers without tools.

    Raises:
        ModelAPIError: the provider failed after its retries.
        ModelRefusalError: the model refused.
        RunError: the run cannot go on (context window full).
    """
    state = _RunState(messages=list(history), on_event=on_event or _ignore)
    await state.append(UserMessage(content=prompt))
    definitions = tuple(tool.definition() for tool in run.tools.values())
    while state.turns < run.max_turns:
        state.turns += 1
        await state.on_event(TurnStarted(turn=state.turns, max_turns=run.max_turns))
        request = ModelRequest(
            model=run.model_id,
            system=run.system,
            messages=tuple(state.messages),
            tools=definitions,
            max_tokens=run.max_tokens,
        )
        response = await model.request(request)
        state.usage += response.usage
        message = _assistant_message(response)
        await state.on_event(
            ModelResponded(turn=state.turns, message=message, usage=response.usage, stop_reason=response.stop_reason)
        )
        if message.text.strip():
            state.last_text = message.text
        _raise_for_stop(response)
        if response.stop_reason == "max_tokens":
            if not message.tool_calls:
                await state.append(message)
                return state.result("max_tokens")
            await state.append(AssistantMessage(parts=tuple(p for p in message.parts if isinstance(p, TextPart))))
            await state.append(UserMessage(content=CUT_OFF_TOOL_CALL_NOTICE))
            continue
        await state.append(message)
        if not message.tool_calls:
            return state.result("completed", message.text)
        results = await _run_tool_calls(run, message.tool_calls, state)
        await state.append(ToolResultMessage(results=results))
    return state.result("max_turns")


def _assistant_message(response: ModelResponse) -> AssistantMessage:
    parts = tuple(p for p in response.parts if not (isinstance(p, TextPart) and not p.text))
    return AssistantMessage(parts=parts)


def _raise_for_stop(response: ModelResponse) -> None:
    if response.stop_reason == "refusal":
        why = f": {response.refusal_explanation}" if response.refusal_explanation else ""
        raise ModelRefusalError(f"The model refused to continue{why}")
    if response.stop_reason == "context_window":
        raise RunError("The conversation no longer fits the model's context window; start a new task with less input.")


async def _run_tool_calls(run: AgentRun, calls: Sequence[ToolCall], state: _RunState) -> tuple[ToolResult, ...]:
    """Run calls in order; consecutive read-only calls run concurrently. Results keep call order."""
    results: list[ToolResult | None] = [None] * len(calls)

    async def run_one(index: int) -> None:
        results[index] = await _run_tool_call(run, calls[index], state)

    index = 0
    while index < len(calls):
        batch_end = index + 1
        if _is_read_only(run, calls[index]):
            while batch_end < len(calls) and _is_read_only(run, calls[batch_end]):
                batch_end += 1
        if batch_end - index == 1:
            await run_one(index)
        else:
            async with anyio.create_task_group() as group:
                for i in range(index, batch_end):
                    group.start_soon(run_one, i)
        index = batch_end
    return tuple(r for r in results if r is not None)


def _is_read_only(run: AgentRun, call: ToolCall) -> bool:
    tool = run.tools.get(call.name)
    return tool is not None and tool.read_only


async def _run_tool_call(run: AgentRun, call: ToolCall, state: _RunState) -> ToolResult:
    state.tool_uses += 1
    await state.on_event(ToolStarted(turn=state.turns, call=call))
    started = time.monotonic()
    content, is_error = await _invoke(run, call)
    if len(content) > MAX_TOOL_RESULT_CHARS:
        content = f"{content[:MAX_TOOL_RESULT_CHARS]}\n[Output truncated: {len(content)} characters in all.]"
    result = ToolResult(call_id=call.id, content=content, is_error=is_error)
    await state.on_event(
        ToolFinished(turn=state.turns, call=call, result=result, duration_s=time.monotonic() - started)
    )
    return result


async def _invoke(run: AgentRun, call: ToolCall) -> tuple[str, bool]:
    tool = run.tools.get(call.name)
    if tool is None:
        available = ", ".join(run.tools) or "none"
        return f"Error: no tool named '{call.name}' is available to this agent. Available tools: {available}", True
    try:
        arguments = tool.validate(call.arguments)
        if run.gate is not None:
            await run.gate(call, tool)
        return safe_text(await tool.run(run.context, arguments)), False
    except ToolError as exc:
        return f"Error: {safe_text(exc.message)}", True
    except Exception as exc:
        logger.exception("tool %s crashed in agent %s", call.name, run.agent)
        return f"Error: {call.name} failed unexpectedly: {type(exc).__name__}: {exc}", True
