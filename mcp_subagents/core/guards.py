"""The checks before a tool call as guards: each looks at the attempted call and answers with a named outcome.

A run's gate (`runtime.gates.RunGate`) asks its guards in order: `Proceed` hands the attempt (perhaps placed, as the
sandbox places a Bash command) to the next guard; `Allow` lets the call run (with the arguments a hook put in, if
any); `Refuse` gives the model a reason instead of a result; `Stop` ends the run. Guards never raise for a refusal:
turning outcomes into what the loop understands, and keeping the task's list of refused calls, happens in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal, Protocol, TypeAlias

from .hook_points import GatedTool, HookPermission
from .json_values import JsonObject
from .messages import ToolCall

BashPlace: TypeAlias = Literal["unconfined", "sandboxed", "outside_sandbox"]
"""Where a Bash command runs: with no sandbox at all, in it, or outside it while it is on."""


@dataclass(frozen=True, slots=True)
class ToolAttempt:
    call: ToolCall
    tool: GatedTool
    hook_permission: HookPermission = None
    """A PreToolUse hook's `allow` or `ask` for this call, which the permission check still weighs."""
    bash_runs: BashPlace = "unconfined"
    """Where the sandbox placed a Bash command (guards before the permission check set it)."""

    def placed(self, where: BashPlace) -> ToolAttempt:
        return replace(self, bash_runs=where)


@dataclass(frozen=True, slots=True)
class Proceed:
    attempt: ToolAttempt


@dataclass(frozen=True, slots=True)
class Allow:
    arguments: JsonObject | None = None
    """Arguments to run the call with instead of the model's (a hook's `updatedInput`); None keeps them."""


@dataclass(frozen=True, slots=True)
class Refuse:
    reason: str
    """What the model reads instead of a result, and the task's list of refused calls keeps."""
    shown: str
    """The call in one line (its command, path or URL), for that list."""


@dataclass(frozen=True, slots=True)
class Stop:
    reason: str
    shown: str
    stop: str
    """Why the run ends (a hook's `stopReason`)."""


GuardOutcome: TypeAlias = Proceed | Allow | Refuse | Stop


class Guard(Protocol):
    async def __call__(self, attempt: ToolAttempt) -> GuardOutcome: ...
