"""AnthropicModel against the fake Messages API: the real SDK, strict validation, real HTTP."""

from __future__ import annotations

import subprocess
import sys
import time

import anthropic
import pytest

from mcp_subagents.core.errors import PromptTooLongError
from mcp_subagents.core.messages import (
    AssistantMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from tests.fakes.fake_llm import FakeLLM, error, refusal, text, tool_use, turn
from tests.models.adapters import ANTHROPIC, READ, MakeModel, Provider

pytestmark = pytest.mark.anyio

KEY = ANTHROPIC.key
GREP = ToolDefinition(name="Grep", description="Search files")
ask = ANTHROPIC.ask
failure = ANTHROPIC.failure


@pytest.fixture
def provider() -> Provider:
    return ANTHROPIC


async def test_text_reply(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("Hello from the fake")))

    response = await make_model().request(ask())

    assert response.parts == (TextPart(text="Hello from the fake"),)
    assert response.stop_reason == "end_turn"
    assert response.model_name == "claude-sonnet-5-5"
    assert fake.requests[0]["path"] == "/v1/messages"
    assert fake.requests[0]["body"]["stream"] is True


async def test_tool_use_reply_becomes_tool_calls(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("Reading both"), tool_use("Read", {"path": "a.txt"}, id="toolu_1"), tool_use("Grep", {})))

    response = await make_model().request(ask(tools=(READ, GREP)))

    assert response.stop_reason == "tool_use"
    assert response.parts[0] == TextPart(text="Reading both")
    assert response.parts[1] == ToolCall(id="toolu_1", name="Read", arguments={"path": "a.txt"})
    assert isinstance(response.parts[2], ToolCall)
    assert response.parts[2].arguments == {}


async def test_request_mapping_with_cache_breakpoints(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("done")))
    history = (
        UserMessage(content="Read a.txt and b.txt"),
        AssistantMessage(
            parts=(
                TextPart(text=""),
                TextPart(text="Reading"),
                ToolCall(id="toolu_a", name="Read", arguments={"path": "a.txt"}),
                ToolCall(id="toolu_b", name="Read", arguments={"path": "b.txt"}),
            )
        ),
        ToolResultMessage(
            results=(
                ToolResult(call_id="toolu_a", content="alpha"),
                ToolResult(call_id="toolu_b", content="No such file", is_error=True),
            )
        ),
    )

    await make_model().request(ask(*history, tools=(READ, GREP)))

    sent = fake.requests[0]
    assert sent["headers"]["x-api-key"] == KEY
    assert "authorization" not in sent["headers"]
    body = sent["body"]
    assert body["model"] == "claude-sonnet-5-5"
    assert body["max_tokens"] == 1024
    assert body["system"] == [{"type": "text", "text": "You are a subagent.", "cache_control": {"type": "ephemeral"}}]
    assert body["tools"] == [
        {"name": "Read", "description": "Read a file", "input_schema": READ.input_schema},
        {
            "name": "Grep",
            "description": "Search files",
            "input_schema": {"type": "object", "properties": {}},
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Read a.txt and b.txt"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading"},
                {"type": "tool_use", "id": "toolu_a", "name": "Read", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"path": "b.txt"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "alpha", "is_error": False},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_b",
                    "content": "No such file",
                    "is_error": True,
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ]
    assert str(body).count("cache_control") <= 4


async def test_user_text_after_tool_results_is_merged_into_one_turn(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("ok")))
    history = (
        UserMessage(content="Go"),
        AssistantMessage(parts=(ToolCall(id="toolu_a", name="Grep", arguments={}),)),
        ToolResultMessage(results=(ToolResult(call_id="toolu_a", content="found"),)),
        UserMessage(content="Continue where you left off."),
    )

    await make_model().request(ask(*history, system="", tools=()))

    body = fake.requests[0]["body"]
    assert "system" not in body
    assert "tools" not in body
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "found", "is_error": False},
        {"type": "text", "text": "Continue where you left off.", "cache_control": {"type": "ephemeral"}},
    ]


async def test_usage_includes_cache_reads_and_writes(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("a"), input_tokens=12, output_tokens=34, cache_write=1500, cache_read=0))
    fake.push(turn(text("b"), input_tokens=3, output_tokens=4, cache_write=0, cache_read=1500))
    model = make_model()

    first = await model.request(ask())
    second = await model.request(ask())

    assert (first.usage.input_tokens, first.usage.output_tokens) == (12, 34)
    assert (first.usage.cache_creation_tokens, first.usage.cache_read_tokens) == (1500, 0)
    assert (second.usage.cache_creation_tokens, second.usage.cache_read_tokens) == (0, 1500)
    total = first.usage + second.usage
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens) == (15, 38, 1500)


@pytest.mark.parametrize(
    ("api_reason", "expected"),
    [
        ("end_turn", "end_turn"),
        ("tool_use", "tool_use"),
        ("max_tokens", "max_tokens"),
        ("stop_sequence", "stop_sequence"),
        ("refusal", "refusal"),
        ("model_context_window_exceeded", "context_window"),
    ],
)
async def test_stop_reasons(fake: FakeLLM, make_model: MakeModel, api_reason: str, expected: str) -> None:
    fake.push(turn(text("x"), stop_reason=api_reason))

    response = await make_model().request(ask())

    assert response.stop_reason == expected


