"""The check before each tool call of a run: allow, deny, or ask the person while someone is there to ask."""

from __future__ import annotations

from ..errors import ToolError
from ..messages import ToolCall
from ..tools.base import Tool
from .asking import Asker, Denial, PermissionQuestion
from .policy import PermissionPolicy, decide


class PermissionGate:
    """A `ToolGate`: raises `ToolError` for a denied call, telling the model why, and records the denial."""

    def __init__(self, policy: PermissionPolicy, *, agent: str, ask: Asker, denials: list[Denial]) -> None:
        self._policy = policy
        self._agent = agent
        self._ask = ask
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
            answer = await self._ask(question)
            if answer.allowed:
                return
            reason = answer.denial_reason(verdict.reason)
        self._denials.append(Denial(tool=tool.name, arguments=question.summary(120), reason=reason))
        raise ToolError(f"Permission denied: {reason}")
