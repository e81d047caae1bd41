"""The guard that places each Bash call where the Bash tool will run it, before the permission check.

In the sandbox, outside it (`dangerouslyDisableSandbox`, `excludedCommands`), or nowhere (the settings refuse it:
refused here, before anyone is asked). The permission check then judges the command by the policy for that place: a
command that leaves the sandbox needs an allow rule that names it (or bypassPermissions mode), whatever it looks like.
"""

from __future__ import annotations

from ..core.errors import ToolError
from ..core.guards import GuardOutcome, Proceed, Refuse, ToolAttempt
from .runtime import RunSandbox


class SandboxPlacement:
    def __init__(self, sandbox: RunSandbox) -> None:
        self._sandbox = sandbox

    async def __call__(self, attempt: ToolAttempt) -> GuardOutcome:
        command = attempt.call.arguments.get("command")
        if attempt.tool.name != "Bash" or not isinstance(command, str):
            return Proceed(attempt)
        placement = self._sandbox.placement(command, leave_requested=_leave_requested(attempt))
        if placement.refusal:
            return Refuse(placement.refusal, command[:120])
        return Proceed(attempt.placed("sandboxed" if placement.sandboxed else "outside_sandbox"))


def _leave_requested(attempt: ToolAttempt) -> bool:
    """`dangerouslyDisableSandbox` as the Bash tool will read it (either spelling, `"true"` and `1` included), so
    that the place checked is the place it runs. Arguments the tool refuses run nowhere: ask as if they left."""
    try:
        arguments = attempt.tool.validate(attempt.call.arguments)
    except ToolError:
        return True
    return getattr(arguments, "dangerously_disable_sandbox", False) is True
