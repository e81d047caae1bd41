"""The check before each tool call of a run: allow, deny, or ask the user while a host is there to ask."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ToolError
from ..messages import ToolCall
from ..tools.base import Tool
from .asking import NOBODY_TO_ASK, Asker, Denial, PermissionQuestion
from .policy import PermissionPolicy, decide


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
