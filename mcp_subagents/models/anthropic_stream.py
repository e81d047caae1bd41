"""A Messages API event stream read into one message, straight from the response body.

The SDK's `messages.stream()` builds pydantic models for every event and for a snapshot of the message, and parses
a tool call's whole input again at every input delta; that was most of the CPU a model round trip cost this server.
Here the server-sent events are split and `json.loads`-ed, and folded into plain dicts with the same outcome as the
SDK's accumulation: blocks as the API sent them (None fields left out, as `to_dict(exclude_none=True)` gave), a tool
call's input parsed once at the end (partially, like the SDK, when max_tokens cut it off), and the usage counts a
`message_delta` carries overwriting those of `message_start`.

Raises `MalformedStream` (a ValueError) for what cannot be read, and `StreamErrorEvent` for an `error` event.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, cast

from jiter import from_json

_TOOL_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use"})
_USAGE_OVERWRITTEN = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use")


class MalformedStream(ValueError):
    """The stream's events cannot be read as a message."""


class NoMessage(MalformedStream):
    """The event stream ended without a single event: nothing that speaks the API answers like that."""


class StreamErrorEvent(Exception):
    """The API sent an `error` event part-way through the stream."""

    def __init__(self, error_type: str | None, detail: str) -> None:
        super().__init__(detail)
        self.error_type = error_type
        self.detail = detail


@dataclass(slots=True, kw_only=True)
class StreamedMessage:
    model: str = ""
    content: list[dict[str, Any]] = field(default_factory=lambda: [])
    """The content blocks, as dicts in the API's own shape (what is sent back for a paused turn)."""
    stop_reason: str | None = None
    stop_details: dict[str, Any] | None = None
    usage: dict[str, Any] = field(default_factory=lambda: {})


async def read_message(body: AsyncIterable[bytes]) -> StreamedMessage:
    """The message a streamed response body carries.

    Raises:
        StreamErrorEvent: the API reported an error part-way.
        MalformedStream: an event is not JSON, or not what the API sends.
    """
    assembler = _Assembler()
    async for event, data in server_sent_events(body):
        assembler.feed(event, data)
    return assembler.finish()


async def server_sent_events(body: AsyncIterable[bytes]) -> AsyncIterator[tuple[str, bytes]]:
    """(event name, data) of each event that has both, in order; an event left unfinished at the end is dropped.

    Lines end in CRLF, LF or CR; `:` starts a comment; fields other than `event` and `data` are ignored.
    """
    pending = b""
    fields = _EventFields()
    async for chunk in body:
        pending += chunk
        if b"\r" in pending:
            # A CR at the very end may be the first half of a CRLF: keep it until the next chunk says.
            held = pending.endswith(b"\r")
            pending = pending[:-1] if held else pending
            pending = pending.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held else b"")
        lines = pending.split(b"\n")
        pending = lines.pop()
        for line in lines:
            if (event := fields.line(line)) is not None:
                yield event
    # A CR held back at the very end did end a line after all.
    if pending.endswith(b"\r") and (event := fields.line(pending[:-1])) is not None:
        yield event


class _EventFields:
    """The fields of the event being read, line by line."""

    def __init__(self) -> None:
        self.event = ""
        self.data: list[bytes] = []

    def line(self, line: bytes) -> tuple[str, bytes] | None:
        """The finished event when `line` is the blank line that ends one with a name and data."""
        if not line:
            finished = (self.event, b"\n".join(self.data)) if self.event and self.data else None
            self.event, self.data = "", []
            return finished
        if line[0] != 0x3A:  # ":" starts a comment
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                self.data.append(value)
            elif name == b"event":
                self.event = value.decode("utf-8", errors="replace")
        return None


class _Assembler:
    def __init__(self) -> None:
        self._message: StreamedMessage | None = None
        self._tool_json: dict[int, list[str]] = {}

    def feed(self, event: str, data: bytes) -> None:
        if event == "ping":
            return
        if event == "error":
            raise _error_event(data)
        try:
            payload = json.loads(data)
            self._apply(payload["type"], payload)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise MalformedStream(f"unexpected {event} event: {type(exc).__name__}: {exc}") from None
        except ValueError as exc:
            raise MalformedStream(str(exc)) from None

    def _apply(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "message_start":
            started = payload["message"]
            self._message = StreamedMessage(
                model=started.get("model") or "",
                content=[_without_none(block) for block in cast(list[Any], started.get("content") or [])],
                usage=dict(started.get("usage") or {}),
            )
            return
        message = self._message
        if message is None:
            raise MalformedStream(f'the stream sent {kind} before "message_start"')
        if kind == "content_block_start":
            message.content.append(_without_none(payload["content_block"]))
        elif kind == "content_block_delta":
            index: int = payload["index"]
            self._delta(message.content[index], index, payload["delta"])
        elif kind == "message_delta":
            delta = payload["delta"]
            message.stop_reason = delta.get("stop_reason")
            message.stop_details = delta.get("stop_details")
            usage: dict[str, Any] = payload.get("usage") or {}
            message.usage["output_tokens"] = usage.get("output_tokens")
            for name in _USAGE_OVERWRITTEN:
                if usage.get(name) is not None:
                    message.usage[name] = usage[name]

    def _delta(self, block: dict[str, Any], index: int, delta: dict[str, Any]) -> None:
        kind = delta["type"]
        if kind == "text_delta":
            if block["type"] == "text":
                block["text"] += delta["text"]
        elif kind == "input_json_delta":
            if block["type"] in _TOOL_INPUT_BLOCKS:
                self._tool_json.setdefault(index, []).append(delta["partial_json"])
        elif kind == "thinking_delta":
            if block["type"] == "thinking":
                block["thinking"] += delta["thinking"]
        elif kind == "signature_delta":
            if block["type"] == "thinking":
                block["signature"] = delta["signature"]
        elif kind == "citations_delta" and block["type"] == "text":
            block.setdefault("citations", []).append(_without_none(delta["citation"]))

    def finish(self) -> StreamedMessage:
        message = self._message
        if message is None:
            raise NoMessage("the stream ended before it started a message")
        for index, pieces in self._tool_json.items():
            raw = "".join(pieces)
            if not raw:
                continue
            try:
                message.content[index]["input"] = from_json(raw.encode(), partial_mode=True)
            except ValueError as exc:
                raise MalformedStream(f"Unable to parse tool parameter JSON from model: {exc}. JSON: {raw}") from None
        return message


def _error_event(data: bytes) -> StreamErrorEvent:
    """The error an `error` event reports: its type, and its message (else the whole body)."""
    text = data.decode("utf-8", errors="replace")
    try:
        body = json.loads(text)
    except ValueError:
        return StreamErrorEvent(None, text.strip()[:500] or "Error code: 200")
    error: object = cast(dict[str, Any], body).get("error") if isinstance(body, dict) else None
    fields = cast(dict[str, Any], error) if isinstance(error, dict) else {}
    error_type, message = fields.get("type"), fields.get("message")
    return StreamErrorEvent(
        error_type if isinstance(error_type, str) else None,
        message if isinstance(message, str) and message else str(cast(object, body)),
    )


def _without_none(value: Any) -> Any:
    """`value` without None fields, as the SDK's models dumped them; a tool call's input is kept as sent."""
    if isinstance(value, dict):
        mapping = cast(dict[str, Any], value)
        return {
            key: item if key == "input" else _without_none(item) for key, item in mapping.items() if item is not None
        }
    if isinstance(value, list):
        return [_without_none(item) for item in cast(list[Any], value)]
    return value
