"""What we know about a model: its marketing name, knowledge cutoff, context window, output limit and whether it
takes adaptive thinking and an effort level.

The figures for Claude models are the ones Claude Code 2.1.328 carries in its own model table. A model this table
does not know gets conservative values: no thinking, no effort, a 16384-token output limit and a 128k window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Final

from ..core.names import EFFORT_LEVELS, EffortLevel

DEFAULT_MAX_OUTPUT_TOKENS: Final = 16_384
DEFAULT_CONTEXT_WINDOW: Final = 128_000
COMPACT_FRACTION: Final = 0.8
"""The default compaction threshold, as a share of the context window."""

_ALL_LEVELS: Final = EFFORT_LEVELS
_NO_XHIGH: Final[tuple[EffortLevel, ...]] = ("low", "medium", "high", "max")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelProfile:
    model_id: str
    display_name: str | None = None
    knowledge_cutoff: str | None = None
    context_window: int = DEFAULT_CONTEXT_WINDOW
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    adaptive_thinking: bool = False
    effort_levels: tuple[EffortLevel, ...] = ()
    """The effort levels the model accepts; empty when it takes no effort setting."""

    @property
    def known(self) -> bool:
        return self.display_name is not None

    def effort_for(self, wanted: EffortLevel) -> EffortLevel | None:
        """`wanted`, or the highest accepted level below it; None when the model takes no effort setting."""
        if not self.effort_levels:
            return None
        rank = EFFORT_LEVELS.index(wanted)
        accepted: list[EffortLevel] = [level for level in self.effort_levels if EFFORT_LEVELS.index(level) <= rank]
        return accepted[-1] if accepted else self.effort_levels[0]

    def compact_threshold(self) -> int:
        return int(self.context_window * COMPACT_FRACTION)


def _claude(
    model_id: str,
    name: str,
    cutoff: str | None,
    *,
    window: int,
    output: int,
    efforts: tuple[EffortLevel, ...] = (),
) -> ModelProfile:
    return ModelProfile(
        model_id=model_id,
        display_name=name,
        knowledge_cutoff=cutoff,
        context_window=window,
        max_output_tokens=output,
        adaptive_thinking=bool(efforts),
        effort_levels=efforts,
    )


_M: Final = 1_000_000
_K200: Final = 200_000
_PROFILES: Final = {
    profile.model_id: profile
    for profile in (
        _claude("claude-3-5-haiku", "Haiku 3.5", None, window=_K200, output=8192),
        _claude("claude-3-5-sonnet", "Sonnet 3.5", None, window=_K200, output=8192),
        _claude("claude-3-7-sonnet", "Sonnet 3.7", None, window=_K200, output=32_000),
        _claude("claude-haiku-4-5", "Haiku 4.5", "February 2025", window=_K200, output=32_000),
        _claude("claude-sonnet-4-0", "Sonnet 4", "January 2025", window=_K200, output=32_000),
        _claude("claude-sonnet-4-5", "Sonnet 4.5", "January 2025", window=_K200, output=32_000),
        _claude("claude-sonnet-4-6", "Sonnet 4.6", "August 2025", window=_K200, output=32_000, efforts=_NO_XHIGH),
        _claude("claude-opus-4-0", "Opus 4", "January 2025", window=_K200, output=32_000),
        _claude("claude-opus-4-1", "Opus 4.1", "January 2025", window=_K200, output=32_000),
        _claude("claude-opus-4-5", "Opus 4.5", "May 2025", window=_K200, output=32_000),
        _claude("claude-opus-4-6", "Opus 4.6", "May 2025", window=_K200, output=64_000, efforts=_NO_XHIGH),
        _claude("claude-opus-4-7", "Opus 4.7", "January 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-opus-4-8", "Opus 4.8", "January 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-sonnet-5", "Sonnet 5", "January 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-sonnet-5-5", "Sonnet 5.5", "June 2026", window=_M, output=128_000, efforts=_ALL_LEVELS),
        _claude("claude-haiku-5-5", "Haiku 5.5", "June 2026", window=_M, output=128_000, efforts=_ALL_LEVELS),
        _claude("claude-opus-5", "Opus 5", "May 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-opus-5-5", "Opus 5.5", "June 2026", window=_M, output=128_000, efforts=_ALL_LEVELS),
        _claude("claude-fable-5", "Fable 5", "January 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-fable-5-1", "Fable 5.1", "June 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-fable-5-2", "Fable 5.2", "June 2026", window=_M, output=128_000, efforts=_ALL_LEVELS),
        _claude("claude-mythos-5", "Mythos 5", "January 2026", window=_M, output=64_000),
        _claude("claude-mythos-5-1", "Mythos 5.1", "June 2026", window=_M, output=64_000, efforts=_ALL_LEVELS),
        _claude("claude-mythos-5-2", "Mythos 5.2", "June 2026", window=_M, output=128_000, efforts=_ALL_LEVELS),
    )
}
_DECORATIONS: Final = re.compile(r"(-\d{8}|@\d{8}|-v\d+:\d+|\[1m\])+$")
_ALIASES: Final = {"claude-sonnet-4": "claude-sonnet-4-0", "claude-opus-4": "claude-opus-4-0"}


def canonical_model_id(model_id: str) -> str:
    """The model `model_id` names: dated snapshots (`claude-sonnet-4-5-20250929`), cloud prefixes and suffixes
    (`us.anthropic.claude-...-v1:0`, `...@20250929`) and the `[1m]` marker removed."""
    base = _DECORATIONS.sub("", model_id.rpartition(".")[2] if ".claude-" in model_id else model_id)
    return _ALIASES.get(base, base)


def model_profile(model_id: str) -> ModelProfile:
    """The profile of `model_id`, or of the model it names (see `canonical_model_id`)."""
    base = canonical_model_id(model_id)
    profile = _PROFILES.get(base)
    if profile is None:
        return ModelProfile(model_id=model_id)
    return profile if base == model_id else replace(profile, model_id=model_id)