async def test_refusal_explanation_is_passed_through(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(refusal("This request looks like malware development.", text("I can't help with that.")))

    response = await make_model().request(ask())

    assert response.stop_reason == "refusal"
    assert response.refusal_explanation == "This request looks like malware development."
    assert response.parts == (TextPart(text="I can't help with that."),)


async def test_pause_turn_is_continued_with_the_paused_content(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(
        turn(text("Searching"), stop_reason="pause_turn", output_tokens=3), turn(text("Found it"), output_tokens=4)
    )

    response = await make_model().request(ask(UserMessage(content="Find it")))

    assert response.parts == (TextPart(text="Searching"), TextPart(text="Found it"))
    assert response.stop_reason == "end_turn"
    assert response.usage.output_tokens == 7
    resumed = fake.requests[1]["body"]["messages"]
    assert resumed[-1] == {"role": "assistant", "content": [{"type": "text", "text": "Searching"}]}
    assert resumed[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}


async def test_truncated_tool_json_at_max_tokens_does_not_crash(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(
        turn(text("Writing"), tool_use("Write", {"path": "a.txt", "content": "x" * 200}), truncate_tool_json=True)
    )

    response = await make_model().request(ask())

    assert response.stop_reason == "max_tokens"
    call = response.parts[-1]
    assert isinstance(call, ToolCall)
    assert call.name == "Write"
    assert isinstance(call.arguments, dict)
    assert "content" not in call.arguments


async def test_unparseable_tool_input_is_a_model_api_error(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(tool_use("Read", "{not json at all")))

    err = await failure(make_model())

    assert "could not be parsed" in err.message


async def test_mid_stream_invalid_request_is_not_retried(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("x"), stream_error={"type": "invalid_request_error", "message": "prompt is too long"}))

    err = await failure(make_model(max_retries=2))

    assert len(fake.requests) == 1
    assert not err.retryable
    assert isinstance(err, PromptTooLongError)
    assert "prompt is too long" in err.message


async def test_bad_request_is_not_retried(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(error(400, message="max_tokens: must be at most 64000"))

    err = await failure(make_model(max_retries=2))

    assert len(fake.requests) == 1
    assert err.status_code == 400
    assert "rejected the request (400 invalid_request_error: max_tokens: must be at most 64000)" in err.message


async def test_a_retry_after_past_the_deadline_gives_up_at_once(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(error(529, headers={"retry-after": "30"}), turn(text("too late")))
    started = time.monotonic()

    err = await failure(make_model(deadline=0.5, max_retries=2))

    assert time.monotonic() - started < 3
    assert len(fake.requests) == 1
    assert err.retryable
    assert "529 overloaded_error" in err.message
    assert "waiting 30.0 s more would pass the 0.5 s deadline" in err.message


async def test_server_error_message_is_redacted_when_it_echoes_the_key(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(error(500, message=f"upstream said: bad key {KEY}", headers={"x-should-retry": "false"}))

    err = await failure(make_model())

    assert "[redacted]" in err.message
    assert KEY not in repr(err)


async def test_client_is_rebuilt_after_aclose(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("one")), turn(text("two")))
    model = make_model()

    await model.request(ask())
    await model.aclose()
    response = await model.request(ask())

    assert response.parts == (TextPart(text="two"),)


async def test_fake_serves_plain_json_that_passes_strict_validation(fake: FakeLLM) -> None:
    fake.push(
        turn(text("hi"), tool_use("Read", {"path": "a"}), cache_read=5),
        refusal("no"),
        turn(text("x"), stop_reason="stop_sequence"),
    )
    async with anthropic.AsyncAnthropic(
        api_key=KEY, base_url=fake.url, max_retries=0, _strict_response_validation=True
    ) as client:
        first = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        second = await client.messages.create(
            model="claude-sonnet-5-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        third = await client.messages.create(
            model="claude-sonnet-5-5",
            max_tokens=10,
            messages=[{"role": "user", "content": "hi"}],
            stop_sequences=["##"],
        )

    assert first.stop_reason == "tool_use"
    assert first.usage.cache_read_input_tokens == 5
    assert [b.type for b in first.content] == ["text", "tool_use"]
    assert second.stop_details is not None
    assert second.stop_details.explanation == "no"
    assert third.stop_sequence == "##"


async def test_fake_answers_500_when_the_script_is_empty(fake: FakeLLM, make_model: MakeModel) -> None:
    err = await failure(make_model(max_retries=2))

    assert len(fake.requests) == 1
    assert "script is empty" in err.message


async def test_fake_default_and_callable_steps(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.default = turn(text("default"))
    fake.push(lambda body: turn(text(f"you said {body['messages'][0]['content'][0]['text']}")))
    model = make_model()

    first = await model.request(ask(UserMessage(content="ping")))
    second = await model.request(ask())

    assert first.parts == (TextPart(text="you said ping"),)
    assert second.parts == (TextPart(text="default"),)


def test_importing_the_models_package_does_not_import_the_sdks() -> None:
    code = "import sys, mcp_subagents.models; assert not {'anthropic', 'openai'} & set(sys.modules), sys.modules.keys()"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=30)
