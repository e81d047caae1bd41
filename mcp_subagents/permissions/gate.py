"""The permission check before each tool call of a run, as a guard: allow, refuse, or ask the person while someone is
there to ask.

Hooks take part as in Claude Code: a PreToolUse hook's `allow` skips the question the mode would ask, but never a
deny rule, an ask rule or a protected path (nor plan mode); its `ask` asks even where a rule allows. A
PermissionRequest hook answers in the person's place when a call would be asked about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..core.guards import Allow, BashPlace, GuardOutcome, Refuse, Stop, ToolAttempt
from ..core.hook_points import HookPermission, PermissionAnswer, PermissionHook
from ..core.json_values import JsonObject
from .asking import Asker, PermissionQuestion
from .policy import PermissionPolicy, decide
from .session_rules import SessionRules
from .skill_grants import SKILL_TOOL, SkillGrants, skill_load_verdict
from .verdict import Verdict

SHOWN_CHARS = 120


class PermissionGuard:
    """Decides a call by the policy for where it runs (`policies` by the attempt's `bash_runs`; the first is used for
    every place it lacks)."""

    def __init__(
        self,
        policies: Mapping[BashPlace, PermissionPolicy],
        *,
        agent: str,
        ask: Asker,
        permission_hook: PermissionHook | None = None,
        project: Path | None = None,
        session_rules: SessionRules | None = None,
        skill_grants: SkillGrants | None = None,
    ) -> None:
        self._policies = policies
        self._fallback = next(iter(policies.values()))
        self._agent = agent
        self._ask = ask
        self._permission_hook = permission_hook
        self._project = project
        self._session_rules = session_rules
        self._skill_grants = skill_grants

    async def __call__(self, attempt: ToolAttempt) -> GuardOutcome:
        policy = self._policies.get(attempt.bash_runs, self._fallback)
        if self._session_rules is not None and self._project is not None:
            policy = self._session_rules.applied(policy, self._project)
        if self._skill_grants is not None:
            policy = self._skill_grants.applied(policy)
        call, name = attempt.call, attempt.tool.name
        verdict = self._skill_load(policy, name, call.arguments, attempt.hook_permission)
        if verdict is None:
            verdict = _verdict(policy, name, call.arguments, attempt.hook_permission)
        if verdict.decision == "allow":
            return Allow()
        question = PermissionQuestion(
            agent=self._agent,
            tool=name,
            arguments=call.arguments,
            reason=verdict.reason,
            suggestion=None if policy.rules.managed_only else verdict.suggestion,
            project=None if self._project is None else str(self._project),
            call_id=call.id,
        )
        reason = verdict.reason
        if verdict.decision == "ask":
            if self._permission_hook is not None:
                answered = await self._permission_hook(call)
                if answered is not None:
                    return _hook_answer(policy, answered, question)
            answer = await self._ask(question)
            if answer.allowed:
                return Allow()
            reason = answer.denial_reason(verdict.reason)
        return Refuse(reason, question.summary(SHOWN_CHARS))

    def _skill_load(
        self, policy: PermissionPolicy, tool: str, arguments: JsonObject, hint: HookPermission
    ) -> Verdict | None:
        """A Skill call that loads a skill with `allowed-tools` widens what the agent may do: its own question."""
        wanted = self._skill_grants.wanted(arguments) if self._skill_grants and tool == SKILL_TOOL else None
        if wanted is None:
            return None
        verdict = skill_load_verdict(policy, *wanted)
        if verdict.decision == "ask" and verdict.rule is None and hint == "allow":  # the mode's question, not a rule's
            return Verdict("allow", "A PreToolUse hook allowed loading this skill.")
        return verdict


def _verdict(policy: PermissionPolicy, tool: str, arguments: JsonObject, hint: HookPermission) -> Verdict:
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


def _hook_answer(policy: PermissionPolicy, answer: PermissionAnswer, question: PermissionQuestion) -> GuardOutcome:
    shown = question.summary(SHOWN_CHARS)
    if answer.decision == "deny":
        reason = f"A PermissionRequest hook denied this call: {answer.message}"
        return Stop(reason, shown, answer.stop) if answer.stop is not None else Refuse(reason, shown)
    if answer.arguments is None:
        return Allow()
    # The arguments the hook put in are checked again: a deny rule still holds for them.
    again = decide(policy, question.tool, answer.arguments)
    if again.decision == "deny":
        return Refuse(again.reason, replace(question, arguments=answer.arguments).summary(SHOWN_CHARS))
    return Allow(answer.arguments)


def _without_mode_questions(policy: PermissionPolicy) -> PermissionPolicy:
    """The policy as a hook's `allow` leaves it: deny rules, ask rules and protected paths still hold, and so does
    plan mode; what only the mode would have asked about is allowed."""
    if policy.active_mode == "plan":
        return policy
    return replace(policy, mode="bypassPermissions", rules=replace(policy.rules, bypass_disabled=False))
