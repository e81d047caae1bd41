"""Claude Code's effort levels: how hard a model thinks, as definitions, Task calls and requests name it."""

from __future__ import annotations

from typing import Literal, TypeAlias

EffortLevel: TypeAlias = Literal["low", "medium", "high", "xhigh", "max"]
EFFORT_LEVELS: tuple[EffortLevel, ...] = ("low", "medium", "high", "xhigh", "max")
"""Claude Code's effort levels, lowest first."""
