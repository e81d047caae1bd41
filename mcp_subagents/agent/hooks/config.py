"""Hook configuration as Claude Code writes it, in settings files (`"hooks": {...}`) and in an agent's `hooks:`
frontmatter: event -> matcher groups -> handlers.

```json
{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh", "if": "Bash(rm *)"}]}]}
```

A bad entry is reported and skipped; the rest of the configuration still loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, cast

from ...core.names import AGENT_TOOLS
from ...permissions.rules import PermissionRule, RuleError, parse_rule

HookEvent: TypeAlias = Literal[
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "SubagentStart", "SubagentStop"
]
HOOK_EVENTS: Final[tuple[HookEvent, ...]] = (
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "SubagentStart",
    "SubagentStop",
)
"""The events that fire around a subagent here."""
TOOL_EVENTS: Final = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
"""Events whose matcher is a tool name and whose handlers may carry an `if` rule."""
SESSION_EVENTS: Final = frozenset(
    {
        "SessionStart",
        "SessionEnd",
        "Setup",
        "UserPromptSubmit",
        "UserPromptExpansion",
        "Stop",
        "StopFailure",
        "Notification",
        "PreCompact",
        "PostCompact",
        "PostToolBatch",
        "PermissionDenied",
        "TeammateIdle",
        "TaskCreated",
        "TaskCompleted",
        "InstructionsLoaded",
        "ConfigChange",
        "CwdChanged",
        "FileChanged",
        "WorktreeCreate",
        "WorktreeRemove",
        "Elicitation",
        "ElicitationResult",
    }
)
"""Claude Code's other events: they belong to the host's own session (an `Elicitation` hook answers our questions
there), so a settings file's entries for them are left to Claude Code."""
UNSUPPORTED_TYPES: Final = frozenset({"http", "prompt", "agent", "mcp_tool"})
DEFAULT_TIMEOUT_S: Final = 600.0
_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_|]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandHook:
    """One `type: command` handler."""

    command: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    condition: PermissionRule | None = None
    """The `if` rule: the handler runs only for tool calls it matches."""
    origin: str = ""
    """Where it was written: a settings file, or `agent NAME`."""


@dataclass(frozen=True, slots=True)
class Matcher:
    """Which subjects (tool names, agent types) a group applies to."""

    source: str = ""
    names: frozenset[str] | None = None
    """Exact names (`Bash`, `Edit|Write`); None with `pattern` None means everything."""
    pattern: re.Pattern[str] | None = None

    def matches(self, subject: str) -> bool:
        if self.names is not None:
            return subject in self.names
        if self.pattern is not None:
            return self.pattern.search(subject) is not None
        return True


@dataclass(frozen=True, slots=True, kw_only=True)
class HookGroup:
    event: HookEvent
    matcher: Matcher
    hooks: tuple[CommandHook, ...]


@dataclass(frozen=True, slots=True)
class HookSet:
    """Every hook group in effect for one run, in the order they were configured."""

    groups: tuple[HookGroup, ...] = field(default=())

    def __add__(self, other: HookSet) -> HookSet:
        return HookSet(self.groups + other.groups)

    def __bool__(self) -> bool:
        return bool(self.groups)

    def listens(self, event: HookEvent) -> bool:
        """Whether any group is for `event`, whatever it matches."""
        return any(group.event == event for group in self.groups)

    def handlers(self, event: HookEvent, subject: str) -> list[CommandHook]:
        """The handlers of `event` whose group matches `subject`; the same command string runs once. The nested
        launching tool answers to both of its names: `Agent` and the old `Task`."""
        subjects = tuple(sorted(AGENT_TOOLS)) if subject in AGENT_TOOLS else (subject,)
        found: dict[str, CommandHook] = {}
        for group in self.groups:
            if group.event == event and any(group.matcher.matches(name) for name in subjects):
                for hook in group.hooks:
                    found.setdefault(hook.command, hook)
        return list(found.values())


@dataclass(frozen=True, slots=True)
class ParsedHooks:
    hooks: HookSet
    problems: tuple[str, ...] = ()
    """Entries skipped, each with where it was and why."""
    ignored_events: tuple[str, ...] = ()
    """Claude Code events that never fire for a subagent (frontmatter only; settings files' are the host's)."""


