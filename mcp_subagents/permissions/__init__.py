"""Permissions: Claude Code's rules and modes, turned into allow / ask / deny for each tool call.

Names load on first use: the rule engine (and pathspec) is needed at the first tool call, not at server start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_map import agent_map_problems, agent_map_verdict
    from .modes import MODES, effective_mode, normalize_mode
    from .policy import READ_ONLY_TOOLS, PermissionPolicy, decide
    from .rules import PermissionRule, PermissionRules, RuleError, parse_rule, rules_from_settings
    from .verdict import Decision, Verdict

_HOMES = {
    "Decision": "verdict",
    "MODES": "modes",
    "PermissionPolicy": "policy",
    "PermissionRule": "rules",
    "PermissionRules": "rules",
    "READ_ONLY_TOOLS": "policy",
    "RuleError": "rules",
    "Verdict": "verdict",
    "agent_map_problems": "agent_map",
    "agent_map_verdict": "agent_map",
    "decide": "policy",
    "effective_mode": "modes",
    "normalize_mode": "modes",
    "parse_rule": "rules",
    "rules_from_settings": "rules",
}

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
    "normalize_mode",
    "parse_rule",
    "rules_from_settings",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value  # later imports of the name find it here instead of calling this again
    return value
