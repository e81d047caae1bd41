"""The provider-neutral conversation model shared by the loop, the model adapters and the transcripts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

JsonObject: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    id: str
    name: str
    arguments: JsonObject
    kind: Literal["tool_call"] = "tool_call"


AssistantPart: TypeAlias = TextPart | ToolCall


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    content: str
    role: Literal["user"] = "user"


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessage:
    parts: tuple[AssistantPart, ...]
    role: Literal["assistant"] = "assistant"

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultMessage:
    results: tuple[ToolResult, ...]
    role: Literal["tool_results"] = "tool_results"


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts. `input_tokens` excludes cached tokens, as the Messages API reports them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """What a model is told about one tool."""

    name: str
    description: str
    input_schema: JsonObject = field(default_factory=lambda: {"type": "object", "properties": {}})
