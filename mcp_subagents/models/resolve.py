"""Which model id a task runs on, and which provider serves it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.errors import ProviderNotConfiguredError
from ..core.names import MODEL_ALIASES, TASK_MODEL_CHOICES

__all__ = [
    "MODEL_ALIASES",
    "MODEL_HINT",
    "TASK_MODEL_CHOICES",
    "MainModel",
    "ModelChoice",
    "choose_model",
    "resolve_model_id",
]

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


_CONTEXT_SUFFIX = re.compile(r"\[[^\]]*\]$")
"""Claude Code's `[1m]` (a longer context window) after a model name: the model is the name before it."""
_NOT_A_MODEL = frozenset({"default"})
"""Settings values that name no model of their own (Claude Code's own default, whatever it is this week)."""


@dataclass(frozen=True, slots=True)
class MainModel:
    """The model the person's main session runs on, and where that was read."""

    name: str
    origin: str
    """`--main-model`, `ANTHROPIC_MODEL`, `model in ~/.claude/settings.json`..."""


def main_model(name: str | None, origin: str) -> MainModel | None:
    """`name` as a main model; None when it names none (empty, or Claude Code's `default`)."""
    cleaned = _CONTEXT_SUFFIX.sub("", (name or "").strip()).strip()
    if not cleaned or cleaned in _NOT_A_MODEL:
        return None
    return MainModel(cleaned, origin)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """The model id a task runs on, why that one, and what the agent file asked for that did not happen."""

    model_id: str
    chosen_by: str
    """The Task call's model argument, the agent file, the main model (and where it was read), --model."""
    override: str = ""
    """When the agent file names a model and the task runs on another: a sentence naming what overrode it."""


def choose_model(
    *,
    task_model: str | None,
    definition_model: str | None,
    main: MainModel | None,
    default_model: str,
    provider: str,
) -> ModelChoice:
    """Task `model` > the agent file's `model` > the main model (for `inherit` or none) > the server default.

    Raises:
        ProviderNotConfiguredError: as `resolve_model_id`.
    """
    file_model = definition_model if definition_model not in (None, "", "inherit") else None
    if task_model:
        chosen, by = task_model, "the Task call's model argument"
    elif file_model:
        chosen, by = file_model, "the agent file"
    elif main is not None:
        chosen, by = main.name, f"the main model ({main.origin})"
    else:
        chosen, by = default_model, "--model (the main model is not known)"
    model_id = resolve_model_id(
        task_model=chosen, definition_model=None, default_model=default_model, provider=provider
    )
    if provider == "openai" and chosen in MODEL_ALIASES:
        by = f"--model, since the OpenAI-compatible endpoint does not serve the Claude alias '{chosen}'"
    override = ""
    if file_model is not None and (not _same_model(chosen, file_model) or by.startswith("--model")):
        override = f"The agent file asks for model '{file_model}'; the task ran on {model_id}, chosen by {by}."
    return ModelChoice(model_id, by, override)


def _same_model(one: str, other: str) -> bool:
    """Whether two names stand for the same model (an alias and the id it stands for are the same)."""
    return MODEL_ALIASES.get(one, one) == MODEL_ALIASES.get(other, other)
