"""OpenAIModel against the fake chat-completions API: the real SDK, strict validation, real HTTP."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import openai
import pytest

from mcp_subagents.errors import ModelAPIError
from mcp_subagents.messages import (
    AssistantMessage,
    Message,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from mcp_subagents.models.base import ModelRequest
from mcp_subagents.models.openai import INVALID_JSON_KEY, OpenAIModel
from tests.fakes.fake_llm import FakeLLM, error, hang, refusal, text, tool_use, turn

pytestmark = pytest.mark.anyio

KEY = "sk-proj-test-0123456789"
OVERLOADED = {"type": "overloaded_error", "message": "Overloaded"}
FAST_RETRY = {"retry-after-ms": "1"}
READ = ToolDefinition(
    name="Read",
    description="Read a file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)

MakeModel = Callable[..., OpenAIModel]


@pytest.fixture
async def make_model(fake: FakeLLM) -> AsyncIterator[MakeModel]:
    models: list[OpenAIModel] = []

    def make(**overrides: Any) -> OpenAIModel:
        options: dict[str, Any] = {
            "api_key": KEY,
            "base_url": fake.url + "/v1",
            "max_retries": 0,
            "strict_validation": True,
            "stream_error_backoff": 0.001,
            **overrides,
        }
        models.append(OpenAIModel(**options))
        return models[-1]

    yield make
    for model in models:
        await model.aclose()


def ask(
    *messages: Message, system: str = "You are a subagent.", tools: tuple[ToolDefinition, ...] = ()
) -> ModelRequest:
    return ModelRequest(
        model="qwen3:8b",
        system=system,
        messages=messages or (UserMessage(content="Hello"),),
        tools=tools,
        max_tokens=512,
    )


def unused_url() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


async def failure(model: OpenAIModel, request: ModelRequest | None = None) -> ModelAPIError:
    with anyio.fail_after(10), pytest.raises(ModelAPIError) as caught:
        await model.request(request or ask())
    assert KEY not in str(caught.value)
    return caught.value


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


async def test_server_error_is_retried_by_the_sdk(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(error(529, headers=FAST_RETRY), error(500, headers=FAST_RETRY), turn(text("recovered")))

    response = await make_model(max_retries=2).request(ask())

    assert response.parts == (TextPart(text="recovered"),)
    assert len(fake.requests) == 3


async def test_rate_limit_exhausted_raises_with_the_provider_message(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(*[error(429, message="Rate limit reached for requests", headers=FAST_RETRY)] * 2)

    err = await failure(make_model(max_retries=1))

    assert len(fake.requests) == 2
    assert err.status_code == 429
    assert err.retryable
    assert "429 rate_limit_error: Rate limit reached for requests" in err.message


async def test_mid_stream_error_is_retried(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("partial answer"), stream_error=OVERLOADED), turn(text("full answer")))

    response = await make_model().request(ask())

    assert response.parts == (TextPart(text="full answer"),)
    assert len(fake.requests) == 2


async def test_mid_stream_error_exhausted_raises(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(*[turn(text("partial"), stream_error=OVERLOADED)] * 2)

    err = await failure(make_model(stream_error_retries=1))

    assert len(fake.requests) == 2
    assert err.retryable
    assert "stream error overloaded_error: Overloaded" in err.message


async def test_authentication_error_is_clear_and_not_retried(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(error(401, message=f"Incorrect API key provided: {KEY}"), turn(text("never served")))

    err = await failure(make_model(max_retries=2))

    assert len(fake.requests) == 1
    assert err.status_code == 401
    assert not err.retryable
    assert "rejected the API key" in err.message
    assert "[redacted]" in err.message


async def test_connection_refused(make_model: MakeModel) -> None:
    url = unused_url()

    err = await failure(make_model(base_url=url))

    assert err.retryable
    assert f"Could not connect to the OpenAI API at {url}" in err.message


async def test_deadline_bounds_a_hanging_server(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(hang())
    started = time.monotonic()

    err = await failure(make_model(deadline=0.5))

    assert 0.4 < time.monotonic() - started < 3
    assert err.retryable
    assert "timed out after 0.5 s" in err.message


async def test_deadline_bounds_a_stream_that_stalls(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(hang(after_start=True))

    err = await failure(make_model(deadline=0.3))

    assert "timed out" in err.message


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
