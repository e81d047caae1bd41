"""The request body is encoded once per request, with the system prompt and tools a run repeats spliced in from
their first encoding, and the turns of a conversation that can no longer change kept encoded from one request to the
next: every request still carries its own system prompt and tools, and the whole conversation."""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from mcp_subagents.core.messages import (
    AssistantMessage,
    Message,
    ProviderPart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolResultMessage,
    UserMessage,
)
from mcp_subagents.models.base import ConversationMemo, ModelRequest, WebSearchOptions
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


# ---- a conversation that grows: each request carries all of it, however much the memo kept ----------------------


def expected_turns(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The Messages API turns, mapped the plain way: every message, every request."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        role, blocks = expected_blocks(message)
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    for role, blocks in turns:
        if role == "user":
            blocks.sort(key=lambda block: block["type"] != "tool_result")
    if turns:
        turns[-1][1][-1] = {**turns[-1][1][-1], "cache_control": {"type": "ephemeral"}}
    return [{"role": role, "content": blocks} for role, blocks in turns]


def expected_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        return "user", [{"type": "text", "text": block} for block in message.blocks]
    if isinstance(message, ToolResultMessage):
        return "user", [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
            for r in message.results
        ]
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCall):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments})
        elif isinstance(part, ThinkingPart):
            blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
        elif isinstance(part, ProviderPart) and part.provider == "anthropic":
            blocks.append(dict(part.data))
    return "assistant", blocks


def call(number: int, name: str = "TodoWrite") -> AssistantMessage:
    return AssistantMessage(parts=(ToolCall(id=f"toolu_{number}", name=name, arguments={"n": number, "é": "ü"}),))


def answered(number: int, content: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(results=(ToolResult(call_id=f"toolu_{number}", content=content),))


GROWING: tuple[Message, ...] = (
    UserMessage(content="Work through it", context=("CLAUDE.md: be brief",), attachments=("a skill",)),
    call(1),
    answered(1, "first 🎉 result\u2028with a line separator"),
    UserMessage(content="A hook says: go on"),  # merges into the tool results' turn, after them
    AssistantMessage(parts=(ThinkingPart(text="", signature="sig"), TextPart(text="Thinking done"))),
    UserMessage(content="Continue"),
    AssistantMessage(parts=(TextPart(text=""),)),  # sends nothing: its neighbours merge into one user turn
    UserMessage(content="Still there?"),
    AssistantMessage(
        parts=(
            ProviderPart(provider="anthropic", data={"type": "server_tool_use", "id": "srv_1", "name": "web_search"}),
            ProviderPart(provider="anthropic", data={"type": "redacted_thinking", "cache_control": {"type": "x"}}),
        )
    ),
    UserMessage(content="Now the tools"),
    *(message for number in range(2, 8) for message in (call(number), answered(number))),
    AssistantMessage(parts=(TextPart(text="Done."),)),
)


async def test_each_request_of_a_growing_conversation_carries_all_of_it(fake: FakeLLM, make_model: MakeModel) -> None:
    model = make_model()
    memo = ConversationMemo()
    for length in range(1, len(GROWING) + 1):
        fake.push(turn(text("ok")))
        await model.request(replace(request("s", (READ,)), messages=GROWING[:length], memo=memo))
    for length, sent in enumerate(fake.requests, start=1):
        assert sent["body"]["messages"] == expected_turns(GROWING[:length]), f"request {length}"


async def test_a_memo_is_only_used_for_the_conversation_it_kept(fake: FakeLLM, make_model: MakeModel) -> None:
    """Requests that do not continue the memo's conversation (another one, an earlier point, an edited message, a
    message that would merge into a turn the memo holds as final) are still sent whole and right."""
    model = make_model()
    memo = ConversationMemo()
    edited = (*GROWING[:3], UserMessage(content="An edited hook message"), *GROWING[4:12])
    merging = (*GROWING[:2], AssistantMessage(parts=(TextPart(text="more"),)), *GROWING[2:4])
    nothing_after = (*GROWING[:2], AssistantMessage(parts=(TextPart(text=""),)))
    other = (UserMessage(content="Another task"), call(1), answered(1))
    conversations = [
        *(GROWING[:12], GROWING[:14], GROWING[:5], GROWING[:4], edited),
        *(GROWING[:3], merging, GROWING[:3], nothing_after, other, GROWING),
    ]
    for messages in conversations:
        fake.push(turn(text("ok")))
        await model.request(replace(request("s", ()), messages=messages, memo=memo))
    for messages, sent in zip(conversations, fake.requests, strict=True):
        assert sent["body"]["messages"] == expected_turns(messages)


async def test_a_paused_turn_goes_on_after_the_whole_conversation(fake: FakeLLM, make_model: MakeModel) -> None:
    fake.push(turn(text("Searching"), stop_reason="pause_turn"), turn(text("Found")))
    messages = GROWING[:12]
    await make_model().request(replace(request("s", ()), messages=messages, memo=ConversationMemo()))
    paused = {"role": "assistant", "content": [{"type": "text", "text": "Searching"}]}
    assert fake.requests[1]["body"]["messages"] == [*expected_turns(messages), paused]


def test_a_model_process_gets_the_request_without_the_memo() -> None:
    memo = ConversationMemo()
    memo.put("anthropic", "what the adapter kept")
    sent = replace(request("s", ()), memo=memo)
    received = pickle.loads(pickle.dumps(sent))
    assert received == sent  # the memo takes no part in comparisons
    assert received.memo is not None and received.memo.get("anthropic") is None
