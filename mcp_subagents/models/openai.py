"""The adapter for OpenAI-compatible chat-completions endpoints: OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter.

Fault policy as in the Anthropic adapter: the SDK retries 408/409/429/5xx and connection errors (`max_retries`), this
adapter retries errors that arrive in the middle of a stream (`stream_error_retries`), and one overall `deadline`
bounds everything. Whatever is left is raised as `ModelAPIError`.

Tool-call arguments that are not a JSON object become `{INVALID_JSON_KEY: raw_text}`: the loop's schema validation
then rejects the call with a readable message the model can act on, and the raw text goes back to the endpoint
unchanged in the conversation history.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import httpx2
import openai
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionToolUnionParam

from ..errors import ModelAPIError
from ..messages import (
    AssistantMessage,
    AssistantPart,
    JsonObject,
    Message,
    TextPart,
    ToolCall,
    ToolDefinition,
    Usage,
    UserMessage,
)
from .base import ModelRequest, ModelResponse, StopReason

INVALID_JSON_KEY = "__invalid_json__"
"""The one key of a tool call's arguments when the model sent arguments that are not a JSON object."""

_MAX_BACKOFF = 4.0
_CONNECT_TIMEOUT = 10.0
_FATAL_ERROR_TYPES = frozenset(
    {"invalid_request_error", "authentication_error", "permission_error", "not_found_error", "billing_error"}
)


