"""The Messages API request body, encoded as the SDK encodes it (compact UTF-8 JSON), without mapping and encoding the
whole conversation again for every request.

A run's requests send the same conversation, a turn longer each time, so a request's CPU grew with the conversation
(a 200-turn task paid 1.6 times a 10-turn one per turn). Every turn but the last is final: only a message of the same
role could still change it, by merging into it, and only the last turn can be followed by one. Those final turns are
kept encoded in the run's `ConversationMemo`, with the messages they came from; a request whose messages start with
those messages encodes only the ones after them. The system prompt and the tools, the same in every request of a
run, are kept encoded by content.

The turns are the API's: same-role neighbours merged, tool results first in a user turn, and a cache breakpoint on
the last block of the last turn (and on the system prompt and the last tool).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from anthropic.types import TextBlockParam, ToolParam

from ..core.messages import (
    AssistantMessage,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    UserMessage,
)
from .base import ConversationMemo, ModelRequest, WebSearchOptions

_MEMO_KEY = "anthropic"
_EPHEMERAL: dict[str, Any] = {"type": "ephemeral"}
_BREAKPOINT_END = b',"cache_control":{"type":"ephemeral"}}'


@dataclass(frozen=True, slots=True)
class _Block:
    json: bytes
    tool_result: bool
    plain: bool
    """A JSON object with keys and no `cache_control` among them: its breakpoint goes in before the closing brace."""


@dataclass(frozen=True, slots=True)
class _Encoded:
    """One message's blocks (none for a message that sends nothing, such as an assistant turn of empty text)."""

    message: Message
    role: bytes
    blocks: tuple[_Block, ...]


@dataclass(slots=True)
class _Sent:
    """What the memo keeps of the conversation's last request."""

    final: tuple[Message, ...]
    """The messages whose turns are final."""
    final_json: bytearray
    """Those turns, encoded and separated by commas."""
    final_role: bytes | None
    """The role of the last final turn: the next turn has the other one."""
    rest: tuple[_Encoded, ...]
    """The messages after `final`, each encoded: the next request starts its last turn with them."""


def json_body(request: ModelRequest, continued: Sequence[bytes] = ()) -> bytes:
    """The request body. `continued`: assistant turns (encoded) sent after the conversation, for a paused turn."""
    options = _options(request)
    constant = _constant_fields(request)
    head = _dumps({"model": request.model, "max_tokens": request.max_tokens})[1:-1].encode()
    return b"".join(
        (
            b"{",
            constant + b"," if constant else b"",
            head,
            b',"messages":[',
            *_messages_json(request.messages, request.memo),
            *(b"," + turn for turn in continued),
            b"]",
            b"," + _dumps(options)[1:-1].encode() if options else b"",
            b',"stream":true}',
        )
    )


def assistant_turn(content: list[dict[str, Any]]) -> bytes:
    """An assistant turn of blocks as the API sent them (a paused turn sent back)."""
    return _dumps({"role": "assistant", "content": content}).encode()


# ---- the conversation --------------------------------------------------------------------------------------------


def _messages_json(messages: tuple[Message, ...], memo: ConversationMemo | None) -> tuple[bytes | bytearray, ...]:
    """The turns of `messages`, encoded and separated by commas (in pieces, joined once into the body); the memo's
    final turns are reused when `messages` starts with their messages, and it keeps this request's for the next."""
    sent = _reusable(memo.get(_MEMO_KEY) if memo is not None else None, messages)
    encoded = _encode_rest(messages, sent)
    turns = _group(encoded)
    if sent.final_json and (not turns or turns[0][1] == sent.final_role):  # not a continuation: start afresh
        sent = _fresh()
        encoded = _encode_rest(messages, sent)
        turns = _group(encoded)
    final_json = sent.final_json  # extended in place: the memo's entry is replaced below
    for _, role, blocks in turns[:-1]:
        if final_json:
            final_json += b","
        final_json += _turn_json(role, blocks, breakpoint=False)
    if memo is not None:
        cut = turns[-1][0] if turns else len(encoded)
        memo.put(
            _MEMO_KEY,
            _Sent(
                final=messages[: len(sent.final) + cut],
                final_json=final_json,
                final_role=turns[-2][1] if len(turns) > 1 else sent.final_role,
                rest=tuple(encoded[cut:]),
            ),
        )
    if not turns:
        return ()
    last = _turn_json(turns[-1][1], turns[-1][2], breakpoint=True)
    return (final_json, b",", last) if final_json else (last,)


def _fresh() -> _Sent:
    return _Sent(final=(), final_json=bytearray(), final_role=None, rest=())


def _reusable(entry: object, messages: tuple[Message, ...]) -> _Sent:
    """The memo's entry when `messages` starts with its final messages (the same objects, or equal ones, which
    encode the same); else a fresh one."""
    if isinstance(entry, _Sent):
        kept = len(entry.final)
        if len(messages) >= kept and messages[:kept] == entry.final:
            return entry
    return _fresh()


def _encode_rest(messages: tuple[Message, ...], sent: _Sent) -> list[_Encoded]:
    """The messages after the final ones, each encoded (or taken from the memo when it is the same message)."""
    rest = messages[len(sent.final) :]
    encoded: list[_Encoded] = []
    for index, message in enumerate(rest):
        known = sent.rest[index] if index < len(sent.rest) else None
        encoded.append(known if known is not None and known.message is message else _encode(message))
    return encoded


