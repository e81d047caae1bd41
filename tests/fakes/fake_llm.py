"""A fake LLM HTTP server: the Anthropic Messages API and the OpenAI chat-completions API, answering from a script.

```python
with FakeLLM() as fake:
    fake.push(turn(text("Reading"), tool_use("Read", {"path": "a"}), cache_write=100), turn(text("done")))
    client = AsyncAnthropic(base_url=fake.url, api_key="k")           # OpenAI: base_url=fake.url + "/v1"
```

One script serves both endpoints: a step is a `Turn`, an `Error`, a `Hang`, or a function of the request body that
returns a step. Every payload passes the SDKs' strict response validation (`_strict_response_validation=True`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeAlias, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

Json: TypeAlias = dict[str, Any]
Api: TypeAlias = Literal["anthropic", "openai"]

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    name: str
    input: Json | str
    """A dict, or a raw string sent as-is (for invalid-JSON tests)."""
    id: str
    """"" means: send no id on the OpenAI endpoint (the Anthropic endpoint makes one up)."""


@dataclass(frozen=True, slots=True)
class Thinking:
    """A thinking block (Anthropic only; the OpenAI endpoint leaves it out). Empty text is what `display: omitted`
    sends: only the signature."""

    text: str
    signature: str


@dataclass(frozen=True, slots=True)
class Whole:
    """A block the Anthropic endpoint sends in one piece, as given (redacted thinking, server tool use, web search
    results); the OpenAI endpoint leaves it out."""

    block: Json


Block: TypeAlias = Text | ToolUse | Thinking | Whole


@dataclass(frozen=True, slots=True)
class Turn:
    blocks: tuple[Block, ...]
    stop_reason: str
    input_tokens: int = 10
    output_tokens: int = 5
    cache_write: int = 0
    cache_read: int = 0
    delay: float = 0.0
    stream_error: Json | None = None
    truncate_tool_json: bool = False
    refusal_explanation: str | None = None
    send_usage: bool = True


@dataclass(frozen=True, slots=True)
class Error:
    status: int
    type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=lambda: {})


@dataclass(frozen=True, slots=True)
class Hang:
    after_start: bool = False


@dataclass(frozen=True, slots=True)
class Malformed:
    """A 200 whose body is not what the API promises: broken JSON, or an SSE stream of broken events."""

    body: str = '{"type": "message", "content": [oops'


SIGN_IN_PAGE = "<!doctype html><html><head><title>Sign in</title></head><body>Please sign in</body></html>"


@dataclass(frozen=True, slots=True)
class Raw:
    """Any HTTP answer at all, as a server that is not the API (a proxy's login page, a wrong URL) might give."""

    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    body: str | bytes = SIGN_IN_PAGE
    headers: Mapping[str, str] = field(default_factory=lambda: {})


Step: TypeAlias = "Turn | Error | Hang | Malformed | Raw | Callable[[Json], Step]"

_ERRORS = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Permission denied"),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed size"),
    429: ("rate_limit_error", "Rate limited"),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def text(s: str) -> Text:
    return Text(s)


def thinking(text: str = "", signature: str = "sig-fake") -> Thinking:
    return Thinking(text, signature)


