"""`run_agent`: the one tool-use loop. Knows nothing of MCP or of any provider SDK."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, cast

import anyio

from ..core.errors import ModelRefusalError, PromptTooLongError, RunError, StopRunError, ToolError
from ..core.hook_points import RunHooks, ToolGate
from ..core.messages import (
    AssistantMessage,
    AssistantPart,
    JsonObject,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ..core.names import EffortLevel
from ..core.well_formed import well_formed, well_formed_values
from ..models.base import ConversationMemo, Model, ModelRequest, ModelResponse
from ..tools.base import MAX_TOOL_RESULT_CHARS, Tool, ToolContext, ToolInput, safe_text, structured_response
from .compaction import continuation_message, summary_messages

logger = logging.getLogger(__name__)

MAX_SUMMARY_ATTEMPTS = 4
CONTEXT_FULL = "The conversation no longer fits the model's context window; start a new task with less input."
CUT_OFF_TOOL_CALL_NOTICE = (
    "Your last response hit the output token limit while writing a tool call, so the call was not run. "
    "Continue the task; keep each tool call's input smaller (for example, write a large file in several steps)."
)

"""Called before each tool runs, with a PreToolUse hook's permission decision; raises `ToolError` to deny the call
(the model reads why), `StopRunError` to deny it and end the run. Returns replacement arguments (a PermissionRequest
hook's `updatedInput`), or None."""
HOOK_STOPPED_CALL = "Not run: a hook stopped the agent before this call."


class CallWatch(Protocol):
    async def before_call(self, tool: str, arguments: JsonObject, cwd: Path) -> None: ...


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
    thinking: bool = False
    """Adaptive thinking on every request (where the provider has it)."""
    effort: EffortLevel | None = None
    compact_threshold: int | None = None
    """Summarise the conversation once a request's input plus output reaches this many tokens; None: only when the
    provider answers that the prompt is too long."""
    hooks: RunHooks | None = None
    """PreToolUse/PostToolUse around each call, SubagentStop before the agent stops."""
    unavailable_tools: Mapping[str, str] = field(default_factory=lambda: {})
    """Why tools under a name prefix are missing (an MCP server that did not start): the model reads it when it
    calls one."""
    watch: CallWatch | None = None
    """Told of each call just before it runs (the changed-files list remembers what a call is about to write)."""


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
class Compacted:
    """The conversation was replaced by a summary; the next `MessageAppended` is the message that starts it anew."""

    turn: int
    reason: Literal["threshold", "prompt_too_long"]
    summary: str
    replaced: int
    """How many messages the summary replaced."""
    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageAppended:
    """Every message added to the conversation, in order; the transcript is built from these."""

    message: Message


RunEvent: TypeAlias = TurnStarted | ModelResponded | ToolStarted | ToolFinished | MessageAppended | Compacted
EventHandler = Callable[[RunEvent], Awaitable[None]]

StopKind: TypeAlias = Literal["completed", "max_turns", "max_tokens", "hook_stopped"]


@dataclass(slots=True, kw_only=True)
class RunResult:
    text: str
    stop: StopKind
    messages: list[Message]
    usage: Usage
    turns: int
    tool_uses: int
    duration_s: float
    stop_reason: str | None = None
    """hook_stopped: the `stopReason` the hook gave."""


@dataclass(slots=True)
class _RunState:
    messages: list[Message]
    on_event: EventHandler
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    tool_uses: int = 0
    last_text: str = ""
    started: float = field(default_factory=time.monotonic)
    context_tokens: int = 0
    """Input plus output tokens of the latest model request: how full the context window is."""
    compacted_at: int | None = None
    """The turn of the latest compaction."""
    stop_reason: str | None = None
    """A hook said `continue: false`: the run ends once the current tool calls are answered."""
    continued_by_hook: bool = False
    """A SubagentStop hook has kept the agent from stopping at least once."""
    memo: ConversationMemo = field(default_factory=ConversationMemo)
    """What the model's adapter keeps of the conversation from one turn's request to the next."""

    def should_compact(self, threshold: int | None) -> bool:
        # Right after a summary the context may still be over the threshold (a huge CLAUDE.md, say): summarising
        # again would shrink nothing, so at least two turns must pass first.
        recent = self.compacted_at is not None and self.turns - self.compacted_at < 2
        return threshold is not None and self.context_tokens >= threshold and not recent

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
            stop_reason=self.stop_reason,
        )


async def _ignore(_: RunEvent) -> None:
    return None


