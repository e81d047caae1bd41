"""A skill's `allowed-tools`: tools the agent may use without asking once the skill is loaded, as in Claude Code
2.1.328 (measured: after a subagent loaded a skill with `allowed-tools: Write, Bash(touch:*)`, Write and
`touch` ran unasked in default mode and `rm` was still refused).

Because loading such a skill widens what the agent may do, loading it is itself a permission question, as in Claude
Code (in `-p` default mode it was refused until a `Skill` allow rule existed): a deny or ask rule naming `Skill` or
`Skill(name)` holds, an allow rule or bypassPermissions lets it load, otherwise the mode asks. What it grants counts
for the rest of the run as allow rules: deny and ask rules, protected paths and plan mode still hold, and a Bash
command that leaves the sandbox is not covered (a grant is an approval for the sandboxed run, not for running
unconfined). Project skills of a project the person has not trusted grant nothing (the runtime decides which
skills may grant).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core.json_values import JsonObject
from .context import PermissionPolicy, needs_approval
from .rules import PermissionRule, RuleError, parse_rule
from .verdict import Verdict

logger = logging.getLogger(__name__)

SKILL_TOOL = "Skill"


class SkillGrants:
    """The grants of one run: which skill would grant what (`lookup`), and what loaded skills granted."""

    def __init__(self, lookup: Callable[[str], Sequence[str]]) -> None:
        self._lookup = lookup
        self._granted: tuple[PermissionRule, ...] = ()
        self._applied: tuple[PermissionPolicy, tuple[PermissionRule, ...], PermissionPolicy] | None = None

    def wanted(self, arguments: JsonObject) -> tuple[str, tuple[str, ...]] | None:
        """For a Skill call: the skill's name and the tools it would allow; None when it allows none."""
        name = arguments.get("skill")
        if not isinstance(name, str):
            return None
        tools = tuple(self._lookup(name))
        return (name, tools) if tools else None

    def grant(self, skill: str) -> None:
        """The skill was loaded: its `allowed-tools` count from now on. An entry that is not a rule is logged."""
        rules: list[PermissionRule] = []
        for entry in self._lookup(skill):
            try:
                rules.append(parse_rule(entry, source=f"the allowed-tools of the skill {skill}"))
            except RuleError as exc:
                logger.warning("skill %s: allowed-tools entry %r is not a rule (%s); skipped", skill, entry, exc)
        known = {rule.text for rule in self._granted}
        self._granted = (*self._granted, *(rule for rule in rules if rule.text not in known))

    def applied(self, policy: PermissionPolicy) -> PermissionPolicy:
        """`policy` with the granted rules allowed; unchanged for a command run outside the sandbox, and where only
        the managed policy's rules count."""
        granted = self._granted
        if not granted or policy.rules.managed_only or policy.bash_runs == "outside_sandbox":
            return policy
        if self._applied is not None and self._applied[0] is policy and self._applied[1] == granted:
            return self._applied[2]
        widened = replace(policy, rules=replace(policy.rules, allow=(*policy.rules.allow, *granted)))
        self._applied = (policy, granted, widened)
        return widened


def skill_load_verdict(policy: PermissionPolicy, skill: str, tools: Sequence[str]) -> Verdict:
    """Whether the agent may load `skill`, whose `allowed-tools` are `tools`."""
    rules, mode = policy.rules, policy.active_mode
    never_asks = mode == "dontAsk" or rules.deny_instead_of_prompting
    deny = _naming(rules.deny, skill)
    if deny is not None:
        return Verdict("deny", f"Loading the skill {skill} is denied by {deny.where('deny')}.", deny.text)
    ask = _naming(rules.ask, skill)
    if ask is not None:
        reason = f"Loading the skill {skill} needs approval: it matches {ask.where('ask')}."
        if never_asks:
            return Verdict("deny", f"{reason} This server does not ask here, so it was denied.", ask.text)
        return Verdict("ask", reason, ask.text)
    allow = _naming(rules.allow, skill)
    if allow is not None:
        return Verdict("allow", f"Loading the skill {skill} is allowed by {allow.where('allow')}.", allow.text)
    if mode == "bypassPermissions":
        return Verdict("allow", "bypassPermissions mode lets skills grant their allowed-tools.")
    statement = (
        f"Loading the skill {skill} would let this agent use {', '.join(tools)} without asking for the rest of the task"
    )
    verdict = needs_approval(mode, statement, f"{SKILL_TOOL}({skill})")
    if verdict.decision == "ask" and never_asks:
        because = "permissions.denyInsteadOfPrompting is set, so the call was denied instead of asked about."
        return Verdict("deny", f"{verdict.reason} {because}", verdict.rule)
    return verdict


def _naming(rules: Sequence[PermissionRule], skill: str) -> PermissionRule | None:
    return next((rule for rule in rules if rule.tool == SKILL_TOOL and rule.specifier in (None, "*", skill)), None)