def web_search_blocks(query: str, results: list[tuple[str, str]], id: str = "srvtoolu_fake_1") -> tuple[Whole, Whole]:
    """The server_tool_use block and its web_search_tool_result, with (title, url) results."""
    hits = [
        {"type": "web_search_result", "title": title, "url": url, "encrypted_content": "enc", "page_age": None}
        for title, url in results
    ]
    return (
        Whole({"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}),
        Whole({"type": "web_search_tool_result", "tool_use_id": id, "content": hits}),
    )


def tool_use(name: str, input: Json | str, id: str | None = None) -> ToolUse:
    return ToolUse(name, input, f"toolu_fake_{next(_ids):04d}" if id is None else id)


def turn(
    *blocks: Block,
    stop_reason: str | None = None,
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_write: int = 0,
    cache_read: int = 0,
    delay: float = 0.0,
    stream_error: Json | None = None,
    truncate_tool_json: bool = False,
    send_usage: bool = True,
) -> Turn:
    """One model reply. `stop_reason` defaults to tool_use when a tool is called, max_tokens when the tool JSON is
    truncated, else end_turn. `stream_error` (e.g. {"type": "overloaded_error", "message": "Overloaded"}) breaks a
    streamed reply part-way; a non-streamed request ignores it. `send_usage=False` leaves usage out (OpenAI only)."""
    if stop_reason is None:
        if truncate_tool_json:
            stop_reason = "max_tokens"
        elif any(isinstance(b, ToolUse) for b in blocks):
            stop_reason = "tool_use"
        else:
            stop_reason = "end_turn"
    return Turn(
        blocks,
        stop_reason,
        input_tokens,
        output_tokens,
        cache_write,
        cache_read,
        delay,
        stream_error,
        truncate_tool_json,
        send_usage=send_usage,
    )


def refusal(explanation: str, *blocks: Block) -> Turn:
    return Turn(blocks, "refusal", refusal_explanation=explanation)


def error(
    status: int, type: str | None = None, message: str | None = None, headers: Mapping[str, str] | None = None
) -> Error:
    default_type, default_message = _ERRORS.get(status, ("api_error", f"Error {status}"))
    return Error(status, type or default_type, message or default_message, dict(headers or {}))


def malformed(body: str = '{"type": "message", "content": [oops') -> Malformed:
    return Malformed(body)


def raw(
    status: int = 200,
    content_type: str = "text/html; charset=utf-8",
    body: str | bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Raw:
    return Raw(status, content_type, SIGN_IN_PAGE if body is None else body, dict(headers or {}))


def anthropic_stream_bytes(t: Turn, body: Json) -> bytes:
    """The event stream the fake streams for `t`, whole: for a `Raw` answer that changes how it is sent."""
    return "".join(_anthropic_events(t, body)).encode()


def hang(*, after_start: bool = False) -> Hang:
    """Never answer (or, with `after_start`, stall after the first stream event) until the client goes away."""
    return Hang(after_start)


class FakeLLM:
    """The server. Use as a context manager; it runs uvicorn in a daemon thread on 127.0.0.1."""

    def __init__(self) -> None:
        self.queue: deque[Step] = deque()
        self.requests: list[Json] = []
        self.default: Step | None = None
        self.latency = 0.0
        self.url = ""
        self.app = Starlette(
            routes=[
                Route("/v1/messages", self._messages, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.queue.extend(steps)

    def reset(self) -> None:
        with self._lock:
            self.queue.clear()
            self.requests.clear()
        self.default = None
        self.latency = 0.0

    def __enter__(self) -> FakeLLM:
        # IPPROTO_TCP explicitly: with proto 0, asyncio skips TCP_NODELAY and every keep-alive request costs ~40 ms.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        config = uvicorn.Config(
            _also_as_a_proxy(self.app),
            http="h11",
            ws="none",
            lifespan="off",
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
        server = _Server(config)
        self._server = server
        self._thread = threading.Thread(target=server.run_in_thread, args=(sock,), name="fake-llm", daemon=True)
        self._thread.start()
        if not server.ready.wait(10) or not server.started:
            raise RuntimeError("FakeLLM did not start")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.stop()
        if self._thread is not None:
            self._thread.join(10)

    def _next_step(self, body: Json) -> Turn | Error | Hang | Malformed | Raw | None:
        with self._lock:
            step = self.queue.popleft() if self.queue else self.default
        while step is not None and not isinstance(step, Turn | Error | Hang | Malformed | Raw):
            step = step(body)
        return step

    async def _messages(self, request: Request) -> Response:
        return await self._serve(request, "anthropic")

    async def _chat(self, request: Request) -> Response:
        return await self._serve(request, "openai")

    async def _serve(self, request: Request, api: Api) -> Response:
        body: Json = json.loads(await request.body() or b"{}")
        with self._lock:
            self.requests.append(
                {"path": request.url.path, "headers": {k.lower(): v for k, v in request.headers.items()}, "body": body}
            )
            number = len(self.requests)
        step = self._next_step(body)
        if self.latency:
            await anyio.sleep(self.latency)
        streaming = bool(body.get("stream"))
        if step is None:
            message = f"FakeLLM script is empty: no step for request #{number} to {request.url.path}"
            return _error_response(api, Error(500, "api_error", message, {"x-should-retry": "false"}))
        if isinstance(step, Error):
            return _error_response(api, step)
        if isinstance(step, Raw):
            return Response(
                step.body, status_code=step.status, headers={"content-type": step.content_type, **step.headers}
            )
        if isinstance(step, Malformed):
            if streaming:
                kind = "message_start" if api == "anthropic" else "chunk"
                return _sse(api, iter([f"event: {kind}\ndata: {step.body}\n\n"]))
            return Response(step.body, media_type="application/json")
        if isinstance(step, Hang):
            if step.after_start and streaming:
                return _sse(api, self._stall(api, body))
            await self._until_stopped_or_gone(request)
            return Response(status_code=499)
        if step.delay:
            await anyio.sleep(step.delay)
        if api == "anthropic":
            if streaming:
                return _sse(api, _anthropic_events(step, body))
            return _json(api, _anthropic_message(step, body))
        if streaming:
            return _sse(api, _openai_chunks(step, body))
        return _json(api, _openai_completion(step, body))

    async def _stall(self, api: Api, body: Json) -> AsyncIterator[str]:
        if api == "anthropic":
            yield _event("message_start", {"type": "message_start", "message": _message_shell(body, Turn((), ""))})
        else:
            yield _data(_chunk(body, {"role": "assistant", "content": ""}))
        # Starlette cancels this generator when the client disconnects.
        assert self._server is not None
        await self._server.stopping.wait()

    async def _until_stopped_or_gone(self, request: Request) -> None:
        assert self._server is not None
        stopping = self._server.stopping
        async with anyio.create_task_group() as tg:

            async def watch_client() -> None:
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(watch_client)
            await stopping.wait()
            tg.cancel_scope.cancel()


def _also_as_a_proxy(app: ASGIApp) -> ASGIApp:
    """`app`, also answering requests sent to it as an HTTP proxy (`POST http://host/v1/messages`): the path is
    what follows the host."""

    async def serve(scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith(("http://", "https://")):
            path = "/" + path.split("://", 1)[1].partition("/")[2]
            scope = {**scope, "path": path, "raw_path": path.encode()}
        await app(scope, receive, send)

    return serve


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.stopping = anyio.Event()
        self._token = anyio.lowlevel.current_token()
        await super().startup(sockets)
        self.ready.set()

    def stop(self) -> None:
        """Called from another thread: end hanging requests, then let uvicorn exit."""
        if self.started:
            with contextlib.suppress(RuntimeError):  # the event loop is already gone
                anyio.from_thread.run_sync(self.stopping.set, token=self._token)
        self.should_exit = True

    def run_in_thread(self, sock: socket.socket) -> None:
        try:
            self.run(sockets=[sock])
        finally:
            self.ready.set()


# ---- responses -------------------------------------------------------------------------------------------------------


def _request_id(api: Api) -> dict[str, str]:
    rid = f"req_fake_{next(_ids):04d}"
    return {"request-id": rid} if api == "anthropic" else {"x-request-id": rid}


def _json(api: Api, payload: Json) -> Response:
    return JSONResponse(payload, headers=_request_id(api))


def _sse(api: Api, events: AsyncIterator[str] | Iterator[str]) -> Response:
    return StreamingResponse(events, media_type="text/event-stream", headers=_request_id(api))


def _error_response(api: Api, err: Error) -> Response:
    headers = {**_request_id(api), **err.headers}
    if api == "anthropic":
        payload: Json = {
            "type": "error",
            "error": {"type": err.type, "message": err.message},
            "request_id": headers.get("request-id"),
        }
    else:
        payload = {"error": {"message": err.message, "type": err.type, "param": None, "code": None}}
    return JSONResponse(payload, status_code=err.status, headers=headers)


def _event(kind: str, data: Json) -> str:
    return f"event: {kind}\ndata: {json.dumps(data)}\n\n"


def _data(data: Json | str) -> str:
    return f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"


def _pieces(s: str, n: int = 3) -> list[str]:
    """`s` cut into up to `n` non-empty pieces."""
    size = max(1, -(-len(s) // n))
    return [s[i : i + size] for i in range(0, len(s), size)]


def _tool_json(block: ToolUse, truncate: bool) -> str:
    raw = block.input if isinstance(block.input, str) else json.dumps(block.input)
    return raw[: max(1, len(raw) // 2)] if truncate else raw


def _last_tool_index(t: Turn) -> int:
    indexes = [i for i, b in enumerate(t.blocks) if isinstance(b, ToolUse)]
    return indexes[-1] if indexes else -1


def _stop_sequence(t: Turn, body: Json) -> str | None:
    if t.stop_reason != "stop_sequence":
        return None
    sequences = body.get("stop_sequences") or body.get("stop") or ["STOP"]
    return str(cast(list[Any], sequences)[0]) if isinstance(sequences, list) else str(sequences)


# ---- Anthropic -------------------------------------------------------------------------------------------------------


def _anthropic_usage(t: Turn) -> Json:
    return {
        "input_tokens": t.input_tokens,
        "output_tokens": t.output_tokens,
        "cache_creation_input_tokens": t.cache_write,
        "cache_read_input_tokens": t.cache_read,
    }


def _stop_details(t: Turn) -> Json | None:
    if t.refusal_explanation is None:
        return None
    return {"type": "refusal", "category": None, "explanation": t.refusal_explanation}


def _message_shell(body: Json, t: Turn) -> Json:
    return {
        "id": f"msg_fake_{next(_ids):04d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model") or "fake-model",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**_anthropic_usage(t), "output_tokens": 1},
    }


def _anthropic_block(block: Block, index: int, *, streamed: bool) -> Json:
    if isinstance(block, Text):
        return {"type": "text", "text": "" if streamed else block.text}
    if isinstance(block, Thinking):
        if streamed:
            return {"type": "thinking", "thinking": "", "signature": ""}
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if isinstance(block, Whole):
        return block.block
    return {"type": "tool_use", "id": block.id or f"toolu_fake_missing_{index}", "name": block.name, "input": {}}


def _anthropic_message(t: Turn, body: Json) -> Json:
    content: list[Json] = []
    last_tool = _last_tool_index(t)
    for i, block in enumerate(t.blocks):
        rendered = _anthropic_block(block, i, streamed=False)
        if isinstance(block, ToolUse):
            raw = _tool_json(block, t.truncate_tool_json and i == last_tool)
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = {}
            rendered["input"] = parsed if isinstance(parsed, dict) else {}
        content.append(rendered)
    return {
        **_message_shell(body, t),
        "content": content,
        "stop_reason": t.stop_reason,
        "stop_sequence": _stop_sequence(t, body),
        "stop_details": _stop_details(t),
        "usage": _anthropic_usage(t),
    }


def _anthropic_events(t: Turn, body: Json) -> Iterator[str]:
    yield _event("message_start", {"type": "message_start", "message": _message_shell(body, t)})
    yield _event("ping", {"type": "ping"})
    last_tool = _last_tool_index(t)
    for i, block in enumerate(t.blocks):
        yield _event(
            "content_block_start",
            {"type": "content_block_start", "index": i, "content_block": _anthropic_block(block, i, streamed=True)},
        )
        if isinstance(block, Text):
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.text)]
        elif isinstance(block, Thinking):
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block.text) if p]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        elif isinstance(block, Whole):
            deltas = []
        else:
            raw = _tool_json(block, t.truncate_tool_json and i == last_tool)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(raw)]
        for n, delta in enumerate(deltas):
            yield _event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
            if t.stream_error is not None and i == 0 and n == 0:
                yield _event("error", {"type": "error", "error": t.stream_error})
                return
        yield _event("content_block_stop", {"type": "content_block_stop", "index": i})
    if t.stream_error is not None:
        yield _event("error", {"type": "error", "error": t.stream_error})
        return
    delta = {"stop_reason": t.stop_reason, "stop_sequence": _stop_sequence(t, body), "stop_details": _stop_details(t)}
    yield _event("message_delta", {"type": "message_delta", "delta": delta, "usage": _anthropic_usage(t)})
    yield _event("message_stop", {"type": "message_stop"})


# ---- OpenAI ----------------------------------------------------------------------------------------------------------

_FINISH = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
    "stop_sequence": "stop",
    "model_context_window_exceeded": "length",
    "pause_turn": "stop",
}


def _openai_usage(t: Turn) -> Json:
    prompt = t.input_tokens + t.cache_read + t.cache_write
    details: Json = {"cached_tokens": t.cache_read}
    if t.cache_write:
        details["cache_write_tokens"] = t.cache_write
    return {
        "prompt_tokens": prompt,
        "completion_tokens": t.output_tokens,
        "total_tokens": prompt + t.output_tokens,
        "prompt_tokens_details": details,
    }


def _finish(t: Turn) -> str:
    return _FINISH.get(t.stop_reason, "stop")


def _openai_completion(t: Turn, body: Json) -> Json:
    last_tool = _last_tool_index(t)
    content = "".join(b.text for b in t.blocks if isinstance(b, Text))
    tool_calls = [
        {
            "id": b.id,
            "type": "function",
            "function": {"name": b.name, "arguments": _tool_json(b, t.truncate_tool_json and i == last_tool)},
        }
        for i, b in enumerate(t.blocks)
        if isinstance(b, ToolUse)
    ]
    message: Json = {"role": "assistant", "content": content or None, "refusal": t.refusal_explanation}
    if tool_calls:
        message["tool_calls"] = tool_calls
    payload: Json = {
        "id": f"chatcmpl-fake-{next(_ids):04d}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(t), "logprobs": None}],
    }
    if t.send_usage:
        payload["usage"] = _openai_usage(t)
    return payload


def _chunk(body: Json, delta: Json | None, finish: str | None = None, usage: Json | None = None) -> Json:
    chunk: Json = {
        "id": "chatcmpl-fake-stream",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model") or "fake-model",
        "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def _openai_chunks(t: Turn, body: Json) -> Iterator[str]:
    yield _data(_chunk(body, {"role": "assistant", "content": ""}))
    sent = 0
    if t.refusal_explanation is not None:
        yield _data(_chunk(body, {"refusal": t.refusal_explanation}))
    last_tool = _last_tool_index(t)
    tool_index = 0
    for i, block in enumerate(t.blocks):
        if isinstance(block, Thinking | Whole):
            continue
        if isinstance(block, Text):
            pieces = [_chunk(body, {"content": p}) for p in _pieces(block.text)]
        else:
            start: Json = {"index": tool_index, "type": "function", "function": {"name": block.name, "arguments": ""}}
            if block.id:
                start["id"] = block.id
            raw = _tool_json(block, t.truncate_tool_json and i == last_tool)
            pieces = [_chunk(body, {"tool_calls": [start]})]
            pieces += [
                _chunk(body, {"tool_calls": [{"index": tool_index, "function": {"arguments": p}}]})
                for p in _pieces(raw)
            ]
            tool_index += 1
        for piece in pieces:
            yield _data(piece)
            sent += 1
            if t.stream_error is not None and sent == 1:
                yield _data({"error": {**t.stream_error, "param": None, "code": None}})
                return
    if t.stream_error is not None:
        yield _data({"error": {**t.stream_error, "param": None, "code": None}})
        return
    yield _data(_chunk(body, {}, _finish(t)))
    options: Json = body.get("stream_options") or {}
    if t.send_usage and options.get("include_usage"):
        yield _data(_chunk(body, None, usage=_openai_usage(t)))
    yield _data("[DONE]")
