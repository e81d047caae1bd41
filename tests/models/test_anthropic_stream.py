"""The Messages API event stream read without the SDK's per-event models: the same message as the SDK's own
accumulation (side by side over the fake API), and the stream's corner cases (line endings, comments, split chunks,
error events, cut-off tool input)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anthropic
import httpx2
import pytest

from mcp_subagents.models.anthropic_stream import MalformedStream, StreamErrorEvent, read_message
from tests.fakes.fake_llm import (
    FakeLLM,
    Turn,
    Whole,
    refusal,
    text,
    thinking,
    tool_use,
    turn,
    web_search_blocks,
)

pytestmark = pytest.mark.anyio


async def _chunks(pieces: Iterable[bytes]) -> AsyncIterator[bytes]:
    for piece in pieces:
        yield piece


def _events(*events: tuple[str, dict[str, Any]], separator: str = "\n") -> bytes:
    return "".join(
        f"event: {name}{separator}data: {json.dumps(data)}{separator}{separator}" for name, data in events
    ).encode()


START: tuple[str, dict[str, Any]] = (
    "message_start",
    {"type": "message_start", "message": {"model": "m", "content": [], "usage": {}}},
)


def _one_text_block(words: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        START,
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": words}},
        ),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        ),
    ]


VARIED_TURNS: list[Turn] = [
    turn(text("Hello"), tool_use("Read", {"path": "a.txt", "n": [1, None]}), cache_write=7, cache_read=3),
    turn(thinking("weighing it", "sig-9"), text("answer")),
    turn(Whole({"type": "redacted_thinking", "data": "opaque"}), text("after redaction")),
    turn(*web_search_blocks("mcp", [("Spec", "https://example.org/spec")]), text("found"), stop_reason="pause_turn"),
    turn(text("Writing"), tool_use("Write", {"path": "a", "content": "x" * 300}), truncate_tool_json=True),
    refusal("not this"),
    turn(text("cut"), stop_reason="stop_sequence"),
]


@pytest.mark.parametrize("step", VARIED_TURNS, ids=lambda t: "-".join(type(b).__name__ for b in t.blocks) or "empty")
async def test_the_message_is_the_one_the_sdk_accumulates(fake: FakeLLM, step: Turn) -> None:
    fake.push(step, step)
    request: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
    }
    async with anthropic.AsyncAnthropic(api_key="k", base_url=fake.url, max_retries=0) as client:
        async with client.messages.stream(**request) as stream:
            expected = await stream.get_final_message()
        raw = await client.messages.create(**request, stream=True)
        try:
            ours = await read_message(raw.response.aiter_bytes())
        finally:
            await raw.close()

    assert ours.content == [block.to_dict(mode="json", exclude_none=True) for block in expected.content]
    assert ours.stop_reason == expected.stop_reason
    assert ours.model == expected.model
    assert ours.usage == expected.usage.to_dict(mode="json", exclude_none=True)
    details = expected.stop_details.to_dict(mode="json") if expected.stop_details is not None else None
    assert ours.stop_details == details


@pytest.mark.parametrize("separator", ["\n", "\r\n", "\r"])
async def test_any_line_ending_and_any_chunking_give_the_same_message(separator: str) -> None:
    body = b": a comment line\n" + _events(*_one_text_block("héllo"), separator=separator)
    for size in (1, 2, 7, len(body)):
        pieces = [body[i : i + size] for i in range(0, len(body), size)]
        message = await read_message(_chunks(pieces))
        assert message.content == [{"type": "text", "text": "héllo"}]
        assert message.stop_reason == "end_turn"
        assert message.usage == {"output_tokens": 3}


async def test_data_split_over_several_lines_is_joined() -> None:
    payload = json.dumps(START[1], indent=1).replace("\n", "\ndata: ")
    message = await read_message(_chunks([f"event: message_start\ndata: {payload}\n\n".encode()]))
    assert message.model == "m"


async def test_an_event_left_unfinished_at_the_end_is_dropped() -> None:
    events = _one_text_block("kept")
    body = _events(*events[:2]) + _events(events[2]).rstrip(b"\n")
    message = await read_message(_chunks([body]))
    assert message.content == [{"type": "text", "text": ""}]


async def test_an_error_event_names_its_type_and_message() -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(StreamErrorEvent) as raised:
        await read_message(_chunks([_events(START, ("error", error))]))
    assert (raised.value.error_type, raised.value.detail) == ("overloaded_error", "Overloaded")


async def test_an_error_event_without_json_reports_its_text() -> None:
    with pytest.raises(StreamErrorEvent) as raised:
        await read_message(_chunks([b"event: error\ndata: upstream fell over\n\n"]))
    assert (raised.value.error_type, raised.value.detail) == (None, "upstream fell over")


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'event: message_start\ndata: {"type": "message", "content": [oops\n\n', "Expecting value"),
        (_events(_one_text_block("x")[1]), 'before "message_start"'),
        (b"", "ended before it started a message"),
        (
            _events(START, ("content_block_delta", {"type": "content_block_delta", "index": 4, "delta": {}})),
            "IndexError",
        ),
    ],
)
async def test_what_cannot_be_read_is_a_value_error_that_says_why(body: bytes, says: str) -> None:
    with pytest.raises(MalformedStream, match=says):
        await read_message(_chunks([body]))


async def test_a_tool_input_cut_off_mid_string_keeps_what_is_complete() -> None:
    block: dict[str, Any] = {"type": "tool_use", "id": "t1", "name": "Write", "input": {}}
    deltas = ['{"path": "a.txt", "con', 'tent": "half of it']
    events: list[tuple[str, dict[str, Any]]] = [
        START,
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        *[
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": d}},
            )
            for d in deltas
        ],
    ]
    message = await read_message(_chunks([_events(*events)]))
    assert message.content[0]["input"] == {"path": "a.txt"}


async def test_a_dropped_connection_surfaces_as_a_transport_error() -> None:
    async def cut_short() -> AsyncIterator[bytes]:
        yield _events(START)
        raise httpx2.RemoteProtocolError("peer closed connection without sending complete message body")

    with pytest.raises(httpx2.TransportError):
        await read_message(cut_short())
