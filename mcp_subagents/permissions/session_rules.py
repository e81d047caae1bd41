"""Allow rules the person added by answering "always allow" while this server runs.

They count at once, in every run in the same project, whether or not the project is trusted: the person gave them
here, not a file of the project (on a team's replicas, on every replica). The same rule is also written to the
project's `.claude/settings.local.json` for later sessions (see `runtime/answers.py`), where it counts once the
project is trusted, as Claude Code's "don't ask again" does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from .context import PermissionPolicy
from .rules import PermissionRule, parse_rule

SOURCE = "an always-allow answer in this server session"


class SessionRules:
    def __init__(self) -> None:
        self._by_project: dict[Path, tuple[PermissionRule, ...]] = {}
        self.on_added: Callable[[Path, str], None] | None = None
        """Told of each rule the person adds here (a team's replica shares it with the others)."""
        self._applied: dict[int, tuple[PermissionPolicy, tuple[PermissionRule, ...], PermissionPolicy]] = {}

    def add(self, project: Path, rule: str, *, shared: bool = False) -> None:
        """`shared`: the rule comes from another replica of the team (it is not passed on again).

        Raises:
            RuleError: `rule` does not parse (a suggestion always does)."""
        parsed = parse_rule(rule, source=SOURCE)
        held = self._by_project.get(project, ())
        if parsed.text not in {known.text for known in held}:
            self._by_project[project] = (*held, parsed)
            if self.on_added is not None and not shared:
                self.on_added(project, rule)

    def rules_for(self, project: Path) -> tuple[PermissionRule, ...]:
        return self._by_project.get(project, ())

    def applied(self, policy: PermissionPolicy, project: Path) -> PermissionPolicy:
        """`policy` with this session's allow rules for `project` added; the same object while there are none (or
        only the managed policy's rules count)."""
        extra = self.rules_for(project)
        if not extra or policy.rules.managed_only:
            return policy
        cached = self._applied.get(id(policy))
        if cached is not None and cached[0] is policy and cached[1] == extra:
            return cached[2]
        widened = replace(policy, rules=replace(policy.rules, allow=(*policy.rules.allow, *extra)))
        if len(self._applied) > 256:
            self._applied.clear()
        self._applied[id(policy)] = (policy, extra, widened)
        return widened
