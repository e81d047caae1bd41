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
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, TypeAlias, cast

import anthropic
import anyio
import httpx2
from anthropic.types import MessageParam, TextBlockParam, ToolParam
from typing_extensions import override

from ..core.errors import ModelAPIError
from ..core.messages import (
    AssistantMessage,
    AssistantPart,
    Message,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._adapter import SdkAdapter, StreamBroken
from .anthropic_send import MESSAGES_PATH, RequestTemplate, request_template, send_streaming
from .anthropic_stream import NoMessage, StreamedMessage, StreamErrorEvent, read_message
from .base import ModelRequest, ModelResponse, SearchResult, StopReason, WebSearchOptions

_MAX_PAUSE_CONTINUATIONS = 3
_CLOSE_TIMEOUT = 5.0
"""Closing a response (also when the request was cancelled) drops its connection; it never waits on the API."""
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
        # offline rehearsal brings its own client, with a canned answer.)
        http_client = options.get("http_client") or anthropic.DefaultAioHttpClient(timeout=options["timeout"])
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
        messages = to_anthropic_messages(request.messages)
        parts: list[AssistantPart] = []
        usage = Usage()
        message: StreamedMessage | None = None
        results: list[SearchResult] = []
        for _ in range(_MAX_PAUSE_CONTINUATIONS + 1):
            message = await self._converting_errors(partial(self._stream_once, request, messages))
            parts += _parts(message)
            results += _search_results(message)
            usage += _usage(message)
            if message.stop_reason != "pause_turn":
                break
            messages = [*messages, cast(MessageParam, {"role": "assistant", "content": message.content})]
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

    async def _stream_once(self, request: ModelRequest, messages: list[MessageParam]) -> StreamedMessage:
        """One streamed request. The SDK's client sends it (auth, headers, base URL, timeouts, status errors); the
        body is serialized here once, as the SDK would copy and walk the whole conversation first, and the
        response's events are read by `anthropic_stream` instead of the SDK's per-event models."""
        client = self._client_for_request()
        template = await self._template_for(client)
        if template is not None:
            response = await send_streaming(client, template, _json_body(request, messages))
            close = response.aclose
        else:
            stream = await client.post(
                MESSAGES_PATH,
                cast_to=anthropic.types.Message,
                content=_json_body(request, messages),
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


def _json_body(request: ModelRequest, messages: list[MessageParam]) -> bytes:
    """The request body, encoded as the SDK encodes it (compact UTF-8 JSON). The system prompt and the tools are
    the same in every request of a run; their encoding is kept and spliced in."""
    body: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens, "messages": messages}
    body.update(_options(request))
    body["stream"] = True
    encoded = _dumps(body)
    constant = _constant_fields(request)
    return ("{" + constant + "," + encoded[1:] if constant else encoded).encode()


_ToolsKey: TypeAlias = tuple[tuple[str, str, int], ...]
_CONSTANT_FIELDS: dict[tuple[str, _ToolsKey, WebSearchOptions | None], tuple[tuple[ToolDefinition, ...], str]] = {}
_CONSTANT_FIELDS_KEPT = 64


def _constant_fields(request: ModelRequest) -> str:
    """`"system":[...],"tools":[...]` as JSON without the braces (empty when there are neither), remembered by
    content: every request of a run, and the runs of one agent in one folder, send the same. A tool's schema is
    keyed by identity (schemas are built once per tool); the entry holds the schema so the identity stays valid."""
    tools_key = tuple((tool.name, tool.description, id(tool.input_schema)) for tool in request.tools)
    key = (request.system, tools_key, request.web_search)
    kept = _CONSTANT_FIELDS.get(key)
    if kept is not None:
        return kept[1]
    fields: dict[str, Any] = {}
    if request.system:
        block: TextBlockParam = {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
        fields["system"] = [block]
    tools = _tools(request)
    if tools:
        fields["tools"] = tools
    encoded = _dumps(fields)[1:-1]
    if len(_CONSTANT_FIELDS) >= _CONSTANT_FIELDS_KEPT:
        del _CONSTANT_FIELDS[next(iter(_CONSTANT_FIELDS))]
    _CONSTANT_FIELDS[key] = (request.tools, encoded)
    return encoded


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_plain)


def _plain(value: object) -> object:
    """Mappings and sequences that are not dicts and lists (read-only views of a schema, say), as JSON sees them."""
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, object], value))
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(cast(Iterable[object], value))
    raise TypeError(f"{type(value).__name__} cannot be sent as JSON")


def _tools(request: ModelRequest) -> list[Any]:
    """The tools, with the server-side web search when the request offers it."""
    tools: list[Any] = list(to_anthropic_tools(request.tools))
    if request.web_search is not None:
        search: dict[str, Any] = {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": request.web_search.max_uses,
        }
        if request.web_search.allowed_domains:
            search["allowed_domains"] = list(request.web_search.allowed_domains)
        if request.web_search.blocked_domains:
            search["blocked_domains"] = list(request.web_search.blocked_domains)
        tools.append(search)
    return tools


def _options(request: ModelRequest) -> dict[str, Any]:
    """The optional request fields besides the tools: tool choice, thinking and effort."""
    options: dict[str, Any] = {}
    if request.tool_choice == "none" and (request.tools or request.web_search is not None):
        options["tool_choice"] = {"type": "none"}
    if request.thinking:
        options["thinking"] = {"type": "adaptive", "display": "omitted"}
    if request.effort is not None:
        options["output_config"] = {"effort": request.effort}
    return options


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
        return "user", [{"type": "text", "text": block} for block in message.blocks]
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCall):
                blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments})
            elif isinstance(part, ThinkingPart):
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
            elif part.provider == "anthropic":
                blocks.append(dict(part.data))
        return "assistant", blocks
    results: ToolResultMessage = message
    return "user", [
        {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
        for r in results.results
    ]


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
