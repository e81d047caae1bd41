"""The Anthropic Messages API adapter: streaming, prompt caching, and one deadline over every retry.

Fault policy as in `_adapter` (the SDK's own retries cover 529 overloaded too); what breaks a stream part-way is an
SSE `error` event or a dropped connection.

`pause_turn` (only server-side tools pause a turn) is continued by sending the paused content back as the assistant
turn and asking again, up to `_MAX_PAUSE_CONTINUATIONS` times; a turn still paused after that ends as `end_turn`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

import anthropic
import httpx2
from anthropic.types import Message as APIMessage
from anthropic.types import MessageParam, TextBlockParam, ToolParam

from ..errors import ModelAPIError
from ..messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._adapter import SdkAdapter, StreamBroken
from .base import ModelRequest, ModelResponse, StopReason

_MAX_PAUSE_CONTINUATIONS = 3
_EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "refusal",
    "stop_sequence": "stop_sequence",
    "model_context_window_exceeded": "context_window",
    "pause_turn": "end_turn",
}


class AnthropicModel(SdkAdapter[anthropic.AsyncAnthropic]):
    """A `Model` backed by the Anthropic Messages API (or anything that speaks it)."""

    _api = "Anthropic API"
    _key_variable = "ANTHROPIC_API_KEY"
    _url_variable = "ANTHROPIC_BASE_URL"
    _sdk_error = anthropic.AnthropicError
    _sdk_timeout_error = anthropic.APITimeoutError
    _sdk_connection_error = anthropic.APIConnectionError

    @property
    def provider(self) -> str:
        return "anthropic"

    def _open_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(**self._client_options())

    async def _request(self, request: ModelRequest) -> ModelResponse:
        messages = to_anthropic_messages(request.messages)
        parts: list[AssistantPart] = []
        usage = Usage()
        message: APIMessage | None = None
        for _ in range(_MAX_PAUSE_CONTINUATIONS + 1):
            message = await self._retrying_broken_streams(partial(self._stream_once, request, messages))
            parts += _parts(message)
            usage += _usage(message)
            if message.stop_reason != "pause_turn":
                break
            paused = [block.to_dict(mode="json", exclude_none=True) for block in message.content]
            messages = [*messages, cast(MessageParam, {"role": "assistant", "content": paused})]
        assert message is not None
        stop_reason = _STOP_REASONS.get(message.stop_reason or "end_turn", "end_turn")
        explanation = message.stop_details.explanation if message.stop_details is not None else None
        return ModelResponse(
            parts=tuple(parts),
            stop_reason=stop_reason,
            usage=usage,
            model_name=message.model,
            refusal_explanation=explanation or "",
        )

    async def _stream_once(self, request: ModelRequest, messages: list[MessageParam]) -> APIMessage:
        client = self._client_for_request()
        system: list[TextBlockParam] | anthropic.Omit = anthropic.omit
        if request.system:
            system = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        tools: list[ToolParam] | anthropic.Omit = to_anthropic_tools(request.tools) or anthropic.omit
        async with client.messages.stream(
            model=request.model, max_tokens=request.max_tokens, system=system, tools=tools, messages=messages
        ) as stream:
            await self._require_event_stream(stream.response)
            try:
                return await stream.get_final_message()
            except AssertionError:  # the SDK's way of saying the stream held no message at all
                raise self._not_the_api("text/event-stream", b"") from None
            except anthropic.APIResponseValidationError:
                raise
            except (anthropic.APIError, httpx2.TransportError) as exc:
                raise StreamBroken(exc) from exc

    @staticmethod
    def _error_type(exc: Exception) -> str | None:
        return exc.type if isinstance(exc, anthropic.APIStatusError) else None

    def _provider_error(self, exc: Exception, *, mid_stream: bool) -> ModelAPIError | None:
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or _body_text(exc.body) or exc.message
            if mid_stream:
                return self._stream_error(exc.type, detail, exc.request_id)
            return self._status_error(exc.status_code, exc.type, detail, exc.request_id)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self._malformed_response(exc.message, exc.status_code)
        return None


def to_anthropic_tools(tools: tuple[ToolDefinition, ...]) -> list[ToolParam]:
    params: list[ToolParam] = [
        {"name": t.name, "description": t.description, "input_schema": cast(Any, t.input_schema)} for t in tools
    ]
    if params:
        params[-1]["cache_control"] = {"type": "ephemeral"}
    return params


def to_anthropic_messages(messages: tuple[Message, ...]) -> list[MessageParam]:
    """Messages API turns: same-role neighbours merged, tool results first, a cache breakpoint on the last block."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    for role, blocks in turns:
        if role == "user":
            blocks.sort(key=lambda b: b["type"] != "tool_result")
    if turns:
        last_blocks = turns[-1][1]
        last_blocks[-1] = {**last_blocks[-1], "cache_control": _EPHEMERAL}
    return [cast(MessageParam, {"role": role, "content": blocks}) for role, blocks in turns]


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        return "user", [{"type": "text", "text": message.content}] if message.content else []
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            else:
                blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments})
        return "assistant", blocks
    results: ToolResultMessage = message
    return "user", [
        {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
        for r in results.results
    ]


def _parts(message: APIMessage) -> list[AssistantPart]:
    parts: list[AssistantPart] = []
    for block in message.content:
        if block.type == "text":
            parts.append(TextPart(text=block.text))
        elif block.type == "tool_use":
            # A stream cut off by max_tokens leaves a partially parsed input, which may not even be an object.
            arguments = cast(object, block.input)
            parts.append(
                ToolCall(
                    id=block.id,
                    name=block.name,
                    arguments=cast(dict[str, Any], arguments) if isinstance(arguments, dict) else {},
                )
            )
    return parts


def _usage(message: APIMessage) -> Usage:
    u = message.usage
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_creation_tokens=u.cache_creation_input_tokens or 0,
        cache_read_tokens=u.cache_read_input_tokens or 0,
    )


def _body_text(body: object) -> str:
    return body.strip()[:500] if isinstance(body, str) else ""