class _StreamBroken(Exception):
    """The response started (status 200) and then failed part-way: an error chunk or a dropped connection."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


class OpenAIModel:
    """A `Model` backed by an OpenAI-compatible `/chat/completions` endpoint. `base_url` includes `/v1`."""

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
        self._client: openai.AsyncOpenAI | None = None

    @property
    def provider(self) -> str:
        return "openai"

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        try:
            with anyio.fail_after(self._deadline):
                return await self._stream_with_retries(request)
        except TimeoutError:
            raise ModelAPIError(
                f"OpenAI API request timed out after {self._deadline:g} s (deadline over all retries)", retryable=True
            ) from None

    def _client_for_request(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=self._max_retries,
                timeout=httpx2.Timeout(self._request_timeout, connect=min(_CONNECT_TIMEOUT, self._request_timeout)),
                _strict_response_validation=self._strict_validation,
            )
        return self._client

    async def _stream_with_retries(self, request: ModelRequest) -> ModelResponse:
        messages = to_openai_messages(request.system, request.messages)
        tools = to_openai_tools(request.tools)
        attempt = 0
        while True:
            try:
                return await self._stream_once(request, messages, tools)
            except _StreamBroken as broken:
                if attempt >= self._stream_error_retries or _error_type(broken.cause) in _FATAL_ERROR_TYPES:
                    raise self._error(broken.cause, mid_stream=True) from None
                await anyio.sleep(min(self._stream_error_backoff * 2**attempt, _MAX_BACKOFF))
                attempt += 1
            except openai.OpenAIError as exc:
                raise self._error(exc) from None

    async def _stream_once(
        self,
        request: ModelRequest,
        messages: list[ChatCompletionMessageParam],
        tools: list[ChatCompletionToolUnionParam],
    ) -> ModelResponse:
        stream = await self._client_for_request().chat.completions.create(
            model=request.model,
            messages=messages,
            tools=tools or openai.omit,
            max_tokens=request.max_tokens,
            stream=True,
            stream_options={"include_usage": True},
        )
        reply = _Reply(model=request.model)
        async with stream:
            try:
                async for chunk in stream:
                    reply.add(chunk)
            except openai.APIResponseValidationError:
                raise
            except (openai.APIError, httpx2.TransportError) as exc:
                raise _StreamBroken(exc) from exc
        return reply.response()

    def _error(self, exc: Exception, *, mid_stream: bool = False) -> ModelAPIError:
        if mid_stream and _is_error_chunk(exc):
            assert isinstance(exc, openai.APIError)
            kind = f" {exc.type}" if exc.type else ""
            message = f"OpenAI API stream error{kind}: {exc.message}"
            return self._make(message, None, exc.type not in _FATAL_ERROR_TYPES)
        if isinstance(exc, openai.APIStatusError):
            detail = _detail(exc.body) or exc.message
            kind = f" {exc.type}" if exc.type else ""
            request_id = f" (request {exc.request_id})" if exc.request_id else ""
            status = exc.status_code
            if status == 401:
                message = f"OpenAI API rejected the API key (401{kind}: {detail}){request_id}. Check OPENAI_API_KEY."
            elif status in (400, 403, 404, 413, 422):
                message = f"OpenAI API rejected the request ({status}{kind}: {detail}){request_id}"
            else:
                message = f"OpenAI API error {status}{kind}: {detail}{request_id}"
            return self._make(message, status, status in (408, 409, 429) or status >= 500)
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            message = f"OpenAI API request timed out (no response within {self._request_timeout:g} s)"
            return self._make(message, None, True)
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            if mid_stream:
                return self._make(f"OpenAI API stream was interrupted: {_cause(exc)}", None, True)
            return self._make(f"Could not connect to the OpenAI API at {self._url()}: {_cause(exc)}", None, True)
        if isinstance(exc, openai.APIResponseValidationError):
            return self._make(f"OpenAI API returned a malformed response: {exc.message}", exc.status_code, False)
        return self._make(f"OpenAI API call failed: {exc}", None, False)

    def _make(self, message: str, status_code: int | None, retryable: bool) -> ModelAPIError:
        return ModelAPIError(_redact(message, self._api_key), status_code=status_code, retryable=retryable)

    def _url(self) -> str:
        return str(self._client.base_url) if self._client is not None else (self._base_url or "the default URL")


@dataclass
class _PendingCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=lambda: [])


@dataclass
class _Reply:
    """A streamed reply being put together from its chunks."""

    model: str
    text: list[str] = field(default_factory=lambda: [])
    refusal: list[str] = field(default_factory=lambda: [])
    calls: dict[int, _PendingCall] = field(default_factory=lambda: {})
    finish_reason: str | None = None
    usage: CompletionUsage | None = None

    def add(self, chunk: ChatCompletionChunk) -> None:
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
            if delta.refusal:
                self.refusal.append(delta.refusal)
            for tc in delta.tool_calls or ():
                # Some servers leave out `index`; then a delta with an id or name starts a new call.
                index = cast(int | None, tc.index)
                if index is None:
                    starts = tc.id is not None or (tc.function is not None and tc.function.name is not None)
                    index = len(self.calls) if starts or not self.calls else max(self.calls)
                call = self.calls.setdefault(index, _PendingCall(id="", name=""))
                call.id = call.id or tc.id or ""
                if tc.function is not None:
                    call.name = call.name or tc.function.name or ""
                    if tc.function.arguments:
                        call.arguments.append(tc.function.arguments)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason

    def response(self) -> ModelResponse:
        parts: list[AssistantPart] = []
        text = "".join(self.text)
        if text:
            parts.append(TextPart(text=text))
        for _, call in sorted(self.calls.items()):
            call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
            parts.append(ToolCall(id=call_id, name=call.name, arguments=parse_arguments("".join(call.arguments))))
        explanation = "".join(self.refusal)
        return ModelResponse(
            parts=tuple(parts),
            stop_reason=self._stop_reason(explanation),
            usage=_usage(self.usage),
            model_name=self.model,
            refusal_explanation=explanation,
        )

    def _stop_reason(self, refusal: str) -> StopReason:
        if self.finish_reason == "length":
            return "max_tokens"
        if self.finish_reason == "content_filter" or refusal:
            return "refusal"
        # Some servers answer "stop" (or nothing) for a turn that calls tools.
        return "tool_use" if self.calls else "end_turn"


def parse_arguments(raw: str) -> JsonObject:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {INVALID_JSON_KEY: raw}
    return cast(JsonObject, value) if isinstance(value, dict) else {INVALID_JSON_KEY: raw}


def to_openai_tools(tools: tuple[ToolDefinition, ...]) -> list[ChatCompletionToolUnionParam]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
        for t in tools
    ]


def to_openai_messages(system: str, messages: tuple[Message, ...]) -> list[ChatCompletionMessageParam]:
    result: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for message in messages:
        if isinstance(message, UserMessage):
            result.append({"role": "user", "content": message.content})
        elif isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _dump(c.arguments)}}
                    for c in message.tool_calls
                ]
            result.append(entry)
        else:
            result += [
                {
                    "role": "tool",
                    "tool_call_id": r.call_id,
                    "content": f"Error: {r.content}" if r.is_error else r.content,
                }
                for r in message.results
            ]
    return cast(list[ChatCompletionMessageParam], result)


def _dump(arguments: JsonObject) -> str:
    raw = arguments.get(INVALID_JSON_KEY)
    if len(arguments) == 1 and isinstance(raw, str):
        return raw
    return json.dumps(arguments, ensure_ascii=False)


def _usage(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cached = (details.cached_tokens or 0) if details is not None else 0
    written = (details.cache_write_tokens or 0) if details is not None else 0
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached - written),
        output_tokens=usage.completion_tokens or 0,
        cache_creation_tokens=written,
        cache_read_tokens=cached,
    )


def _is_error_chunk(exc: Exception) -> bool:
    """An `{"error": ...}` chunk in a 200 stream: the SDK raises it as a bare `APIError`."""
    special = openai.APIStatusError | openai.APIConnectionError | openai.APIResponseValidationError
    return isinstance(exc, openai.APIError) and not isinstance(exc, special)


def _error_type(exc: Exception) -> str | None:
    return exc.type if isinstance(exc, openai.APIError) else None


def _detail(body: object) -> str:
    if isinstance(body, dict):
        message = cast(dict[str, object], body).get("message")
        return message if isinstance(message, str) else ""
    return body.strip()[:500] if isinstance(body, str) else ""


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return str(cause) if cause is not None and str(cause) else str(exc)


def _redact(message: str, secret: str) -> str:
    return message.replace(secret, "[redacted]") if len(secret) >= 4 else message