def compile_matcher(source: object) -> Matcher:
    """`*`, `""` or none: everything; letters, digits, `_` and `|` only: exact names; anything else: a regular
    expression searched in the subject, as Claude Code does.

    Raises:
        ValueError: the matcher is not text, or not a valid regular expression.
    """
    if source is None:
        return Matcher()
    if not isinstance(source, str):
        raise ValueError(f"matcher must be text, not {type(source).__name__}")
    text = source.strip()
    if text in ("", "*"):
        return Matcher(text)
    if _EXACT_MATCHER.fullmatch(text):
        return Matcher(text, names=frozenset(part for part in text.split("|") if part))
    try:
        return Matcher(text, pattern=re.compile(text))
    except re.error as exc:
        raise ValueError(f"matcher {text!r} is not a valid regular expression: {exc}") from None


def parse_hooks(value: object, *, origin: str, frontmatter: bool = False) -> ParsedHooks:
    """The hooks of one settings file's `hooks` value, or of an agent's `hooks:` frontmatter.

    In frontmatter, `Stop` becomes `SubagentStop` (what fires when a subagent finishes), as in Claude Code.
    """
    if value is None:
        return ParsedHooks(HookSet())
    if not isinstance(value, Mapping):
        return ParsedHooks(HookSet(), (f"{origin}: hooks must be a mapping of event names to matcher groups",))
    groups: list[HookGroup] = []
    problems: list[str] = []
    ignored: list[str] = []
    for raw_event, entries in cast("Mapping[str, Any]", value).items():
        event_name = "SubagentStop" if frontmatter and raw_event == "Stop" else str(raw_event)
        if event_name not in HOOK_EVENTS:
            if event_name in SESSION_EVENTS:
                if frontmatter:
                    ignored.append(event_name)
            else:
                problems.append(f"{origin}: hooks.{raw_event}: unknown hook event; skipped")
            continue
        event: HookEvent = event_name
        if not isinstance(entries, list):
            problems.append(f"{origin}: hooks.{raw_event} must be a list of matcher groups; skipped")
            continue
        for index, entry in enumerate(cast("list[Any]", entries)):
            group = _group(event, entry, where=f"{origin}: hooks.{raw_event}[{index}]", origin=origin, out=problems)
            if group is not None:
                groups.append(group)
    return ParsedHooks(HookSet(tuple(groups)), tuple(problems), tuple(ignored))


def _group(event: HookEvent, entry: object, *, where: str, origin: str, out: list[str]) -> HookGroup | None:
    if not isinstance(entry, Mapping):
        out.append(f"{where} must be an object with 'matcher' and 'hooks'; skipped")
        return None
    fields = cast("Mapping[str, Any]", entry)
    try:
        matcher = compile_matcher(fields.get("matcher"))
    except ValueError as exc:
        out.append(f"{where}: {exc}; skipped")
        return None
    handlers = fields.get("hooks")
    if not isinstance(handlers, list):
        out.append(f"{where}.hooks must be a list of handlers; skipped")
        return None
    hooks = [
        hook
        for position, handler in enumerate(cast("list[Any]", handlers))
        if (hook := _handler(event, handler, where=f"{where}.hooks[{position}]", origin=origin, out=out)) is not None
    ]
    return HookGroup(event=event, matcher=matcher, hooks=tuple(hooks)) if hooks else None


def _handler(event: HookEvent, handler: object, *, where: str, origin: str, out: list[str]) -> CommandHook | None:
    if not isinstance(handler, Mapping):
        out.append(f"{where} must be an object with 'type' and 'command'; skipped")
        return None
    fields = cast("Mapping[str, Any]", handler)
    kind = fields.get("type", "command")
    if kind in UNSUPPORTED_TYPES:
        out.append(f"{where}: '{kind}' hooks are not supported by this server yet (only 'command'); skipped")
        return None
    if kind != "command":
        out.append(f"{where}: unknown hook type {kind!r}; skipped")
        return None
    command = fields.get("command")
    if not isinstance(command, str) or not command.strip():
        out.append(f"{where}: a command hook needs 'command' as text; skipped")
        return None
    timeout = fields.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        out.append(f"{where}: timeout must be a positive number of seconds, got {timeout!r}; skipped")
        return None
    condition: PermissionRule | None = None
    rule = fields.get("if")
    if rule is not None:
        if event not in TOOL_EVENTS:
            out.append(f"{where}: 'if' only applies to tool events, so this handler would never run; skipped")
            return None
        try:
            condition = parse_rule(str(rule), source=origin)
        except RuleError as exc:
            out.append(f"{where}: 'if': {exc.message}; skipped")
            return None
    return CommandHook(command=command, timeout_s=float(timeout), condition=condition, origin=origin)
