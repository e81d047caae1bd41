"""Hooks with Claude Code's semantics: configuration, matching, the command runner, and the engine that answers
the loop's and the permission gate's hook points (`hook_points`)."""

from __future__ import annotations

from .config import HOOK_EVENTS, CommandHook, HookEvent, HookSet, ParsedHooks, parse_hooks
from .engine import AgentHooks, HookIdentity, StartAnswer
from .runner import HookProcess, run_command_hook
from .sources import RunHookSet, hooks_for_run

__all__ = [
    "HOOK_EVENTS",
    "AgentHooks",
    "CommandHook",
    "HookEvent",
    "HookIdentity",
    "HookProcess",
    "HookSet",
    "ParsedHooks",
    "RunHookSet",
    "StartAnswer",
    "hooks_for_run",
    "parse_hooks",
    "run_command_hook",
]
