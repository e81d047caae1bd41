"""The check before each tool call of a run: allow, deny, or ask the user while a host is there to ask."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..errors import ToolError
from ..messages import JsonObject, ToolCall
from ..tools.base import Tool
from .policy import PermissionPolicy, decide

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


class PermissionGate:
    """A `ToolGate`: raises `ToolError` for a denied call, telling the model why, and records the denial."""

    def __init__(
        self,
        policy: PermissionPolicy,
        *,
        agent: str,
        asker: Callable[[], Asker | None],
        denials: list[Denial],
    ) -> None:
        self._policy = policy
        self._agent = agent
        self._asker = asker
        self._denials = denials

    async def __call__(self, call: ToolCall, tool: Tool) -> None:
        verdict = decide(self._policy, tool.name, call.arguments)
        if verdict.decision == "allow":
            return
        question = PermissionQuestion(
            agent=self._agent, tool=tool.name, arguments=call.arguments, reason=verdict.reason
        )
        reason = verdict.reason
        if verdict.decision == "ask":
            asker = self._asker()
            answer = None if asker is None else await asker(question)
            if answer:
                return
            reason = f"{reason} {NOBODY_TO_ASK}" if answer is None else f"The user declined this call. {reason}"
        self._denials.append(Denial(tool=tool.name, arguments=question.summary(120), reason=reason))
        raise ToolError(f"Permission denied: {reason}")


def denial_notes(denials: list[Denial]) -> list[str]:
    """The lines a final result carries, so the user sees what was denied and what would allow it."""
    if not denials:
        return []
    lines = [f"- {d.tool} {d.arguments}: {d.reason}" for d in denials]
    return [f"[Permission denied for {len(denials)} tool call(s):\n" + "\n".join(lines) + "]"]
