"""OpenAIModel against the fake chat-completions API: the real SDK, strict validation, real HTTP."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import openai
import pytest

from mcp_subagents.core.messages import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from mcp_subagents.models.base import ModelRequest
from mcp_subagents.models.openai import INVALID_JSON_KEY, to_openai_messages, to_openai_tools
from tests.fakes.fake_llm import FakeLLM, raw, refusal, text, tool_use, turn
from tests.models.adapters import OPENAI, READ, MakeModel, Provider

pytestmark = pytest.mark.anyio

KEY = OPENAI.key
ask = OPENAI.ask


@pytest.fixture
def provider() -> Provider:
    return OPENAI


async def test_text_reply(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("Hello from the fake")))

    response = await make_model().request(ask())

    assert response.parts == (TextPart(text="Hello from the fake"),)
    assert response.stop_reason == "end_turn"
    assert response.model_name == "qwen3:8b"
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["body"]["stream"] is True
    assert sent["body"]["stream_options"] == {"include_usage": True}


async def _sent_by_chat_completions_create(fake: FakeLLM, request: ModelRequest) -> dict[str, object]:
    """The body the SDK's `chat.completions.create` sends for `request`, with the arguments the adapter once used."""
    client = openai.AsyncOpenAI(api_key=KEY, base_url=f"{fake.url}/v1", max_retries=0)
    tools = to_openai_tools(request.tools)
    stream = await client.chat.completions.create(
        model=request.model,
        messages=to_openai_messages(request.system, request.messages),
        tools=tools or openai.omit,
        tool_choice="none" if tools and request.tool_choice == "none" else openai.omit,
        reasoning_effort=request.effort if request.effort is not None else openai.omit,
        max_tokens=request.max_tokens,
        stream=True,
        stream_options={"include_usage": True},
    )
    async with stream:
        async for _ in stream:
            pass
    await client.close()
    return fake.requests[-1]["body"]


@pytest.mark.parametrize(
    "changes",
    [{}, {"tools": (READ,)}, {"tools": (READ,), "tool_choice": "none", "effort": "high"}, {"tool_choice": "none"}],
)
async def test_the_body_is_what_chat_completions_create_sends(
    fake: FakeLLM, make_model: MakeModel, changes: dict[str, object]
) -> None:
    request = replace(ask(UserMessage(content="Hi"), AssistantMessage(parts=(TextPart(text="Hello"),))), **changes)
    fake.push(turn(text("one")))
    fake.push(turn(text("two")))

    await make_model().request(request)
    ours = fake.requests[-1]

    assert list(ours["body"].items()) == list((await _sent_by_chat_completions_create(fake, request)).items())
    assert ours["headers"]["authorization"] == f"Bearer {KEY}"


_ODD: list[dict[str, Any] | int] = [
    {"id": "c1", "model": "served-model", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}}]},
    {"choices": None},
    5,
    {
        "choices": [
            {"index": 1, "delta": {"content": "another choice"}},
            {
                "index": 0,
                "delta": {
                    "content": "lo",
                    "refusal": None,
                    "tool_calls": [{"id": "call_x", "function": {"name": "Read", "arguments": '{"path"'}}],
                },
            },
        ]
    },
    {
        "choices": [
            {
                "index": 0,
                "delta": {"tool_calls": [{"function": {"arguments": ': "a.txt"}'}}]},
                "finish_reason": "tool_calls",
            }
        ]
    },
    {"choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 7, "prompt_tokens_details": None}},
]
ODD_CHUNKS = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in _ODD) + b"data: [DONE]\n\n"


async def test_odd_chunks_are_read_as_far_as_they_make_sense(fake: FakeLLM, make_model: MakeModel) -> None:
    """Chunks are plain JSON objects here: a missing or null field, a choice other than the first, a tool-call
    delta without `index`, a chunk that is not an object at all are each passed over, and the rest assembles."""
    fake.push(raw(content_type="text/event-stream", body=ODD_CHUNKS))

    response = await make_model().request(ask(tools=(READ,)))

    assert response.parts == (TextPart(text="Hello"), ToolCall(id="call_x", name="Read", arguments={"path": "a.txt"}))
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 7)
    assert response.model_name == "served-model"


