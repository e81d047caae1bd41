"""The checks before each tool call of a run, as one ordered list of guards (`core.guards`), and what the run's
tools get from the same policy: which files a search may show, and whether WebFetch may follow a redirect.

The guards of a run: where the sandbox places a Bash command (when there is a sandbox), then the permission check
(rules, modes, hooks, the person). `RunGate` asks them in order and turns their outcome into what the loop
understands: arguments to run with, a `ToolError` the model reads, or a `StopRunError`; every refused call is kept in
the task's list of denials, here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.errors import StopRunError, ToolError
from ..core.guards import Allow, BashPlace, Guard, Proceed, Refuse, Stop, ToolAttempt
from ..core.hook_points import GatedTool, HookPermission, PermissionHook, ToolGate
from ..core.json_values import JsonObject
from ..core.messages import ToolCall
from ..permissions import decide
from ..permissions.asking import Asker, Denial
from ..permissions.context import read_filter
from ..permissions.gate import PermissionGuard
from ..permissions.policy import PermissionPolicy
from ..permissions.session_rules import SessionRules
from ..permissions.skill_grants import SkillGrants
from ..sandbox import RunSandbox
from ..sandbox.gate import SandboxPlacement

__all__ = ["RunGate", "SandboxTerms", "read_filter", "redirect_check", "run_gate"]


class RunGate:
    """A run's `ToolGate`: its guards in order."""

    def __init__(self, guards: Sequence[Guard], *, denials: list[Denial]) -> None:
        self._guards = tuple(guards)
        self._denials = denials

    async def __call__(self, call: ToolCall, tool: GatedTool, hook_permission: HookPermission) -> JsonObject | None:
        attempt = ToolAttempt(call, tool, hook_permission)
        for guard in self._guards:
            outcome = await guard(attempt)
            match outcome:
                case Proceed():
                    attempt = outcome.attempt
                case Allow():
                    return outcome.arguments
                case Refuse():
                    self._denials.append(Denial(tool=tool.name, arguments=outcome.shown, reason=outcome.reason))
                    raise ToolError(f"Permission denied: {outcome.reason}")
                case Stop():
                    self._denials.append(Denial(tool=tool.name, arguments=outcome.shown, reason=outcome.reason))
                    raise StopRunError(f"Permission denied: {outcome.reason}", outcome.stop)
        return None


@dataclass(frozen=True, slots=True)
class SandboxTerms:
    """What the settings say of sandboxed Bash in this run."""

    auto_allow: bool
    """`autoAllowBashIfSandboxed` (or `--sandbox auto-allow`): a sandboxed command runs without asking."""
    too_wide: str | None
    """Why the sandbox cannot confine writes to a project here (then it never runs a command unasked), or None."""


@dataclass(frozen=True, slots=True)
class QuestionTerms:
    """Where a run's questions belong: the project whose `.claude/settings.local.json` an "always allow" answer
    writes, and the allow rules such answers added while this server runs."""

    project: Path
    session_rules: SessionRules


def run_gate(
    policy: PermissionPolicy,
    sandbox: RunSandbox | None,
    terms: SandboxTerms | None,
    *,
    agent: str,
    ask: Asker,
    denials: list[Denial],
    permission_hook: PermissionHook | None,
    answers: QuestionTerms | None = None,
    skill_grants: SkillGrants | None = None,
) -> ToolGate:
    """The gate of one run. With the sandbox on, each Bash command is judged where the sandbox places it: inside
    (unasked only where the terms allow it) or outside (it needs an allow rule that names it)."""
    policies: dict[BashPlace, PermissionPolicy] = {"unconfined": policy}
    guards: list[Guard] = []
    if sandbox is not None and terms is not None:
        guards.append(SandboxPlacement(sandbox))
        policies["sandboxed"] = replace(
            policy, bash_runs="sandboxed", sandbox_auto_allow=terms.auto_allow, sandbox_too_wide=terms.too_wide
        )
        policies["outside_sandbox"] = replace(policy, bash_runs="outside_sandbox")
    guards.append(
        PermissionGuard(
            policies,
            agent=agent,
            ask=ask,
            permission_hook=permission_hook,
            project=answers.project if answers else None,
            session_rules=answers.session_rules if answers else None,
            skill_grants=skill_grants,
        )
    )
    return RunGate(guards, denials=denials)


def redirect_check(policy: PermissionPolicy) -> Callable[[str], Awaitable[None]]:
    """WebFetch's check of a redirect to another host: the permission rules must allow that URL outright (nobody is
    asked in the middle of a fetch; the model can fetch the new URL itself, which asks)."""

    async def check(url: str) -> None:
        verdict = decide(policy, "WebFetch", {"url": url, "prompt": ""})
        if verdict.decision != "allow":
            raise ToolError(
                f"The page redirects to {url}, which this fetch may not follow: {verdict.reason} To go there, "
                "call WebFetch with that URL."
            )

    return check
