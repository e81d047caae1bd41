"""The check before each tool call of a run: allow, deny, or ask the person while someone is there to ask.

Hooks take part as in Claude Code: a PreToolUse hook's `allow` skips the question the mode would ask, but never a
deny rule, an ask rule or a protected path (nor plan mode); its `ask` asks even where a rule allows. A
PermissionRequest hook answers in the person's place when a call would be asked about.
"""

from __future__ import annotations

from dataclasses import replace
from typing import NoReturn

from ..core.errors import StopRunError, ToolError
from ..core.hook_points import GatedTool, HookPermission, PermissionAnswer, PermissionHook
from ..core.json_values import JsonObject
from ..core.messages import ToolCall
from .asking import Asker, Denial, PermissionQuestion
from .policy import PermissionPolicy, decide
from .verdict import Verdict


class PermissionGate:
    """A `ToolGate`: raises `ToolError` for a denied call, telling the model why, and records the denial."""

    def __init__(
        self,
        policy: PermissionPolicy,
        *,
        agent: str,
        ask: Asker,
        denials: list[Denial],
        permission_hook: PermissionHook | None = None,
    ) -> None:
        self._policy = policy
        self._agent = agent
        self._ask = ask
        self._denials = denials
        self._permission_hook = permission_hook

    async def __call__(self, call: ToolCall, tool: GatedTool, hint: HookPermission = None) -> JsonObject | None:
        verdict = self._verdict(tool.name, call.arguments, hint)
        if verdict.decision == "allow":
            return None
        question = PermissionQuestion(
            agent=self._agent, tool=tool.name, arguments=call.arguments, reason=verdict.reason
        )
        reason = verdict.reason
        if verdict.decision == "ask":
            if self._permission_hook is not None:
                answered = await self._permission_hook(call)
                if answered is not None:
                    return self._hook_answer(answered, tool, question)
            answer = await self._ask(question)
            if answer.allowed:
                return None
            reason = answer.denial_reason(verdict.reason)
        self._deny(question, reason)

    def _verdict(self, tool: str, arguments: JsonObject, hint: HookPermission) -> Verdict:
        policy = self._policy
        if hint == "allow":
            lifted = decide(_without_mode_questions(policy), tool, arguments)
            if lifted.decision == "ask" and policy.active_mode == "dontAsk":
                return Verdict("deny", f"{lifted.reason} dontAsk mode never asks, so the call was denied.", lifted.rule)
            return lifted
        verdict = decide(policy, tool, arguments)
        if hint == "ask" and verdict.decision == "allow":
            asked = "A PreToolUse hook asked for the person's approval of this call"
            if policy.active_mode == "dontAsk" or policy.rules.deny_instead_of_prompting:
                return Verdict("deny", f"{asked}, and this server does not ask, so the call was denied.")
            return Verdict("ask", f"{asked}.")
        return verdict

    def _hook_answer(
        self, answer: PermissionAnswer, tool: GatedTool, question: PermissionQuestion
    ) -> JsonObject | None:
        if answer.decision == "deny":
            reason = f"A PermissionRequest hook denied this call: {answer.message}"
            self._denials.append(Denial(tool=tool.name, arguments=question.summary(120), reason=reason))
            if answer.stop is not None:
                raise StopRunError(f"Permission denied: {reason}", answer.stop)
            raise ToolError(f"Permission denied: {reason}")
        if answer.arguments is None:
            return None
        # The arguments the hook put in are checked again: a deny rule still holds for them.
        again = decide(self._policy, tool.name, answer.arguments)
        if again.decision == "deny":
            self._deny(replace(question, arguments=answer.arguments), again.reason)
        return answer.arguments

    def _deny(self, question: PermissionQuestion, reason: str) -> NoReturn:
        self._denials.append(Denial(tool=question.tool, arguments=question.summary(120), reason=reason))
        raise ToolError(f"Permission denied: {reason}")


def _without_mode_questions(policy: PermissionPolicy) -> PermissionPolicy:
    """The policy as a hook's `allow` leaves it: deny rules, ask rules and protected paths still hold, and so does
    plan mode; what only the mode would have asked about is allowed."""
    if policy.active_mode == "plan":
        return policy
    return replace(policy, mode="bypassPermissions", rules=replace(policy.rules, bypass_disabled=False))
