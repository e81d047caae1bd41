"""Which model id a task runs on, and which provider serves it."""

from __future__ import annotations

from ..core.errors import ProviderNotConfiguredError
from ..core.names import MODEL_ALIASES, TASK_MODEL_CHOICES

__all__ = ["MODEL_ALIASES", "MODEL_HINT", "TASK_MODEL_CHOICES", "resolve_model_id"]

MODEL_HINT = "Set --model / MCP_SUBAGENTS_MODEL to a model your endpoint serves"


def resolve_model_id(*, task_model: str | None, definition_model: str | None, default_model: str, provider: str) -> str:
    """Task `model` > definition `model` > the server default; `inherit` means the server default.

    Aliases map to Anthropic ids. An OpenAI-compatible endpoint knows nothing of Claude aliases, so for it an alias
    falls back to the configured default model, and other names pass through.

    Raises:
        ProviderNotConfiguredError: an OpenAI-compatible endpoint would be sent a Claude alias, because the default
            model is one (no `--model` was given).
    """
    chosen = (
        task_model or (definition_model if definition_model not in (None, "", "inherit") else None) or default_model
    )
    if provider == "anthropic":
        return MODEL_ALIASES.get(chosen, chosen)
    if chosen not in MODEL_ALIASES:
        return chosen
    if provider == "openai" and default_model in MODEL_ALIASES:
        raise ProviderNotConfiguredError(
            f"No model is set for the OpenAI-compatible endpoint, so it would be asked for '{default_model}', a "
            f"Claude alias it does not serve. {MODEL_HINT} (for example --model qwen3:8b), or name one in the agent "
            "file's `model` field."
        )
    return default_model
