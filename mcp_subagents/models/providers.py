"""Choosing and building the model provider. Provider SDKs are imported here, on first use only."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Literal, TypeAlias

import anyio

from ..core.errors import ConfigError, ProviderNotConfiguredError

if TYPE_CHECKING:
    from .base import Model

ProviderName: TypeAlias = Literal["anthropic", "openai"]

MISSING_PROVIDER_MESSAGE = (
    "No model provider is configured, so no subagent can run. Set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a "
    "proxy) to use Anthropic, or OPENAI_BASE_URL (plus OPENAI_API_KEY if the endpoint needs one) to use an "
    "OpenAI-compatible endpoint such as Ollama, vLLM, llama.cpp, LM Studio or OpenRouter. Put the variable in the "
    "\"env\" of this server's entry in your MCP host's config: hosts do not pass your shell's environment."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    name: ProviderName
    api_key: str
    base_url: str | None
    bearer: bool = False
    """The key is an `ANTHROPIC_AUTH_TOKEN`: sent as `Authorization: Bearer`, not as `x-api-key`."""

    def __repr__(self) -> str:
        return f"ProviderConfig(name={self.name!r}, base_url={self.base_url!r}, api_key=<hidden>)"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerStartup:
    """What a model process (`worker`) is told at its start: which adapter to build, and how."""

    config: ProviderConfig
    deadline: float
    max_retries: int
    log_level: str = "WARNING"


def provider_config(requested: str | None, environ: Mapping[str, str]) -> ProviderConfig | None:
    """`--provider` when given, else Anthropic if its key is set, else OpenAI if its URL or key is set.

    Raises:
        ConfigError: the requested provider lacks the variable it needs.
    """
    api_key, auth_token = environ.get("ANTHROPIC_API_KEY"), environ.get("ANTHROPIC_AUTH_TOKEN")
    anthropic_key = api_key or auth_token
    openai_url, openai_key = environ.get("OPENAI_BASE_URL"), environ.get("OPENAI_API_KEY")
    if requested == "anthropic" or (requested is None and anthropic_key):
        if not anthropic_key:
            raise ConfigError("--provider anthropic needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to be set")
        return ProviderConfig(
            name="anthropic", api_key=anthropic_key, base_url=environ.get("ANTHROPIC_BASE_URL"), bearer=not api_key
        )
    if requested == "openai" or (requested is None and (openai_url or openai_key)):
        if not (openai_url or openai_key):
            raise ConfigError("--provider openai needs OPENAI_BASE_URL or OPENAI_API_KEY to be set")
        # Local servers (Ollama, llama.cpp) want no key, but the SDK insists on one.
        return ProviderConfig(name="openai", api_key=openai_key or "not-needed", base_url=openai_url)
    return None


def import_for_good(name: str) -> ModuleType:
    """Import a module that stays for the life of the process, and take what it created out of the garbage
    collector's full passes (`gc.freeze`): a provider SDK brings some 200k objects, and scanning them paused the
    event loop 120-155 ms about every 150 model round trips."""
    module = importlib.import_module(name)
    gc.freeze()
    return module


async def create_model(config: ProviderConfig | None, *, deadline: float, max_retries: int = 10) -> Model:
    """Build the provider's adapter and its SDK client in a worker thread (importing the SDK takes seconds), so the
    server keeps answering meanwhile.

    Raises:
        ProviderNotConfiguredError: no provider is configured.
    """
    if config is None:
        raise ProviderNotConfiguredError(MISSING_PROVIDER_MESSAGE)
    # Abandoned on cancel, so a server stopping mid-import exits at once (the import finishes in its thread).
    return await anyio.to_thread.run_sync(build_model, config, deadline, max_retries, abandon_on_cancel=True)


def build_model(config: ProviderConfig, deadline: float, max_retries: int) -> Model:
    """The provider's adapter, its SDK imported, its client built and a request rehearsed offline (blocking)."""
    module = import_for_good(f"mcp_subagents.models.{config.name}")
    if config.name == "anthropic":
        model = module.AnthropicModel(
            api_key=config.api_key,
            base_url=config.base_url,
            deadline=deadline,
            max_retries=max_retries,
            bearer=config.bearer,
        )
    else:
        model = module.OpenAIModel(
            api_key=config.api_key, base_url=config.base_url, deadline=deadline, max_retries=max_retries
        )
    model.open()
    gc.freeze()  # what building the client and the rehearsal made stays too
    return model
