"""The `Model` protocol: one request method that every provider adapter implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeAlias

from ..messages import AssistantPart, Message, ToolDefinition, Usage

StopReason: TypeAlias = Literal["end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "context_window"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    model: str
    """The provider's model id, already resolved from aliases."""
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    max_tokens: int = 16384


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    parts: tuple[AssistantPart, ...]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)
    model_name: str = ""
    refusal_explanation: str = ""


class Model(Protocol):
    """A model provider. `request` raises `ModelAPIError` once its retries are spent."""

    @property
    def provider(self) -> str: ...

    async def request(self, request: ModelRequest, /) -> ModelResponse: ...
