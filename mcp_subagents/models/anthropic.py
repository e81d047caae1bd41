"""The Anthropic Messages API adapter: streaming, prompt caching, and one deadline over every retry.

Fault policy: the SDK retries 408/409/429/5xx/529 and connection errors itself (`max_retries`). An `error` event in
the middle of a stream is not retried by the SDK, so this adapter retries it (`stream_error_retries`). One overall
`deadline` bounds all of it. Whatever is left is raised as `ModelAPIError`.

`pause_turn` (only server-side tools pause a turn) is continued by sending the paused content back as the assistant
turn and asking again, up to `_MAX_PAUSE_CONTINUATIONS` times; a turn still paused after that ends as `end_turn`.
"""

from __future__ import annotations

from typing import Any, cast

import anthropic
import anyio
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
from .base import ModelRequest, ModelResponse, StopReason

_MAX_PAUSE_CONTINUATIONS = 3
_MAX_BACKOFF = 4.0
_CONNECT_TIMEOUT = 10.0
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
# Error types that a retry cannot fix, even when they arrive mid-stream.
_FATAL_ERROR_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "billing_error"}
)


class _StreamBroken(Exception):
    """The response started (status 200) and then failed part-way: an SSE error event or a dropped connection."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class AnthropicModel:
    """A `Model` backed by the Anthropic Messages API (or anything that speaks it)."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        max_retries: int = 2,
        request_timeout: float = 600.0,
        deadline: float = 900.0,
        stream_error_retries: int = 2,
        strict_validation: bool = False,
        stream_error_backoff: float = 0.5,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._max_retries = max_retries
        self._request_timeout = request_timeout
        self._deadline = deadline
        self._stream_error_retries = stream_error_retries
        self._stream_error_backoff = stream_error_backoff
        self._strict_validation = strict_validation
        self._client: anthropic.AsyncAnthropic | None = None

    @property
    def provider(self) -> str:
        return "anthropic"

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        try:
            with anyio.fail_after(self._deadline):
                return await self._request(request)
        except TimeoutError:
            raise ModelAPIError(
                f"Anthropic API request timed out after {self._deadline:g} s (deadline over all retries)",
                retryable=True,
            ) from None

    def _client_for_request(self) -> anthropic.AsyncAnthropic:
        if self._client is None:
            self._client = anthropic.AsyncAnthropic(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=self._max_retries,
                timeout=httpx2.Timeout(self._request_timeout, connect=min(_CONNECT_TIMEOUT, self._request_timeout)),
                _strict_response_validation=self._strict_validation,
            )
        return self._client

    async def _request(self, request: ModelRequest) -> ModelResponse:
        messages = to_anthropic_messages(request.messages)
        parts: list[AssistantPart] = []
        usage = Usage()
        message: APIMessage | None = None
        for _ in range(_MAX_PAUSE_CONTINUATIONS + 1):
            message = await self._stream_with_retries(request, messages)
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

    async def _stream_with_retries(self, request: ModelRequest, messages: list[MessageParam]) -> APIMessage:
        attempt = 0
        while True:
            try:
                return await self._stream_once(request, messages)
            except _StreamBroken as broken:
                if attempt >= self._stream_error_retries or _error_type(broken.cause) in _FATAL_ERROR_TYPES:
                    raise self._error(broken.cause, mid_stream=True) from None
                await anyio.sleep(min(self._stream_error_backoff * 2**attempt, _MAX_BACKOFF))
                attempt += 1
            except anthropic.AnthropicError as exc:
                raise self._error(exc) from None

    async def _stream_once(self, request: ModelRequest, messages: list[MessageParam]) -> APIMessage:
        client = self._client_for_request()
        system: list[TextBlockParam] | anthropic.Omit = anthropic.omit
        if request.system:
            system = [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}]
        tools: list[ToolParam] | anthropic.Omit = to_anthropic_tools(request.tools) or anthropic.omit
        async with client.messages.stream(
            model=request.model, max_tokens=request.max_tokens, system=system, tools=tools, messages=messages
        ) as stream:
            try:
                return await stream.get_final_message()
            except anthropic.APIResponseValidationError:
                raise
            except (anthropic.APIError, httpx2.TransportError) as exc:
                raise _StreamBroken(exc) from exc
            except ValueError as exc:  # e.g. tool input JSON the SDK cannot parse, even partially
                message = f"Anthropic API sent a stream that could not be parsed: {exc}"
                raise ModelAPIError(_redact(message, self._api_key), retryable=True) from None

    def _error(self, exc: Exception, *, mid_stream: bool = False) -> ModelAPIError:
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or _body_text(exc.body) or exc.message
            kind = f" {exc.type}" if exc.type else ""
            request_id = f" (request {exc.request_id})" if exc.request_id else ""
            status = exc.status_code
            if mid_stream:
                message = f"Anthropic API stream error{kind}: {detail}{request_id}"
                return self._make(message, None, _error_type(exc) not in _FATAL_ERROR_TYPES)
            if status == 401:
                message = (
                    f"Anthropic API rejected the API key (401{kind}: {detail}){request_id}. Check ANTHROPIC_API_KEY."
                )
            elif status in (400, 403, 404, 413, 422):
                message = f"Anthropic API rejected the request ({status}{kind}: {detail}){request_id}"
            else:
                message = f"Anthropic API error {status}{kind}: {detail}{request_id}"
            return self._make(message, status, status in (408, 409, 429) or status >= 500)
        if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
            message = f"Anthropic API request timed out (no response within {self._request_timeout:g} s)"
            return self._make(message, None, True)
        if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
            if mid_stream:
                return self._make(f"Anthropic API stream was interrupted: {_cause(exc)}", None, True)
            return self._make(f"Could not connect to the Anthropic API at {self._url()}: {_cause(exc)}", None, True)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self._make(f"Anthropic API returned a malformed response: {exc.message}", exc.status_code, False)
        return self._make(f"Anthropic API call failed: {exc}", None, False)

    def _make(self, message: str, status_code: int | None, retryable: bool) -> ModelAPIError:
        return ModelAPIError(_redact(message, self._api_key), status_code=status_code, retryable=retryable)

    def _url(self) -> str:
        return str(self._client.base_url) if self._client is not None else (self._base_url or "the default URL")


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


def _error_type(exc: Exception) -> str | None:
    return exc.type if isinstance(exc, anthropic.APIStatusError) else None


def _body_text(body: object) -> str:
    return body.strip()[:500] if isinstance(body, str) else ""


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause) if cause is not None and str(cause) else str(exc)


def _redact(message: str, secret: str) -> str:
    return message.replace(secret, "[redacted]") if len(secret) >= 4 else message
