"""Which model id a task runs on, and which provider serves it."""

from __future__ import annotations

from collections.abc import Mapping

MODEL_ALIASES: Mapping[str, str] = {
    "sonnet": "claude-sonnet-5-5",
    "opus": "claude-opus-5-5",
    "haiku": "claude-haiku-5-5",
    "fable": "claude-fable-5-2",
}
TASK_MODEL_CHOICES = tuple(MODEL_ALIASES)


def resolve_model_id(*, task_model: str | None, definition_model: str | None, default_model: str, provider: str) -> str:
    """Task `model` > definition `model` > the server default; `inherit` means the server default.

    Aliases map to Anthropic ids. An OpenAI-compatible endpoint knows nothing of Claude aliases, so for it an alias
    falls back to the configured default model, and other names pass through.
    """
    chosen = (
        task_model or (definition_model if definition_model not in (None, "", "inherit") else None) or default_model
    )
    if provider == "anthropic":
        return MODEL_ALIASES.get(chosen, chosen)
    if chosen in MODEL_ALIASES:
        return default_model
    return chosen