async def run_agent(
    run: AgentRun,
    prompt: str | UserMessage | None,
    *,
    model: Model,
    history: Sequence[Message] = (),
    on_event: EventHandler | None = None,
    turns_done: int = 0,
) -> RunResult:
    """Loop model request -> tool calls -> tool results until the model answers without tools.

    `prompt` is the next user message: plain text, or a message that carries context blocks (a new run's first);
    None goes on from `history` as it stands (a run another server began, whose last message is the user's; the
    `turns_done` it made there count against `max_turns`).

    Raises:
        ModelAPIError: the provider failed after its retries.
        ModelRefusalError: the model refused.
        RunError: the run cannot go on (context window full even after compaction).
    """
    state = _RunState(messages=list(history), on_event=on_event or _ignore, turns=turns_done)
    if prompt is not None:
        await state.append(prompt if isinstance(prompt, UserMessage) else UserMessage(content=prompt))
    definitions = tuple(tool.definition() for tool in run.tools.values())
    while state.turns < run.max_turns:
        if state.should_compact(run.compact_threshold):
            await _compact(run, model, definitions, state, "threshold")
        state.turns += 1
        await state.on_event(TurnStarted(turn=state.turns, max_turns=run.max_turns))
        response = await _request_fitting_the_window(run, model, definitions, state)
        state.usage += response.usage
        state.context_tokens = response.usage.total_tokens
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
            await state.append(AssistantMessage(parts=tuple(p for p in message.parts if not isinstance(p, ToolCall))))
            await state.append(UserMessage(content=CUT_OFF_TOOL_CALL_NOTICE))
            continue
        await state.append(message)
        if not message.tool_calls:
            go_on = await _before_stop(run, state, message.text)
            if go_on is None:
                return state.result("hook_stopped" if state.stop_reason else "completed", message.text)
            await state.append(UserMessage(content=go_on))
            continue
        results = await _run_tool_calls(run, message.tool_calls, state)
        await state.append(ToolResultMessage(results=results))
        if state.stop_reason is not None:
            return state.result("hook_stopped")
    return state.result("max_turns")


async def _before_stop(run: AgentRun, state: _RunState, text: str) -> str | None:
    """SubagentStop: None lets the agent stop; a text is its next instruction (a hook kept it going)."""
    if run.hooks is None:
        return None
    answer = await run.hooks.before_stop(text, continued=state.continued_by_hook)
    if answer.stop is not None:
        state.stop_reason = answer.stop
        return None
    if answer.go_on is None:
        return None
    state.continued_by_hook = True
    return answer.go_on


def _request(
    run: AgentRun,
    definitions: tuple[ToolDefinition, ...],
    messages: Sequence[Message],
    tool_choice: Literal["auto", "none"] = "auto",
    memo: ConversationMemo | None = None,
) -> ModelRequest:
    return ModelRequest(
        model=run.model_id,
        system=run.system,
        messages=tuple(messages),
        tools=definitions,
        max_tokens=run.max_tokens,
        thinking=run.thinking,
        effort=run.effort,
        tool_choice=tool_choice,
        memo=memo,
    )


async def _request_fitting_the_window(
    run: AgentRun, model: Model, definitions: tuple[ToolDefinition, ...], state: _RunState
) -> ModelResponse:
    """The turn's model request; a "prompt is too long" answer compacts the conversation and asks once more."""
    try:
        return await model.request(_request(run, definitions, state.messages, memo=state.memo))
    except PromptTooLongError:
        if len(state.messages) <= 1:
            raise RunError(CONTEXT_FULL) from None
    await _compact(run, model, definitions, state, "prompt_too_long")
    try:
        return await model.request(_request(run, definitions, state.messages, memo=state.memo))
    except PromptTooLongError:
        raise RunError(CONTEXT_FULL) from None


async def _compact(
    run: AgentRun,
    model: Model,
    definitions: tuple[ToolDefinition, ...],
    state: _RunState,
    reason: Literal["threshold", "prompt_too_long"],
) -> None:
    """Replace the conversation with a summary the model writes of it."""
    usage = Usage()
    response: ModelResponse | None = None
    for shrink in range(MAX_SUMMARY_ATTEMPTS):
        request = _request(run, definitions, summary_messages(state.messages, shrink=shrink), tool_choice="none")
        try:
            response = await model.request(request)
            break
        except PromptTooLongError:
            continue
    if response is None:
        raise RunError(CONTEXT_FULL)
    usage += response.usage
    state.usage += response.usage
    summary = "".join(p.text for p in response.parts if isinstance(p, TextPart)).strip()
    if not summary:
        raise RunError("The conversation had to be summarised to fit the context window, but the summary was empty.")
    replaced = len(state.messages)
    first = state.messages[0] if state.messages else None
    logger.info("agent %s: conversation of %d messages summarised (%s)", run.agent, replaced, reason)
    state.messages = []
    state.memo = ConversationMemo()
    state.context_tokens = 0
    state.compacted_at = state.turns
    await state.on_event(Compacted(turn=state.turns, reason=reason, summary=summary, replaced=replaced, usage=usage))
    await state.append(continuation_message(summary, first))


def _assistant_message(response: ModelResponse) -> AssistantMessage:
    parts = tuple(_well_formed_part(p) for p in response.parts if not (isinstance(p, TextPart) and not p.text))
    return AssistantMessage(parts=parts)


