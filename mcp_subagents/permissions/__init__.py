"""Permissions: Claude Code's rules and modes, turned into allow / ask / deny for each tool call."""

from __future__ import annotations

from .agent_map import agent_map_problems, agent_map_verdict
from .policy import MODES, READ_ONLY_TOOLS, PermissionPolicy, decide, effective_mode, normalize_mode
from .rules import PermissionRule, PermissionRules, RuleError, load_rules, parse_rule
from .verdict import Decision, Verdict

__all__ = [
    "MODES",
    "READ_ONLY_TOOLS",
    "Decision",
    "PermissionPolicy",
    "PermissionRule",
    "PermissionRules",
    "RuleError",
    "Verdict",
    "agent_map_problems",
    "agent_map_verdict",
    "decide",
    "effective_mode",
    "load_rules",
    "normalize_mode",
    "parse_rule",
]