async def test_tool_calls_are_assembled_by_index(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(
        turn(
            text("Reading both"),
            tool_use("Read", {"path": "a.txt"}, id="call_a"),
            tool_use("Read", {"path": "b.txt", "offset": 10}, id="call_b"),
        )
    )

    response = await make_model().request(ask(tools=(READ,)))

    assert response.stop_reason == "tool_use"
    assert response.parts == (
        TextPart(text="Reading both"),
        ToolCall(id="call_a", name="Read", arguments={"path": "a.txt"}),
        ToolCall(id="call_b", name="Read", arguments={"path": "b.txt", "offset": 10}),
    )


async def test_request_mapping(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("done")))
    history = (
        UserMessage(content="Read a.txt and b.txt"),
        AssistantMessage(
            parts=(
                ToolCall(id="call_a", name="Read", arguments={"path": "a.txt"}),
                ToolCall(id="call_b", name="Read", arguments={INVALID_JSON_KEY: '{"path": b.txt}'}),
            )
        ),
        ToolResultMessage(
            results=(
                ToolResult(call_id="call_a", content="alpha"),
                ToolResult(call_id="call_b", content="Invalid JSON", is_error=True),
            )
        ),
        AssistantMessage(parts=(TextPart(text="Retrying"),)),
        UserMessage(content="Go on"),
    )

    await make_model().request(ask(*history, tools=(READ,)))

    sent = fake.requests[0]
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    body = sent["body"]
    assert body["model"] == "qwen3:8b"
    assert body["max_tokens"] == 512
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "Read", "description": "Read a file", "parameters": READ.input_schema},
        }
    ]
    assert body["messages"] == [
        {"role": "system", "content": "You are a subagent."},
        {"role": "user", "content": "Read a.txt and b.txt"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "Read", "arguments": '{"path": "a.txt"}'}},
                {"id": "call_b", "type": "function", "function": {"name": "Read", "arguments": '{"path": b.txt}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "alpha"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: Invalid JSON"},
        {"role": "assistant", "content": "Retrying"},
        {"role": "user", "content": "Go on"},
    ]


async def test_no_system_and_no_tools_are_left_out(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("ok")))

    await make_model().request(ask(system=""))

    body = fake.requests[0]["body"]
    assert body["messages"] == [{"role": "user", "content": "Hello"}]
    assert "tools" not in body


async def test_usage_separates_cached_tokens(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("a"), input_tokens=20, output_tokens=7, cache_read=300, cache_write=50))

    response = await make_model().request(ask())

    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens) == (20, 7)
    assert (usage.cache_read_tokens, usage.cache_creation_tokens) == (300, 50)


async def test_missing_usage_counts_zero(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("a"), send_usage=False))

    response = await make_model().request(ask())

    assert response.usage.input_tokens == response.usage.output_tokens == 0


@pytest.mark.parametrize(
    ("scripted", "expected"),
    [("end_turn", "end_turn"), ("tool_use", "tool_use"), ("max_tokens", "max_tokens"), ("refusal", "refusal")],
)
async def test_finish_reasons(fake: FakeLLM, make_model: MakeModel, scripted: str, expected: str) -> None:
    blocks = (text("x"), tool_use("Read", {"path": "a"})) if scripted == "tool_use" else (text("x"),)
    fake.push(turn(*blocks, stop_reason=scripted))

    response = await make_model().request(ask())

    assert response.stop_reason == expected


async def test_stop_with_tool_calls_counts_as_tool_use(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(tool_use("Read", {"path": "a"}), stop_reason="end_turn"))

    response = await make_model().request(ask())

    assert response.stop_reason == "tool_use"


async def test_refusal_explanation_is_passed_through(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(refusal("I can't help with that request."))

    response = await make_model().request(ask())

    assert response.stop_reason == "refusal"
    assert response.refusal_explanation == "I can't help with that request."


async def test_invalid_tool_json_keeps_the_raw_text(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(tool_use("Read", '{"path": a.txt}'), tool_use("Read", "[1, 2]"), tool_use("Grep", "")))

    response = await make_model().request(ask())

    assert [p.arguments for p in response.parts if isinstance(p, ToolCall)] == [
        {INVALID_JSON_KEY: '{"path": a.txt}'},
        {INVALID_JSON_KEY: "[1, 2]"},
        {},
    ]


async def test_missing_tool_call_ids_are_invented(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(tool_use("Read", {"path": "a"}, id=""), tool_use("Read", {"path": "b"}, id="")))

    response = await make_model().request(ask())

    ids = [p.id for p in response.parts if isinstance(p, ToolCall)]
    assert len(ids) == 2
    assert len(set(ids)) == 2
    assert all(i.startswith("call_") for i in ids)


async def test_truncated_tool_json_at_length_does_not_crash(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(tool_use("Write", {"path": "a.txt", "content": "x" * 200}), truncate_tool_json=True))

    response = await make_model().request(ask())

    assert response.stop_reason == "max_tokens"
    call = response.parts[-1]
    assert isinstance(call, ToolCall)
    assert INVALID_JSON_KEY in call.arguments


async def test_fake_serves_plain_json_that_passes_strict_validation(fake: FakeLLM) -> None:
    fake.push(
        turn(text("hi"), tool_use("Read", {"path": "a"}, id="call_1"), cache_read=5),
        turn(text("no usage"), send_usage=False),
    )
    async with openai.AsyncOpenAI(
        api_key=KEY, base_url=fake.url + "/v1", max_retries=0, _strict_response_validation=True
    ) as client:
        first = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        second = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content == "hi"
    assert choice.message.tool_calls is not None
    assert first.usage is not None
    assert first.usage.prompt_tokens == 15
    assert second.usage is None
