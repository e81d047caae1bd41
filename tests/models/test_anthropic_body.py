"""The request body is encoded once per request, with the system prompt and tools a run repeats spliced in from
their first encoding: every request still carries its own system prompt and tools."""

from __future__ import annotations

from dataclasses import replace

import pytest

from mcp_subagents.core.messages import ToolDefinition, UserMessage
from mcp_subagents.models.base import ModelRequest, WebSearchOptions
from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.models.adapters import ANTHROPIC, READ, MakeModel, Provider

pytestmark = pytest.mark.anyio

GREP = ToolDefinition(name="Grep", description="Search files")


@pytest.fixture
def provider() -> Provider:
    return ANTHROPIC


def request(system: str, tools: tuple[ToolDefinition, ...], **options: object) -> ModelRequest:
    plain = ModelRequest(model="claude-sonnet-5-5", system=system, messages=(UserMessage(content="hi"),), tools=tools)
    return replace(plain, **options)


async def test_interleaved_runs_each_send_their_own_system_prompt_and_tools(
    fake: FakeLLM, make_model: MakeModel
) -> None:
    model = make_model()
    first = request("You are the first.", (READ,))
    second = request("You are the second.", (READ, GREP), web_search=WebSearchOptions(max_uses=2))
    bare = request("", ())
    for sent in (first, second, first, bare, second):
        fake.push(turn(text("ok")))
        await model.request(sent)
    bodies = [entry["body"] for entry in fake.requests]
    assert [body.get("system", [{}])[0].get("text") for body in bodies] == [
        "You are the first.",
        "You are the second.",
        "You are the first.",
        None,
        "You are the second.",
    ]
    assert [[tool["name"] for tool in body.get("tools", [])] for body in bodies] == [
        ["Read"],
        ["Read", "Grep", "web_search"],
        ["Read"],
        [],
        ["Read", "Grep", "web_search"],
    ]
    assert bodies[1]["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert all(body["stream"] is True and body["messages"][0]["role"] == "user" for body in bodies)
    assert "system" not in bodies[3] and "tools" not in bodies[3]


async def test_tool_choice_none_rides_along_with_the_tools(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("summary")))
    await make_model().request(request("s", (READ,), tool_choice="none", thinking=True, effort="low"))
    body = fake.requests[0]["body"]
    assert body["tool_choice"] == {"type": "none"}
    assert body["thinking"] == {"type": "adaptive", "display": "omitted"}
    assert body["output_config"] == {"effort": "low"}
