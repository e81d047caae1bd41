"""What a hook's exit code and output mean, as Claude Code reads them.

Exit 0: stdout is read as JSON when it starts with `{` (otherwise it is only logged). Exit 2: a blocking error,
stderr is the reason and stdout is ignored. Any other exit, a timeout or a hook that cannot start: a non-blocking
error; the action goes on and the model reads a one-line notice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, cast

from ...core.json_values import JsonObject
from .config import CommandHook, HookEvent
from .runner import HookProcess

MAX_CONTEXT_CHARS = 10_000
"""Hook text that reaches the model (additionalContext, reasons) is cut to this, as Claude Code caps it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HookReply:
    """One handler's answer to one event."""

    hook: CommandHook
    event: HookEvent
    process: HookProcess
    data: JsonObject | None = None
    """The JSON object the hook printed (exit 0 only)."""
    problem: str | None = None
    """A non-blocking error: why the hook's answer could not be used. The action goes on."""

    @property
    def blocks(self) -> bool:
        return self.process.exit_code == 2

    @property
    def block_reason(self) -> str:
        text = self.process.stderr.strip() or f"the {self.event} hook `{_short(self.hook.command)}` exited with 2"
        return clip(text)

    @property
    def stops(self) -> bool:
        """`continue: false`: the agent stops after this hook, whatever else it answered."""
        return self.data is not None and self.data.get("continue") is False

    @property
    def stop_reason(self) -> str:
        reason = self.data.get("stopReason") if self.data is not None else None
        return clip(reason) if isinstance(reason, str) and reason.strip() else f"the {self.event} hook said to stop"

    def specific(self) -> JsonObject:
        """`hookSpecificOutput`, when it is for this event (or names none)."""
        if self.data is None:
            return {}
        value = self.data.get("hookSpecificOutput")
        if not isinstance(value, dict):
            return {}
        specific = cast("JsonObject", value)
        named = specific.get("hookEventName")
        return specific if named in (None, self.event) else {}

    def text(self, key: str, *, top_level: bool = False) -> str | None:
        """A text field of `hookSpecificOutput` (or of the top level), cut to the context cap."""
        source = self.data if top_level else self.specific()
        value = (source or {}).get(key)
        return clip(value) if isinstance(value, str) and value.strip() else None

    @property
    def context(self) -> str | None:
        return self.text("additionalContext")

    @property
    def notice(self) -> str | None:
        """The one line the model reads about a hook that failed without blocking."""
        if self.problem is None:
            return None
        return f"{self.event} hook error ({_short(self.hook.command)}): {self.problem}"


def read_reply(hook: CommandHook, event: HookEvent, process: HookProcess) -> HookReply:
    """Interpret how a hook command ended."""
    if process.start_error is not None:
        return HookReply(hook=hook, event=event, process=process, problem=process.start_error)
    if process.timed_out:
        return HookReply(
            hook=hook, event=event, process=process, problem=f"timed out after {hook.timeout_s:g} s and was stopped"
        )
    code = process.exit_code
    if code == 2:
        return HookReply(hook=hook, event=event, process=process)
    if code != 0:
        first = next((line.strip() for line in process.stderr.splitlines() if line.strip()), "")
        detail = f": {first[:300]}" if first else ""
        return HookReply(hook=hook, event=event, process=process, problem=f"exited with {code}{detail}")
    stdout = process.stdout.strip()
    if not stdout.startswith("{"):
        return HookReply(hook=hook, event=event, process=process)
    try:
        data: Any = json.loads(stdout)
    except json.JSONDecodeError as exc:
        return HookReply(hook=hook, event=event, process=process, problem=f"printed JSON that does not parse: {exc}")
    if not isinstance(data, dict):
        return HookReply(hook=hook, event=event, process=process, problem="printed JSON that is not an object")
    return HookReply(hook=hook, event=event, process=process, data=cast("JsonObject", data))


def clip(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    return f"{text[:MAX_CONTEXT_CHARS]}\n[hook output cut: {len(text)} characters in all]"


def _short(command: str) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= 80 else flat[:80] + "…"
