"""An error answer for every malformed JSON-RPC message that carries an id, over stdio and over HTTP.

The SDK drops a message that does not validate as a JSON-RPC envelope: over stdio it logs it and the host waits
forever for an answer; over HTTP a message with an `id` that is not a string or an integer is taken for a
notification (202, no answer). Here every such message is answered at the edge: `-32700` when it is not JSON at all
(with the id when it can still be found), `-32600` when it is JSON but not a valid request. An id the request
carried but that is not valid itself is answered as `null`, as JSON-RPC 2.0 says.

The stdio side also reads stdin without a worker thread (pipes, sockets and terminals), so shutting down never
waits for a blocked `read()`.

On the way out, the MCP server makes every answer well-formed (`mcp.server`'s middleware): a lone surrogate in a
result (a model wrote one) becomes U+FFFD instead of a message that cannot be encoded. Before, writing such a
message ended the stdio server, broke the HTTP session's event stream, or reached the client as JSON it refused.
The stdio writer falls back to the same for any other message (`wire_json`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import pydantic_core
from mcp.shared.message import SessionMessage

from ..core.well_formed import well_formed_values

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
MAX_HTTP_BODY = 16 * 1024 * 1024

RequestId = str | int


def malformed_answers(raw: bytes | str) -> list[types.JSONRPCError]:
    """The error answers `raw` needs; empty when it is a valid message (or a malformed one without an id)."""
    try:
        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
    except ValueError:
        return _answers_for_invalid(raw)
    if isinstance(message, types.JSONRPCNotification) and _carries_id(raw):
        return [_error(None, INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")]
    return []


def _answers_for_invalid(raw: bytes | str) -> list[types.JSONRPCError]:
    try:
        parsed: object = json.loads(raw)
    except RecursionError:
        return [_error(_top_level_id(_text(raw)), PARSE_ERROR, "Parse error: the message is nested too deeply")]
    except ValueError as exc:
        return [_error(_top_level_id(_text(raw)), PARSE_ERROR, f"Parse error: {exc}")]
    if isinstance(parsed, list):
        items = [cast("dict[str, object]", item) for item in cast("list[object]", parsed) if isinstance(item, dict)]
        ids = [_valid_id(item.get("id")) for item in items]
        reason = "Invalid Request: batches are not supported; send one message at a time"
        return [_error(request_id, INVALID_REQUEST, reason) for request_id in ids or [None]]
    if not isinstance(parsed, dict):
        return [_error(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object")]
    envelope = cast("dict[str, object]", parsed)
    if "id" not in envelope:
        return []  # a malformed notification: there is nobody to answer
    return [_error(_valid_id(envelope["id"]), INVALID_REQUEST, f"Invalid Request: {_problem(envelope)}")]


def _problem(envelope: dict[str, object]) -> str:
    if envelope.get("jsonrpc") != "2.0":
        return "'jsonrpc' must be \"2.0\""
    if _valid_id(envelope.get("id")) is None:
        return "'id' must be a string or an integer"
    if "method" in envelope:
        if not isinstance(envelope["method"], str):
            return "'method' must be a string"
        if "params" in envelope and not isinstance(envelope["params"], dict):
            return "'params' must be an object"
        return "the request holds text that is not valid Unicode (a lone surrogate)"
    if "result" not in envelope and "error" not in envelope:
        return "a request needs 'method'"
    return "not a valid JSON-RPC response"


def _text(raw: bytes | str) -> str:
    return raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw


def _error(request_id: RequestId | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message[:500]))


def _valid_id(value: object) -> RequestId | None:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    return value


def _carries_id(raw: bytes | str) -> bool:
    try:
        parsed: object = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and "id" in parsed


def _top_level_id(text: str) -> RequestId | None:
    """The `id` of a message too broken to parse, found by scanning for the key at the top level of the object."""
    depth = 0
    index = 0
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        elif char == '"':
            if depth == 1 and text.startswith('"id"', index):
                return _id_after_key(text[index + 4 :])
            in_string = True
        index += 1
    return None


def _id_after_key(rest: str) -> RequestId | None:
    rest = rest.lstrip()
    if not rest.startswith(":"):
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(rest[1:].lstrip())
    except ValueError:
        return None
    return _valid_id(value)


# ---- what we send --------------------------------------------------------------------------------------------------


def wire_json(message: types.JSONRPCMessage) -> str:
    """`message` as one line of JSON; one holding a lone surrogate (from anywhere) is written with U+FFFD for it
    rather than failing to encode."""
    try:
        return message.model_dump_json(by_alias=True, exclude_unset=True)
    except ValueError:  # pydantic's serialization error wraps the UnicodeEncodeError
        # The Python form keeps strings as they are (the JSON form encodes them, and fails the same way).
        data = well_formed_values(message.model_dump(mode="python", by_alias=True, exclude_unset=True))
        return pydantic_core.to_json(data).decode()


# ---- stdio ---------------------------------------------------------------------------------------------------------


@asynccontextmanager
async def guarded_stdio() -> AsyncGenerator[tuple[Any, Any]]:
    """`mcp.server.stdio.stdio_server()` with malformed messages answered, and stdin read without a thread."""
    from mcp.server.stdio import stdio_server

    with _claimed_stdin() as fd:
        lines = GuardedLines(fd)
        try:
            async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
                lines.answer = write_stream.send
                yield read_stream, write_stream
        finally:
            lines.restore()


@contextlib.contextmanager
def _claimed_stdin() -> Any:
    """The protocol's stdin on a private descriptor; fd 0 reads /dev/null meanwhile (children never see it)."""
    private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield private
    finally:
        with contextlib.suppress(OSError):
            os.dup2(private, 0)
        os.close(private)


