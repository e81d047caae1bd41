"""The provider-neutral conversation model shared by the loop, the model adapters and the transcripts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from .json_values import JsonObject


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingPart:
    """The model's reasoning before it answered. With thinking shown as "omitted" the text is empty and only the
    signature is there; the provider needs the block back, signature intact, in the following requests."""

    text: str
    signature: str = ""
    kind: Literal["thinking"] = "thinking"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderPart:
    """A block only one provider understands (redacted thinking, a server-side tool call or its result), kept as the
    provider sent it so it can go back unchanged; other providers leave it out."""

    provider: str
    data: JsonObject
    kind: Literal["provider"] = "provider"


AssistantPart: TypeAlias = TextPart | ToolCall | ThinkingPart | ProviderPart


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    call_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class UserMessage:
    content: str
    context: tuple[str, ...] = ()
    """Text blocks sent ahead of `content`: project context such as CLAUDE.md and the git status."""
    attachments: tuple[str, ...] = ()
    """Text blocks sent after `content`: skills preloaded for the agent."""
    role: Literal["user"] = "user"

    @property
    def blocks(self) -> tuple[str, ...]:
        """Every non-empty text block in the order the model reads them."""
        return tuple(block for block in (*self.context, self.content, *self.attachments) if block)


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

    @property
    def total_tokens(self) -> int:
        """Every token of the request and its answer: new input, cached (written or read) and output."""
        return self.input_tokens + self.output_tokens + self.cache_creation_tokens + self.cache_read_tokens

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
