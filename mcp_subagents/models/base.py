"""The `Model` protocol: one request method that every provider adapter implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from ..core.messages import AssistantPart, Message, ToolDefinition, Usage
from ..core.names import EffortLevel

StopReason: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "context_window"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WebSearchOptions:
    """The provider's own web search, offered to the model for this request (Anthropic's server-side tool)."""

    allowed_domains: tuple[str, ...] = ()
    blocked_domains: tuple[str, ...] = ()
    max_uses: int = 8


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    title: str
    url: str


class ConversationMemo:
    """What an adapter made of one conversation's messages for a request, kept by the run for its next request: that
    one sends the same messages (immutable, so encoded the same) and a few more, and encoding all of them again made a
    turn's CPU grow with the conversation. Each adapter keeps its own entry, under its provider's name. A model
    process gets an empty memo (the memo is not pickled with the request)."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, object] = {}

    def get(self, provider: str) -> object | None:
        return self._entries.get(provider)

    def put(self, provider: str, entry: object) -> None:
        self._entries[provider] = entry

    def __reduce__(self) -> tuple[type[ConversationMemo], tuple[()]]:
        return ConversationMemo, ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    model: str
    """The provider's model id, already resolved from aliases."""
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    max_tokens: int = 16384
    thinking: bool = False
    """Let the model think before it answers, as much as it judges useful (adaptive thinking)."""
    effort: EffortLevel | None = None
    """How much effort to spend; None sends no effort setting at all."""
    tool_choice: Literal["auto", "none"] = "auto"
    """`none`: the tools are described (the history may hold calls to them) but the model must answer in text."""
    web_search: WebSearchOptions | None = None
    memo: ConversationMemo | None = field(default=None, compare=False, repr=False)
    """The run's memo of this conversation (see `ConversationMemo`); None for a request made once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    parts: tuple[AssistantPart, ...]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model_name: str = ""
    refusal_explanation: str = ""
    search_results: tuple[SearchResult, ...] = ()
    """Pages the provider's web search found while answering, in the order it reported them."""


class Model(Protocol):
    """A model provider. `request` raises `ModelAPIError` once its retries are spent."""

    @property
    def provider(self) -> str: ...

    async def request(self, request: ModelRequest, /) -> ModelResponse: ...