class GuardedLines:
    """Lines of the protocol's stdin for the SDK, minus malformed messages, which are answered here instead."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        mode = os.fstat(fd).st_mode
        # A pipe, a socket or a terminal (a person who started the server by hand): readiness can be waited on, so
        # no thread blocks in read() and Ctrl-C or SIGTERM stop the server at once.
        self._pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)
        self._was_blocking = os.get_blocking(fd)
        if self._pollable:
            os.set_blocking(fd, False)
        self._buffer = bytearray()
        self.answer: Callable[[SessionMessage], Awaitable[None]] | None = None

    def read_first(self, data: bytes) -> None:
        """Lines to read before anything more from the descriptor."""
        self._buffer[:0] = data

    def restore(self) -> None:
        """The descriptor's file may be shared (a terminal with the shell): leave it blocking as it was."""
        with contextlib.suppress(OSError):
            os.set_blocking(self._fd, self._was_blocking)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            line = await self._read_line()
            if line is None:
                return
            if not line.strip():
                continue
            answers = malformed_answers(line)
            if answers and self.answer is not None:
                for answer in answers:
                    await self.answer(SessionMessage(answer))
                continue
            yield line.decode("utf-8", errors="replace")

    async def _read_line(self) -> bytes | None:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            chunk = await self._read()
            if not chunk:
                rest, self._buffer = bytes(self._buffer), bytearray()
                return rest or None
            self._buffer += chunk

    async def _read(self) -> bytes:
        if not self._pollable:  # a regular file or a terminal: no readiness to wait on
            return await anyio.to_thread.run_sync(os.read, self._fd, 1 << 16)
        while True:
            try:
                return os.read(self._fd, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
            except OSError as exc:
                if exc.errno == errno.EINTR:
                    continue
                raise


# ---- HTTP ----------------------------------------------------------------------------------------------------------

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class JsonRpcGuard:
    """ASGI middleware: a POSTed JSON-RPC message that is malformed and carries an id gets a 400 with the error."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = await _read_body(receive)
        answers = malformed_answers(body) if body and not more else []
        if answers:
            payload = [answer.model_dump(mode="json", by_alias=True, exclude_unset=True) for answer in answers]
            data = json.dumps(payload[0] if len(payload) == 1 else payload).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
            await send({"type": "http.response.start", "status": 400, "headers": headers})
            await send({"type": "http.response.body", "body": data})
            return
        await self.app(scope, _replay(body, more, receive), send)


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    """The request body up to `MAX_HTTP_BODY`; True when there is more than that (then it is not checked)."""
    body = bytearray()
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return bytes(body), False
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body), False
        if len(body) > MAX_HTTP_BODY:
            return bytes(body), True


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replay
