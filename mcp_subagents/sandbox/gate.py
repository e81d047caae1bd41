"""The permission gate of a run whose Bash commands may run in the sandbox.

Each Bash call is placed first, exactly as the Bash tool will place it: in the sandbox, outside it
(`dangerouslyDisableSandbox`, `excludedCommands`), or nowhere (the settings refuse it, denied here before anyone is
asked). The call is then checked by the gate whose policy says where it runs: a command that leaves the sandbox
needs an allow rule that names it (or bypassPermissions mode), whatever it looks like.
"""

from __future__ import annotations

from ..core.errors import ToolError
from ..core.hook_points import GatedTool, HookPermission, ToolGate
from ..core.json_values import JsonObject
from ..core.messages import ToolCall
from ..permissions.asking import Denial
from .runtime import RunSandbox

Gate = ToolGate


class SandboxAwareGate:
    def __init__(
        self, *, sandbox: RunSandbox, gate: Gate, sandboxed_gate: Gate, outside_gate: Gate, denials: list[Denial]
    ) -> None:
        """`gate` checks the other tools; `sandboxed_gate` a Bash command that runs in the sandbox, `outside_gate`
        one that runs outside it."""
        self._sandbox = sandbox
        self._gate = gate
        self._sandboxed_gate = sandboxed_gate
        self._outside_gate = outside_gate
        self._denials = denials

    async def __call__(self, call: ToolCall, tool: GatedTool, hook_permission: HookPermission) -> JsonObject | None:
        command = call.arguments.get("command")
        if tool.name != "Bash" or not isinstance(command, str):
            return await self._gate(call, tool, hook_permission)
        placement = self._sandbox.placement(command, leave_requested=_leave_requested(call, tool))
        if placement.refusal:
            self._denials.append(Denial(tool=tool.name, arguments=command[:120], reason=placement.refusal))
            raise ToolError(f"Permission denied: {placement.refusal}")
        gate = self._sandboxed_gate if placement.sandboxed else self._outside_gate
        return await gate(call, tool, hook_permission)


def _leave_requested(call: ToolCall, tool: GatedTool) -> bool:
    """`dangerouslyDisableSandbox` as the Bash tool will read it (either spelling, `"true"` and `1` included), so
    that the place checked is the place it runs. Arguments the tool refuses run nowhere: ask as if they left."""
    try:
        arguments = tool.validate(call.arguments)
    except ToolError:
        return True
    return getattr(arguments, "dangerously_disable_sandbox", False) is True
