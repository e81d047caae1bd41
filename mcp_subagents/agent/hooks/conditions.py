"""A handler's `if` rule: permission-rule syntax matched against one tool call, as Claude Code matches it.

The rule is checked the way a deny rule is: `Bash(git push *)` matches when any part of the command does (after
`VAR=value` prefixes and wrappers), `Edit(*.ts)` a TypeScript file, `WebFetch(domain:x)` that host. A Bash command
too complex to split runs the hook anyway, so a guard never misses a command it cannot read.
"""

from __future__ import annotations

from pathlib import Path

from ...core.json_values import JsonObject
from ...core.names import AGENT_TOOLS
from ...permissions.bash import ShellSyntaxError, split_command
from ...permissions.context import PermissionPolicy
from ...permissions.policy import decide
from ...permissions.rules import PermissionRule, PermissionRules


def condition_matches(rule: PermissionRule, tool: str, arguments: JsonObject, *, cwd: Path, home: Path) -> bool:
    if rule.tool in AGENT_TOOLS:
        return tool in AGENT_TOOLS and (rule.specifier is None or arguments.get("subagent_type") == rule.specifier)
    if not rule.applies_to(tool):
        return False
    if rule.specifier is None:
        return True
    if tool == "Bash" and _unreadable(arguments.get("command")):
        return True
    probe = PermissionPolicy(cwd=cwd, home=home, mode="bypassPermissions", rules=PermissionRules(deny=(rule,)))
    verdict = decide(probe, tool, arguments)
    return verdict.decision == "deny" and verdict.rule == rule.text


def _unreadable(command: object) -> bool:
    if not isinstance(command, str):
        return False
    try:
        split_command(command)
    except ShellSyntaxError:
        return True
    return False
