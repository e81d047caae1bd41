"""The adapter for OpenAI-compatible chat-completions endpoints: OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter.

Fault policy as in `_adapter`; what breaks a stream part-way is an `{"error": ...}` chunk or a dropped connection.

The SDK's client sends every request (auth, headers, retries off, its status errors, its stream reader), through
its aiohttp transport; two of its per-request costs are left out: the request body goes to `client.post` as
`chat.completions.create` would send it (`completion_body`), and the streamed chunks stay plain JSON objects.

What maps from the Anthropic features: an effort level becomes `reasoning_effort` (same five names); `tool_choice`
none maps. What does not: adaptive thinking (reasoning models think on their own; nothing is sent), thinking blocks
(left out of the history) and the server-side web search (the WebSearch tool is not offered with this provider).

Tool-call arguments that are not a JSON object become `{INVALID_JSON_KEY: raw_text}`: the loop's schema validation
then rejects the call with a readable message the model can act on, and the raw text goes back to the endpoint
unchanged in the conversation history.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import aiohttp
import httpx2
import openai
from openai._base_client import make_request_options
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolUnionParam

from ..core.errors import ModelAPIError
from ..core.json_values import json_int, json_object, json_objects, json_str
from ..core.messages import (
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
from ._adapter import SdkAdapter, StreamBroken
from .base import ModelRequest, ModelResponse, StopReason
from .tls import verify_context

INVALID_JSON_KEY = "__invalid_json__"
"""The one key of a tool call's arguments when the model sent arguments that are not a JSON object."""


CHAT_COMPLETIONS_PATH = "/chat/completions"
_REQUEST_OPTIONS = make_request_options(security={"bearer_auth": True})
"""The options `chat.completions.create` sends with a request."""


def completion_body(
    request: ModelRequest, messages: list[ChatCompletionMessageParam], tools: list[ChatCompletionToolUnionParam]
) -> dict[str, object]:
    """The streaming request's body, as `chat.completions.create` sends it. That method first copies the whole body
    through the SDK's type-driven transform, which changes nothing in a chat request (no field of its parameters is
    renamed or reformatted) and cost a third of a round trip's CPU with the tools' schemas in it."""
    body: dict[str, object] = {"model": request.model, "stream": True, "messages": messages}
    body["max_tokens"] = request.max_tokens
    if request.effort is not None:
        body["reasoning_effort"] = request.effort
    body["stream_options"] = {"include_usage": True}
    if tools:
        if request.tool_choice == "none":
            body["tool_choice"] = "none"
        body["tools"] = tools
    return body


class OpenAIModel(SdkAdapter[openai.AsyncOpenAI]):
    """A `Model` backed by an OpenAI-compatible `/chat/completions` endpoint. `base_url` includes `/v1`."""

    _api = "OpenAI API"
    _key_variable = "OPENAI_API_KEY"
    _url_variable = "OPENAI_BASE_URL"
    _sdk_error = openai.OpenAIError
    _sdk_timeout_error = openai.APITimeoutError
    _sdk_connection_error = openai.APIConnectionError

    @property
    def provider(self) -> str:
        return "openai"

    def _open_client(self) -> openai.AsyncOpenAI:
        options = self._client_options()
        # The SDK's aiohttp transport, as for Anthropic: aiohttp parses HTTP in C (httpcore's h11 was a fifth of a
        # request's CPU). That transport reports every failed connection as a timeout: `_timed_out` looks at what
        # aiohttp raised. (The offline rehearsal brings its own client, with a canned answer.)
        options["http_client"] = options.get("http_client") or openai.DefaultAioHttpClient(
            timeout=options["timeout"], verify=verify_context()
        )
        return openai.AsyncOpenAI(**options)

    def _rehearsal_stream(self) -> bytes:
        return _REHEARSAL_CHUNKS

    async def _request(self, request: ModelRequest) -> ModelResponse:
        messages = to_openai_messages(request.system, request.messages)
        tools = to_openai_tools(request.tools)
        return await self._converting_errors(partial(self._stream_once, request, messages, tools))

    async def _stream_once(
        self,
        request: ModelRequest,
        messages: list[ChatCompletionMessageParam],
        tools: list[ChatCompletionToolUnionParam],
    ) -> ModelResponse:
        stream = await self._client_for_request().post(
            CHAT_COMPLETIONS_PATH,
            body=completion_body(request, messages, tools),
            cast_to=object,
            options=_REQUEST_OPTIONS,
            stream=True,
            stream_cls=openai.AsyncStream[object],
        )
        reply = _Reply(model=request.model)
        chunks = 0
        async with stream:
            await self._require_event_stream(stream.response)
            try:
                async for chunk in stream:
                    reply.add(chunk)
                    chunks += 1
            except openai.APIResponseValidationError:
                raise
            except (openai.APIError, httpx2.TransportError) as exc:
                raise StreamBroken(exc) from exc
        if not chunks:
            raise self._not_the_api("text/event-stream", b"")
        return reply.response()

    @staticmethod
    def _error_type(exc: Exception) -> str | None:
        return exc.type if isinstance(exc, openai.APIError) else None

    def _timed_out(self, exc: Exception) -> bool:
        """A timeout, unless aiohttp's own error under it was not one: the openai SDK's aiohttp transport turns any
        failed connection (refused, reset, closed by the server) into a connect timeout."""
        return super()._timed_out(exc) and not _connection_failure_under(exc)

    def _provider_error(self, exc: Exception, *, mid_stream: bool) -> ModelAPIError | None:
        if mid_stream and _is_error_chunk(exc):
            assert isinstance(exc, openai.APIError)
            return self._stream_error(exc.type, exc.message)
        if isinstance(exc, openai.APIStatusError):
            detail = _detail(exc.body) or exc.message
            return self._status_error(exc.status_code, exc.type, detail, exc.request_id, exc.response.headers)
        if isinstance(exc, openai.APIResponseValidationError):
            return self._malformed_response(exc.message, exc.status_code)
        return None


