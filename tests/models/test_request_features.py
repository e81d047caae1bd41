"""Thinking, effort, tool choice, web search, auth headers and overload retries, as they reach the wire: the real SDKs
against the fake LLM."""

from __future__ import annotations

import email.utils
import time

import pytest

from mcp_subagents.core.errors import PromptTooLongError
from mcp_subagents.core.messages import (
    AssistantMessage,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from mcp_subagents.models._adapter import retry_hints
from mcp_subagents.models.base import ModelRequest, SearchResult, WebSearchOptions
from tests.fakes.fake_llm import FakeLLM, Whole, error, text, thinking, tool_use, turn, web_search_blocks
from tests.models.adapters import ANTHROPIC, OPENAI, READ, MakeModel, Provider

pytestmark = pytest.mark.anyio


def request(provider: Provider, **fields: object) -> ModelRequest:
    base = provider.ask(tools=(READ,))
    return ModelRequest(
        model=base.model,
        system=base.system,
        messages=base.messages,
        tools=base.tools,
        max_tokens=base.max_tokens,
        **fields,  # pyright: ignore[reportArgumentType]
    )


class TestAnthropic:
    @pytest.fixture
    def provider(self) -> Provider:
        return ANTHROPIC

    async def test_adaptive_thinking_and_effort_are_sent_as_claude_code_sends_them(
        self, fake: FakeLLM, make_model: MakeModel
    ) -> None:
        fake.push(turn(text("a")), turn(text("b")))
        model = make_model()

        await model.request(request(ANTHROPIC, thinking=True, effort="high"))
        await model.request(request(ANTHROPIC))

        first, second = (r["body"] for r in fake.requests)
        assert first["thinking"] == {"type": "adaptive", "display": "omitted"}
        assert first["output_config"] == {"effort": "high"}
        assert "thinking" not in second and "output_config" not in second

    async def test_thinking_blocks_come_back_with_their_signatures(self, fake: FakeLLM, make_model: MakeModel) -> None:
        redacted = {"type": "redacted_thinking", "data": "opaque-bytes"}
        fake.push(
            turn(thinking("", "sig-1"), Whole(redacted), tool_use("Read", {"path": "a"}, id="toolu_1")),
            turn(text("done")),
        )
        model = make_model()

        first = await model.request(request(ANTHROPIC, thinking=True))
        assert first.parts[:2] == (
            ThinkingPart(text="", signature="sig-1"),
            ProviderPart(provider="anthropic", data=redacted),
        )
        history = (
            UserMessage(content="Hello"),
            AssistantMessage(parts=first.parts),
            ToolResultMessage(results=(ToolResult(call_id="toolu_1", content="alpha"),)),
        )
        await model.request(ModelRequest(model=ANTHROPIC.model, system="s", messages=history, tools=(READ,)))

        sent = fake.requests[1]["body"]["messages"][1]["content"]
        assert sent[0] == {"type": "thinking", "thinking": "", "signature": "sig-1"}
        assert sent[1] == redacted
        assert sent[2]["type"] == "tool_use"

    async def test_tool_choice_none(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(turn(text("summary")))

        await make_model().request(request(ANTHROPIC, tool_choice="none"))

        assert fake.requests[0]["body"]["tool_choice"] == {"type": "none"}

    async def test_web_search_is_the_server_side_tool_with_the_domains(
        self, fake: FakeLLM, make_model: MakeModel
    ) -> None:
        use, results = web_search_blocks("mcp spec", [("Spec", "https://modelcontextprotocol.io/spec")])
        fake.push(turn(use, results, text("The spec is at modelcontextprotocol.io.")))
        options = WebSearchOptions(allowed_domains=("modelcontextprotocol.io",), max_uses=3)

        response = await make_model().request(request(ANTHROPIC, web_search=options))

        assert fake.requests[0]["body"]["tools"][-1] == {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["modelcontextprotocol.io"],
        }
        assert response.search_results == (SearchResult(title="Spec", url="https://modelcontextprotocol.io/spec"),)
        assert response.parts[-1] == TextPart(text="The spec is at modelcontextprotocol.io.")

    async def test_context_blocks_and_skills_are_separate_text_blocks(
        self, fake: FakeLLM, make_model: MakeModel
    ) -> None:
        fake.push(turn(text("ok")))
        first = UserMessage(content="Do it", context=("<system-reminder>ctx</system-reminder>",), attachments=("S",))

        await make_model().request(ModelRequest(model=ANTHROPIC.model, system="s", messages=(first,), tools=()))

        blocks = fake.requests[0]["body"]["messages"][0]["content"]
        assert [b["text"] for b in blocks] == ["<system-reminder>ctx</system-reminder>", "Do it", "S"]

    async def test_the_key_goes_out_as_x_api_key(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(turn(text("a")))

        await make_model().request(ANTHROPIC.ask())

        headers = fake.requests[0]["headers"]
        assert headers["x-api-key"] == ANTHROPIC.key
        assert "authorization" not in headers

    async def test_an_auth_token_goes_out_as_bearer(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(turn(text("a")))

        await make_model(bearer=True).request(ANTHROPIC.ask())

        headers = fake.requests[0]["headers"]
        assert headers["authorization"] == f"Bearer {ANTHROPIC.key}"
        assert "x-api-key" not in headers

    async def test_a_rejected_auth_token_names_its_variable(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(error(401))

        err = await ANTHROPIC.failure(make_model(bearer=True))

        assert "Check ANTHROPIC_AUTH_TOKEN." in err.message

    async def test_prompt_too_long_is_its_own_error_and_not_retried(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(error(400, message="prompt is too long: 1200000 tokens > 1000000 maximum"), turn(text("never")))

        err = await ANTHROPIC.failure(make_model(max_retries=3))

        assert isinstance(err, PromptTooLongError)
        assert len(fake.requests) == 1


class TestOpenAI:
    @pytest.fixture
    def provider(self) -> Provider:
        return OPENAI

    async def test_effort_maps_to_reasoning_effort_and_thinking_sends_nothing(
        self, fake: FakeLLM, make_model: MakeModel
    ) -> None:
        fake.push(turn(text("a")), turn(text("b")))
        model = make_model()

        await model.request(request(OPENAI, thinking=True, effort="xhigh", tool_choice="none"))
        await model.request(request(OPENAI))

        first, second = (r["body"] for r in fake.requests)
        assert first["reasoning_effort"] == "xhigh"
        assert first["tool_choice"] == "none"
        assert "thinking" not in first
        assert "reasoning_effort" not in second and "tool_choice" not in second

    async def test_thinking_parts_are_left_out_and_blocks_joined(self, fake: FakeLLM, make_model: MakeModel) -> None:
        fake.push(turn(text("ok")))
        history = (
            UserMessage(content="Do it", context=("ctx",), attachments=("skill",)),
            AssistantMessage(
                parts=(
                    ThinkingPart(text="hm", signature="s"),
                    ProviderPart(provider="anthropic", data={"type": "redacted_thinking", "data": "x"}),
                    TextPart(text="Reading"),
                    ToolCall(id="c1", name="Read", arguments={"path": "a"}),
                )
            ),
            ToolResultMessage(results=(ToolResult(call_id="c1", content="alpha"),)),
        )

        await make_model().request(ModelRequest(model=OPENAI.model, system="s", messages=history, tools=(READ,)))

        messages = fake.requests[0]["body"]["messages"]
        assert messages[1] == {"role": "user", "content": "ctx\n\nDo it\n\nskill"}
        assert messages[2]["content"] == "Reading"


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=lambda provider: provider.name)
def provider(request: pytest.FixtureRequest) -> Provider:
    return request.param


async def test_a_529_storm_that_recovers_is_waited_out(
    fake: FakeLLM, make_model: MakeModel, provider: Provider
) -> None:
    """Five 529s in a row ended a task in about a second; Claude Code waits them out, and so do we."""
    fake.push(*[error(529)] * 5, error(503), error(429), turn(text("back")))

    response = await make_model(max_retries=10, retry_backoff=0.001, max_backoff=0.01).request(provider.ask())

    assert response.parts == (TextPart(text="back"),)
    assert len(fake.requests) == 8


async def test_the_storm_outlasting_the_retries_fails_with_the_provider_message(
    fake: FakeLLM, make_model: MakeModel, provider: Provider
) -> None:
    fake.push(*[error(529, message="FAKE-529 Overloaded")] * 4)

    err = await provider.failure(make_model(max_retries=3, retry_backoff=0.001, max_backoff=0.01))

    assert len(fake.requests) == 4
    assert "529" in err.message and "FAKE-529 Overloaded" in err.message


async def test_x_should_retry_false_is_obeyed(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(error(529, headers={"x-should-retry": "false"}), turn(text("never")))

    err = await provider.failure(make_model(max_retries=5))

    assert len(fake.requests) == 1
    assert not err.retryable


async def test_x_should_retry_true_retries_a_400(fake: FakeLLM, make_model: MakeModel, provider: Provider) -> None:
    fake.push(error(400, headers={"x-should-retry": "true", "retry-after-ms": "1"}), turn(text("ok")))

    response = await make_model(max_retries=2).request(provider.ask())

    assert response.parts == (TextPart(text="ok"),)


def test_retry_hints_read_every_form_of_retry_after() -> None:
    later = email.utils.formatdate(time.time() + 120, usegmt=True)
    assert retry_hints({"Retry-After-Ms": "250"}) == (None, 0.25)
    assert retry_hints({"retry-after": "3"}) == (None, 3.0)
    should, wait = retry_hints({"retry-after": later, "x-should-retry": "true"})
    assert should is True and wait is not None and 100 < wait <= 120
    assert retry_hints({"retry-after": "soon"}) == (None, None)
    assert retry_hints({"x-should-retry": "false"}) == (False, None)