def _well_formed_part(part: AssistantPart) -> AssistantPart:
    """The part without lone surrogates, which no later request, transcript or result could encode. A provider's
    own block goes back to it as it came."""
    if isinstance(part, TextPart | ThinkingPart):
        text = well_formed(part.text)
        return part if text is part.text else replace(part, text=text)
    if isinstance(part, ToolCall):
        name, arguments = well_formed(part.name), well_formed_values(part.arguments)
        if name is part.name and arguments is part.arguments:
            return part
        return replace(part, name=name, arguments=cast(JsonObject, arguments))
    return part


def _raise_for_stop(response: ModelResponse) -> None:
    if response.stop_reason == "refusal":
        why = f": {response.refusal_explanation}" if response.refusal_explanation else ""
        raise ModelRefusalError(f"The model refused to continue{why}")
    if response.stop_reason == "context_window":
        raise RunError(CONTEXT_FULL)


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
    if state.stop_reason is not None:
        return ToolResult(call_id=call.id, content=f"Error: {HOOK_STOPPED_CALL}", is_error=True)
    state.tool_uses += 1
    await state.on_event(ToolStarted(turn=state.turns, call=call))
    started = time.monotonic()
    content, is_error, context = await _invoke(run, call, state)
    if len(content) > MAX_TOOL_RESULT_CHARS:
        content = f"{content[:MAX_TOOL_RESULT_CHARS]}\n[Output truncated: {len(content)} characters in all.]"
    if context:
        content += "".join(f"\n\n<system-reminder>\n{text}\n</system-reminder>" for text in context)
    result = ToolResult(call_id=call.id, content=content, is_error=is_error)
    await state.on_event(
        ToolFinished(turn=state.turns, call=call, result=result, duration_s=time.monotonic() - started)
    )
    return result


async def _invoke(run: AgentRun, call: ToolCall, state: _RunState) -> tuple[str, bool, tuple[str, ...]]:
    """(what the model reads, whether it is an error, hook context to append)."""
    tool = run.tools.get(call.name)
    if tool is None:
        return _unknown_tool(run, call.name), True, ()
    try:
        arguments = tool.validate(call.arguments)  # hooks see only calls that could run
    except ToolError as exc:
        return f"Error: {exc.message}", True, ()
    before = await run.hooks.before_tool(call) if run.hooks is not None else None
    context = before.context if before is not None else ()
    if before is not None:
        if before.stop is not None:
            state.stop_reason = before.stop
            return f"Error: A hook stopped the agent: {before.stop}", True, context
        if before.blocked is not None:
            return f"Error: {before.blocked}", True, context
    try:
        if before is not None and before.arguments is not None:
            call = ToolCall(id=call.id, name=call.name, arguments=before.arguments)
            arguments = tool.validate(call.arguments)
        if run.gate is not None:
            replaced = await run.gate(call, tool, before.permission if before is not None else None)
            if replaced is not None:
                call = ToolCall(id=call.id, name=call.name, arguments=replaced)
                arguments = tool.validate(replaced)
    except StopRunError as exc:
        state.stop_reason = exc.reason
        return f"Error: {exc.message}", True, context
    except ToolError as exc:
        return f"Error: {exc.message}", True, context
    if run.watch is not None:
        await run.watch.before_call(call.name, call.arguments, run.context.cwd)
    started = time.monotonic()
    content, failed, response = await _run_tool(run, tool, call, arguments)
    if run.hooks is None:
        return content, failed, context
    result = ToolResult(call_id=call.id, content=content, is_error=failed)
    duration_s = time.monotonic() - started
    after = await run.hooks.after_tool(call, result, failed=failed, duration_s=duration_s, response=response)
    if after.stop is not None:
        state.stop_reason = after.stop
    return (after.output if after.output is not None else content), failed, (*context, *after.context)


async def _run_tool(
    run: AgentRun, tool: Tool, call: ToolCall, arguments: ToolInput
) -> tuple[str, bool, Callable[[], object] | None]:
    """(what the model reads, whether it is an error, how to build the structured result for hooks)."""
    try:
        answer = await tool.run(run.context, arguments)
    except ToolError as exc:
        return f"Error: {safe_text(exc.message)}", True, None
    except Exception as exc:
        logger.exception("tool %s crashed in agent %s", call.name, run.agent)
        return f"Error: {call.name} failed unexpectedly: {type(exc).__name__}: {exc}", True, None
    # Plain text in the conversation: the answer's structured form (and the file contents it holds) is for this
    # call's hooks only; kept in the history it would stay in memory and break a request sent to a model process.
    return str(safe_text(answer)), False, structured_response(answer)


def _unknown_tool(run: AgentRun, name: str) -> str:
    for prefix, reason in run.unavailable_tools.items():
        if name.startswith(prefix):
            return f"Error: '{name}' is not available: {reason}"
    available = ", ".join(run.tools) or "none"
    return f"Error: no tool named '{name}' is available to this agent. Available tools: {available}"
