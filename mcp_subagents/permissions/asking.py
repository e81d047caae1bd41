"""What a run records and asks about permission, without the rule engine (kept off the start-up path)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..messages import JsonObject

NOBODY_TO_ASK = (
    "No one could be asked: background tasks cannot ask for permission, and neither can a host without "
    "elicitation support."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionQuestion:
    agent: str
    tool: str
    arguments: JsonObject
    reason: str

    def summary(self, limit: int = 300) -> str:
        text = json.dumps(self.arguments, ensure_ascii=False)
        return text if len(text) <= limit else text[:limit] + "…"


Asker = Callable[[PermissionQuestion], Awaitable[bool | None]]
"""Asks the user; True to allow, False when the user declined, None when no one could be asked."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Denial:
    tool: str
    arguments: str
    reason: str


def denial_notes(denials: list[Denial]) -> list[str]:
    """The lines a final result carries, so the user sees what was denied and what would allow it."""
    if not denials:
        return []
    lines = [f"- {d.tool} {d.arguments}: {d.reason}" for d in denials]
    return [f"[Permission denied for {len(denials)} tool call(s):\n" + "\n".join(lines) + "]"]
