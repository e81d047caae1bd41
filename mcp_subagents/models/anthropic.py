"""The Anthropic Messages API adapter: streaming, prompt caching, adaptive thinking and effort, the server-side web
search, and one deadline over every retry.

Fault policy as in `_adapter`; what breaks a stream part-way is an SSE `error` event or a dropped connection.

The key goes out as `x-api-key`, as Claude Code sends it (gateways behind `ANTHROPIC_BASE_URL` may read only that
header); a token from `ANTHROPIC_AUTH_TOKEN` goes out as `Authorization: Bearer`.

Thinking blocks (with their signatures), redacted thinking and server tool blocks are kept on the assistant message
and sent back unchanged, as the API requires for a turn that continues after a tool call.

`pause_turn` (only server-side tools pause a turn) is continued by sending the paused content back as the assistant
turn and asking again, up to `_MAX_PAUSE_CONTINUATIONS` times; a turn still paused after that ends as `end_turn`.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any, cast

import anthropic
import anyio
import httpx2
from typing_extensions import override

from ..core.errors import ModelAPIError
from ..core.messages import (
    AssistantPart,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
)
from ._adapter import SdkAdapter, StreamBroken
from .anthropic_body import assistant_turn, json_body
from .anthropic_send import MESSAGES_PATH, RequestTemplate, request_template, send_streaming
from .anthropic_stream import NoMessage, StreamedMessage, StreamErrorEvent, read_message
from .base import ModelRequest, ModelResponse, SearchResult, StopReason
from .tls import verify_context

_MAX_PAUSE_CONTINUATIONS = 3
_CLOSE_TIMEOUT = 5.0
"""Closing a response (also when the request was cancelled) drops its connection; it never waits on the API."""
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

    def __init__(self, *, bearer: bool = False, **options: Any) -> None:
        """`bearer`: the key is an `ANTHROPIC_AUTH_TOKEN`, sent as `Authorization: Bearer` instead of `x-api-key`."""
        super().__init__(**options)
        self._bearer = bearer
        self._template: tuple[anthropic.AsyncAnthropic, RequestTemplate | None] | None = None

    @property
    def provider(self) -> str:
        return "anthropic"

    def _open_client(self) -> anthropic.AsyncAnthropic:
        options = self._client_options()
        # The SDK's aiohttp transport: aiohttp parses HTTP in C, which saves a quarter of a request's CPU. (The
        # offline rehearsal brings its own client, with a canned answer.) The TLS context is the process's (`tls`).
        http_client = options.get("http_client") or anthropic.DefaultAioHttpClient(
            timeout=options["timeout"], verify=verify_context()
        )
        options["http_client"] = http_client
        if self._bearer:
            return anthropic.AsyncAnthropic(
                auth_token=options["api_key"],
                base_url=options["base_url"],
                max_retries=options["max_retries"],
                timeout=options["timeout"],
                _strict_response_validation=options["_strict_response_validation"],
                http_client=http_client,
            )
        return _ApiKeyHeaderClient(**options)

    def _rehearsal_stream(self) -> bytes:
        return _REHEARSAL_EVENTS

    def _credential_variable(self) -> str:
        return "ANTHROPIC_AUTH_TOKEN" if self._bearer else self._key_variable

    async def _request(self, request: ModelRequest) -> ModelResponse:
        continued: list[bytes] = []
        parts: list[AssistantPart] = []
        usage = Usage()
        message: StreamedMessage | None = None
        results: list[SearchResult] = []
        for _ in range(_MAX_PAUSE_CONTINUATIONS + 1):
            message = await self._converting_errors(partial(self._stream_once, request, tuple(continued)))
            parts += _parts(message)
            results += _search_results(message)
            usage += _usage(message)
            if message.stop_reason != "pause_turn":
                break
            continued.append(assistant_turn(message.content))
        assert message is not None
        stop_reason = _STOP_REASONS.get(message.stop_reason or "end_turn", "end_turn")
        explanation = (message.stop_details or {}).get("explanation")
        return ModelResponse(
            parts=tuple(parts),
            stop_reason=stop_reason,
            usage=usage,
            model_name=message.model,
            refusal_explanation=explanation if isinstance(explanation, str) else "",
            search_results=tuple(results),
        )

    async def _stream_once(self, request: ModelRequest, continued: tuple[bytes, ...]) -> StreamedMessage:
        """One streamed request. The SDK's client sends it (auth, headers, base URL, timeouts, status errors); the
        body is encoded by `anthropic_body`, as the SDK would copy and walk the whole conversation first, and the
        response's events are read by `anthropic_stream` instead of the SDK's per-event models. `continued`: the
        turns a paused answer sent so far."""
        client = self._client_for_request()
        template = await self._template_for(client)
        if template is not None:
            response = await send_streaming(client, template, json_body(request, continued))
            close = response.aclose
        else:
            stream = await client.post(
                MESSAGES_PATH,
                cast_to=anthropic.types.Message,
                content=json_body(request, continued),
                stream=True,
                stream_cls=anthropic.AsyncStream[anthropic.types.RawMessageStreamEvent],
            )
            response, close = stream.response, stream.close
        try:
            await self._require_event_stream(response)
            return await read_message(response.aiter_bytes())
        except NoMessage:  # an empty event stream: whatever answered, it was not the API
            raise self._not_the_api("text/event-stream", b"") from None
        except StreamErrorEvent as event:
            raise self._stream_error(event.error_type, event.detail, response.headers.get("request-id")) from None
        except httpx2.TransportError as exc:
            raise StreamBroken(exc) from exc
        finally:
            with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True):
                await close()

    async def _template_for(self, client: anthropic.AsyncAnthropic) -> RequestTemplate | None:
        """The SDK's request for this client, built once (see `anthropic_send`)."""
        built = self._template
        if built is None or built[0] is not client:
            built = self._template = (client, await request_template(client))
        return built[1]

    @staticmethod
    def _error_type(exc: Exception) -> str | None:
        return exc.type if isinstance(exc, anthropic.APIStatusError) else None

    def _provider_error(self, exc: Exception, *, mid_stream: bool) -> ModelAPIError | None:
        if isinstance(exc, anthropic.APIStatusError):
            detail = exc.api_message or _body_text(exc.body) or exc.message
            if mid_stream:
                return self._stream_error(exc.type, detail, exc.request_id)
            return self._status_error(exc.status_code, exc.type, detail, exc.request_id, exc.response.headers)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return self._malformed_response(exc.message, exc.status_code)
        return None


