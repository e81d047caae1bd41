"""What the adapter tests need to know about each provider: its adapter, key, endpoint, request defaults and wording."""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import anyio
import pytest

from mcp_subagents.core.errors import ModelAPIError
from mcp_subagents.core.messages import Message, ToolDefinition, UserMessage
from mcp_subagents.models.anthropic import AnthropicModel
from mcp_subagents.models.base import ModelRequest
from mcp_subagents.models.openai import OpenAIModel

Adapter: TypeAlias = AnthropicModel | OpenAIModel
MakeModel: TypeAlias = Callable[..., Adapter]

READ = ToolDefinition(
    name="Read",
    description="Read a file",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    adapter: type[Adapter]
    key: str
    api_path: str
    """What `base_url` adds to the fake server's root URL."""
    model: str
    max_tokens: int
    api: str
    """How the adapter's error messages name the provider."""
    key_variable: str

    def options(self, root_url: str, **overrides: Any) -> dict[str, Any]:
        """Adapter options for tests: the fake server, strict validation, no SDK retries and a fast backoff."""
        return {
            "api_key": self.key,
            "base_url": root_url + self.api_path,
            "max_retries": 0,
            "strict_validation": True,
            "retry_backoff": 0.001,
            **overrides,
        }

    def ask(
        self, *messages: Message, system: str = "You are a subagent.", tools: tuple[ToolDefinition, ...] = ()
    ) -> ModelRequest:
        return ModelRequest(
            model=self.model,
            system=system,
            messages=messages or (UserMessage(content="Hello"),),
            tools=tools,
            max_tokens=self.max_tokens,
        )

    def unused_url(self) -> str:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            return f"http://127.0.0.1:{s.getsockname()[1]}{self.api_path}"

    async def failure(self, model: Adapter, request: ModelRequest | None = None) -> ModelAPIError:
        with anyio.fail_after(10), pytest.raises(ModelAPIError) as caught:
            await model.request(request or self.ask())
        assert self.key not in str(caught.value)
        return caught.value


ANTHROPIC = Provider(
    name="anthropic",
    adapter=AnthropicModel,
    key="sk-ant-test-0123456789",
    api_path="",
    model="claude-sonnet-5-5",
    max_tokens=1024,
    api="Anthropic API",
    key_variable="ANTHROPIC_API_KEY",
)
OPENAI = Provider(
    name="openai",
    adapter=OpenAIModel,
    key="sk-proj-test-0123456789",
    api_path="/v1",
    model="qwen3:8b",
    max_tokens=512,
    api="OpenAI API",
    key_variable="OPENAI_API_KEY",
)
