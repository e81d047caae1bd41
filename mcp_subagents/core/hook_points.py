"""What the tool-use loop and the permission gate ask of hooks, as data.

`RunHooks` is the loop's view: before a tool call, after it, and before the agent stops. `PermissionHook` is the
gate's: a call about to be asked about. The `hooks` package answers both by running the user's hook commands;
nothing here knows about commands, configuration or processes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from .json_values import JsonObject
from .messages import ToolCall, ToolResult

HookPermission: TypeAlias = Literal["allow", "ask"] | None
"""A PreToolUse hook's permission decision that the gate still has to weigh (a deny has blocked the call already)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BeforeTool:
    blocked: str | None = None
    """The call does not run; the model reads this reason."""
    permission: HookPermission = None
    arguments: JsonObject | None = None
    """Replacement arguments for the call (`updatedInput`)."""
    context: tuple[str, ...] = ()
    """Text the model reads next to the tool result."""
    stop: str | None = None
    """`continue: false`: the call does not run and the agent stops, for this reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AfterTool:
    output: str | None = None
    """Replacement for what the model reads as the tool's output."""
    context: tuple[str, ...] = ()
    stop: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BeforeStop:
    go_on: str | None = None
    """The agent does not stop: this is its next instruction (`decision: block` with its reason)."""
    stop: str | None = None
    """`continue: false`: stop, and say why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionAnswer:
    """A PermissionRequest hook's answer for the person."""

    decision: Literal["allow", "deny"]
    arguments: JsonObject | None = None
    message: str = ""
    stop: str | None = None
    """`interrupt: true` (or `continue: false`): the agent stops, for this reason."""


class RunHooks(Protocol):
    async def before_tool(self, call: ToolCall) -> BeforeTool: ...

    async def after_tool(
        self,
        call: ToolCall,
        result: ToolResult,
        *,
        failed: bool,
        duration_s: float,
        response: Callable[[], object] | None = None,
    ) -> AfterTool:
        """`failed`: the tool ran and reported an error (a call that never ran is not reported). `response` builds
        the tool's structured result (Claude Code's `tool_response`), where the tool has one; else hooks get the
        text the model read."""
        ...

    async def before_stop(self, text: str, *, continued: bool) -> BeforeStop:
        """`continued`: the agent already went on once because a hook kept it from stopping."""
        ...


class PermissionHook(Protocol):
    async def __call__(self, call: ToolCall) -> PermissionAnswer | None:
        """None: no hook decided; ask the person as usual."""
        ...


class GatedTool(Protocol):
    """What the check before a tool call needs of the tool: its name, and its arguments read as the tool reads
    them (`tools.base.Tool` is one)."""

    @property
    def name(self) -> str: ...

    def validate(self, arguments: JsonObject) -> object:
        """The arguments as the tool reads them. Raises `ToolError` for arguments it refuses."""
        ...


ToolGate: TypeAlias = Callable[[ToolCall, GatedTool, HookPermission], Awaitable[JsonObject | None]]
"""The check before each tool call: returns replacement arguments (or None to keep them), raises `ToolError` to
refuse the call (the model reads why), `StopRunError` to end the run."""