def _group(encoded: list[_Encoded]) -> list[tuple[int, bytes, list[_Block]]]:
    """The turns: (index in `encoded` of its first message, role, blocks in the order sent). Messages without blocks
    are skipped, so their neighbours may merge."""
    turns: list[tuple[int, bytes, list[_Block]]] = []
    for index, message in enumerate(encoded):
        if not message.blocks:
            continue
        if turns and turns[-1][1] == message.role:
            turns[-1][2].extend(message.blocks)
        else:
            turns.append((index, message.role, list(message.blocks)))
    for index, (first, role, blocks) in enumerate(turns):
        if role == b"user" and not all(block.tool_result for block in blocks):
            ordered = [block for block in blocks if block.tool_result] + [b for b in blocks if not b.tool_result]
            turns[index] = (first, role, ordered)
    return turns


def _turn_json(role: bytes, blocks: list[_Block], *, breakpoint: bool) -> bytes:
    parts = [block.json for block in blocks]
    if breakpoint:
        parts[-1] = _with_breakpoint(blocks[-1])
    return b'{"role":"' + role + b'","content":[' + b",".join(parts) + b"]}"


def _with_breakpoint(block: _Block) -> bytes:
    if block.plain:
        return block.json[:-1] + _BREAKPOINT_END
    return _dumps({**json.loads(block.json), "cache_control": _EPHEMERAL}).encode()


def _encode(message: Message) -> _Encoded:
    role, blocks = _blocks(message)
    return _Encoded(
        message=message,
        role=role,
        blocks=tuple(
            _Block(
                json=_dumps(block).encode(),
                tool_result=block.get("type") == "tool_result",
                plain=bool(block) and "cache_control" not in block,
            )
            for block in blocks
        ),
    )


def _blocks(message: Message) -> tuple[bytes, list[dict[str, Any]]]:
    if isinstance(message, UserMessage):
        return b"user", [{"type": "text", "text": block} for block in message.blocks]
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, TextPart):
                if part.text:
                    blocks.append({"type": "text", "text": part.text})
            elif isinstance(part, ToolCall):
                blocks.append({"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments})
            elif isinstance(part, ThinkingPart):
                blocks.append({"type": "thinking", "thinking": part.text, "signature": part.signature})
            elif part.provider == "anthropic":
                blocks.append(dict(part.data))
        return b"assistant", blocks
    results: ToolResultMessage = message
    return b"user", [
        {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}
        for r in results.results
    ]


# ---- what every request of a run sends alike -------------------------------------------------------------------

_ToolsKey: TypeAlias = tuple[tuple[str, str, int], ...]
_CONSTANT_FIELDS: dict[tuple[str, _ToolsKey, WebSearchOptions | None], tuple[tuple[ToolDefinition, ...], bytes]] = {}
_CONSTANT_FIELDS_KEPT = 64


def _constant_fields(request: ModelRequest) -> bytes:
    """`"system":[...],"tools":[...]` as JSON without the braces (empty when there are neither), remembered by
    content: every request of a run, and the runs of one agent in one folder, send the same. A tool's schema is
    keyed by identity (schemas are built once per tool); the entry holds the schema so the identity stays valid."""
    tools_key = tuple((tool.name, tool.description, id(tool.input_schema)) for tool in request.tools)
    key = (request.system, tools_key, request.web_search)
    kept = _CONSTANT_FIELDS.get(key)
    if kept is not None:
        return kept[1]
    fields: dict[str, Any] = {}
    if request.system:
        block: TextBlockParam = {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
        fields["system"] = [block]
    tools = _tools(request)
    if tools:
        fields["tools"] = tools
    encoded = _dumps(fields)[1:-1].encode()
    if len(_CONSTANT_FIELDS) >= _CONSTANT_FIELDS_KEPT:
        del _CONSTANT_FIELDS[next(iter(_CONSTANT_FIELDS))]
    _CONSTANT_FIELDS[key] = (request.tools, encoded)
    return encoded


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_plain)


def _plain(value: object) -> object:
    """Mappings and sequences that are not dicts and lists (read-only views of a schema, say), as JSON sees them."""
    if isinstance(value, Mapping):
        return dict(cast(Mapping[str, object], value))
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        return list(cast(Iterable[object], value))
    raise TypeError(f"{type(value).__name__} cannot be sent as JSON")


def _tools(request: ModelRequest) -> list[Any]:
    """The tools, with the server-side web search when the request offers it."""
    tools: list[Any] = list(to_anthropic_tools(request.tools))
    if request.web_search is not None:
        search: dict[str, Any] = {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": request.web_search.max_uses,
        }
        if request.web_search.allowed_domains:
            search["allowed_domains"] = list(request.web_search.allowed_domains)
        if request.web_search.blocked_domains:
            search["blocked_domains"] = list(request.web_search.blocked_domains)
        tools.append(search)
    return tools


def _options(request: ModelRequest) -> dict[str, Any]:
    """The optional request fields besides the tools: tool choice, thinking and effort."""
    options: dict[str, Any] = {}
    if request.tool_choice == "none" and (request.tools or request.web_search is not None):
        options["tool_choice"] = {"type": "none"}
    if request.thinking:
        options["thinking"] = {"type": "adaptive", "display": "omitted"}
    if request.effort is not None:
        options["output_config"] = {"effort": request.effort}
    return options


def to_anthropic_tools(tools: tuple[ToolDefinition, ...]) -> list[ToolParam]:
    params: list[ToolParam] = [
        {"name": t.name, "description": t.description, "input_schema": cast(Any, t.input_schema)} for t in tools
    ]
    if params:
        params[-1]["cache_control"] = {"type": "ephemeral"}
    return params
