"""The permission gate of a run whose Bash commands may run in the sandbox.

A Bash call that will run in the sandbox is checked by a gate whose policy has `bash_sandboxed` set (it runs without
asking unless a rule says otherwise); one that runs outside (`dangerouslyDisableSandbox`, `excludedCommands`) gets
the normal check; one the sandbox settings refuse is denied here, before anyone is asked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..errors import ToolError
from ..hook_points import HookPermission
from ..json_values import JsonObject
from ..messages import ToolCall
from ..permissions.asking import Denial
from ..tools.base import Tool
from .runtime import RunSandbox

Gate = Callable[[ToolCall, Tool, HookPermission], Awaitable[JsonObject | None]]


class SandboxAwareGate:
    def __init__(self, *, sandbox: RunSandbox, gate: Gate, sandboxed_gate: Gate, denials: list[Denial]) -> None:
        self._sandbox = sandbox
        self._gate = gate
        self._sandboxed_gate = sandboxed_gate
        self._denials = denials

    async def __call__(self, call: ToolCall, tool: Tool, hook_permission: HookPermission) -> JsonObject | None:
        command = call.arguments.get("command")
        if tool.name != "Bash" or not isinstance(command, str):
            return await self._gate(call, tool, hook_permission)
        leave = call.arguments.get("dangerouslyDisableSandbox") is True
        placement = self._sandbox.placement(command, leave_requested=leave)
        if placement.refusal:
            self._denials.append(Denial(tool=tool.name, arguments=command[:120], reason=placement.refusal))
            raise ToolError(f"Permission denied: {placement.refusal}")
        return await (self._sandboxed_gate if placement.sandboxed else self._gate)(call, tool, hook_permission)