@dataclass
class _PendingCall:
    id: str
    name: str
    arguments: list[str] = field(default_factory=lambda: [])


@dataclass
class _Reply:
    """A streamed reply being put together from its chunks, each read as the JSON object it is (the SDK's chunk
    models would be built without validation anyway: a field of the wrong type is skipped here as there)."""

    model: str
    text: list[str] = field(default_factory=lambda: [])
    refusal: list[str] = field(default_factory=lambda: [])
    calls: dict[int, _PendingCall] = field(default_factory=lambda: {})
    finish_reason: str | None = None
    usage: JsonObject | None = None

    def add(self, chunk: object) -> None:
        data = json_object(chunk)
        self.model = json_str(data.get("model")) or self.model
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.usage = cast(JsonObject, usage)
        for choice in json_objects(data.get("choices")):
            if choice.get("index") != 0:
                continue
            delta = json_object(choice.get("delta"))
            if content := json_str(delta.get("content")):
                self.text.append(content)
            if refusal := json_str(delta.get("refusal")):
                self.refusal.append(refusal)
            for tc in json_objects(delta.get("tool_calls")):
                self._add_call(tc)
            if (finish_reason := json_str(choice.get("finish_reason"))) is not None:
                self.finish_reason = finish_reason

    def _add_call(self, tc: JsonObject) -> None:
        function = json_object(tc.get("function"))
        name = json_str(function.get("name"))
        # Some servers leave out `index`; then a delta with an id or name starts a new call.
        index = tc.get("index")
        if not isinstance(index, int):
            starts = tc.get("id") is not None or name is not None
            index = len(self.calls) if starts or not self.calls else max(self.calls)
        call = self.calls.setdefault(index, _PendingCall(id="", name=""))
        call.id = call.id or json_str(tc.get("id")) or ""
        call.name = call.name or name or ""
        if arguments := json_str(function.get("arguments")):
            call.arguments.append(arguments)

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
            result.append({"role": "user", "content": "\n\n".join(message.blocks)})
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


def _usage(usage: JsonObject | None) -> Usage:
    if usage is None:
        return Usage()
    details = json_object(usage.get("prompt_tokens_details"))
    cached = json_int(details.get("cached_tokens"))
    written = json_int(details.get("cache_write_tokens"))
    return Usage(
        input_tokens=max(0, json_int(usage.get("prompt_tokens")) - cached - written),
        output_tokens=json_int(usage.get("completion_tokens")),
        cache_creation_tokens=written,
        cache_read_tokens=cached,
    )


def _connection_failure_under(exc: BaseException) -> bool:
    """Whether the chain of causes under `exc` holds an aiohttp connection error that is not a timeout."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, aiohttp.ClientConnectionError) and not isinstance(cause, TimeoutError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _is_error_chunk(exc: Exception) -> bool:
    """An `{"error": ...}` chunk in a 200 stream: the SDK raises it as a bare `APIError`."""
    special = openai.APIStatusError | openai.APIConnectionError | openai.APIResponseValidationError
    return isinstance(exc, openai.APIError) and not isinstance(exc, special)


def _detail(body: object) -> str:
    if isinstance(body, dict):
        message = cast(dict[str, object], body).get("message")
        return message if isinstance(message, str) else ""
    return body.strip()[:500] if isinstance(body, str) else ""


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {"id": "rehearsal", "object": "chat.completion.chunk", "created": 0, "model": "rehearsal"}
    return f"data: {json.dumps({**body, 'choices': choices, 'usage': usage})}\n\n".encode()


_REHEARSAL_CHUNKS = b"".join(
    (
        _chunk({"role": "assistant", "content": "Done."}),
        _chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "Glob", "arguments": "{}"}}
                ]
            }
        ),
        _chunk({}, finish="tool_calls"),
        _chunk(None, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        b"data: [DONE]\n\n",
    )
)
"""What the offline rehearsal (`SdkAdapter.open`) streams: text and a tool call, as chat completions send them."""
