"""Loading a skill whose `allowed-tools` widen what the agent may do, and what it grants afterwards."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from mcp_subagents.permissions import decide
from mcp_subagents.permissions.context import PermissionPolicy
from mcp_subagents.permissions.rules import PermissionRules
from mcp_subagents.permissions.skill_grants import SkillGrants, skill_load_verdict


@pytest.mark.parametrize(
    ("mode", "rules", "decision"),
    [
        ("default", PermissionRules(), "ask"),
        ("acceptEdits", PermissionRules(), "ask"),
        ("dontAsk", PermissionRules(), "deny"),
        ("bypassPermissions", PermissionRules(), "allow"),
        ("default", PermissionRules.of(allow=["Skill"]), "allow"),
        ("default", PermissionRules.of(allow=["Skill(deploy)"]), "allow"),
        ("default", PermissionRules.of(allow=["Skill(other)"]), "ask"),
        ("bypassPermissions", PermissionRules.of(deny=["Skill(deploy)"]), "deny"),
        ("bypassPermissions", PermissionRules.of(ask=["Skill"]), "ask"),
        ("default", PermissionRules.of(allow=["Skill"], ask=["Skill(deploy)"]), "ask"),
    ],
)
def test_loading_a_granting_skill_is_decided_like_a_call(
    tmp_path: Path, mode: str, rules: PermissionRules, decision: str
) -> None:
    policy = PermissionPolicy(cwd=tmp_path, mode=mode, rules=rules)
    verdict = skill_load_verdict(policy, "deploy", ["Write", "Bash(touch *)"])
    assert verdict.decision == decision, verdict.reason
    if decision == "ask" and verdict.rule is None:
        assert "Write, Bash(touch *) without asking" in verdict.reason and '"Skill(deploy)"' in verdict.reason


def test_a_loaded_skills_rules_allow_until_a_deny_rule_or_the_sandbox_edge(tmp_path: Path) -> None:
    grants = SkillGrants(lambda name: ("Write", "Bash(touch *)", "not a (rule") if name == "deploy" else ())
    assert grants.wanted({"skill": "deploy"}) == ("deploy", ("Write", "Bash(touch *)", "not a (rule"))
    assert grants.wanted({"skill": "plain"}) is None
    policy = PermissionPolicy(cwd=tmp_path, rules=PermissionRules.of(deny=["Write(./keep.txt)"]))
    write = {"file_path": str(tmp_path / "a.txt"), "content": "x"}
    assert decide(grants.applied(policy), "Write", write).decision == "ask"  # nothing granted yet

    grants.grant("deploy")  # the entry that does not parse is logged and skipped

    assert decide(grants.applied(policy), "Write", write).decision == "allow"
    kept = {"file_path": str(tmp_path / "keep.txt"), "content": "x"}
    assert decide(grants.applied(policy), "Write", kept).decision == "deny"
    touch = {"command": "touch b.txt"}
    assert decide(grants.applied(policy), "Bash", touch).decision == "allow"
    outside = replace(policy, bash_runs="outside_sandbox")
    assert grants.applied(outside) is outside
    managed = replace(policy, rules=replace(policy.rules, managed_only=True))
    assert grants.applied(managed) is managed