class _ApiKeyHeaderClient(anthropic.AsyncAnthropic):
    """The SDK client, sending the key as `x-api-key` (the SDK's own choice for `api_key` is a Bearer header)."""

    @property
    @override
    def _api_key_auth(self) -> dict[str, str]:
        return {} if self.api_key is None else {"X-Api-Key": self.api_key}


def _parts(message: StreamedMessage) -> list[AssistantPart]:
    parts: list[AssistantPart] = []
    for block in message.content:
        kind = block.get("type")
        if kind == "text":
            parts.append(TextPart(text=block["text"]))
        elif kind == "thinking":
            parts.append(ThinkingPart(text=block["thinking"], signature=block["signature"]))
        elif kind != "tool_use":
            parts.append(ProviderPart(provider="anthropic", data=block))
        else:
            # A stream cut off by max_tokens leaves a partially parsed input, which may not even be an object.
            arguments: object = block.get("input")
            parts.append(
                ToolCall(
                    id=block["id"],
                    name=block["name"],
                    arguments=cast(dict[str, Any], arguments) if isinstance(arguments, dict) else {},
                )
            )
    return parts


def _search_results(message: StreamedMessage) -> list[SearchResult]:
    results: list[SearchResult] = []
    for block in message.content:
        hits: object = block.get("content")
        if block.get("type") == "web_search_tool_result" and isinstance(hits, list):
            found = [cast(dict[str, Any], hit) for hit in cast(list[Any], hits) if isinstance(hit, dict)]
            results += [SearchResult(title=str(hit.get("title", "")), url=str(hit.get("url", ""))) for hit in found]
    return results


def _usage(message: StreamedMessage) -> Usage:
    u = message.usage
    return Usage(
        input_tokens=u.get("input_tokens") or 0,
        output_tokens=u.get("output_tokens") or 0,
        cache_creation_tokens=u.get("cache_creation_input_tokens") or 0,
        cache_read_tokens=u.get("cache_read_input_tokens") or 0,
    )


def _body_text(body: object) -> str:
    return body.strip()[:500] if isinstance(body, str) else ""


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)


_REHEARSAL_USAGE: dict[str, Any] = {
    "input_tokens": 1,
    "output_tokens": 1,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
_REHEARSAL_EVENTS = _sse(
    {
        "type": "message_start",
        "message": {
            "id": "msg_rehearsal",
            "type": "message",
            "role": "assistant",
            "model": "rehearsal",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _REHEARSAL_USAGE,
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Done."}},
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {}},
    },
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{}"}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": _REHEARSAL_USAGE},
    {"type": "message_stop"},
)
"""What the offline rehearsal (`SdkAdapter.open`) streams: thinking, text and a tool call, as the API sends them."""
