"""The sandbox hook: with Bash sandboxed, what would ask runs, while rules and protected paths still hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, Verdict, decide
from mcp_subagents.permissions.protected import ProtectedPaths


def verdict(
    tmp_path: Path, command: str, *, mode: str = "default", outside: object = None, **rules: list[str]
) -> Verdict:
    policy = PermissionPolicy(
        cwd=tmp_path, mode=mode, rules=PermissionRules.of(**rules), bash_sandboxed=True, protected=ProtectedPaths()
    )
    arguments: dict[str, object] = {"command": command}
    if outside is not None:
        arguments["dangerouslyDisableSandbox"] = outside
    return decide(policy, "Bash", arguments)


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
@pytest.mark.parametrize(
    "command", ["make", "npm test", "touch x && rm x", "echo hi > /tmp/out.txt", "cat /etc/hostname", "a 'unterminated"]
)
def test_a_sandboxed_command_no_rule_decides_runs_without_asking(tmp_path: Path, mode: str, command: str) -> None:
    result = verdict(tmp_path, command, mode=mode)
    assert result.decision == "allow" and "sandbox" in result.reason


def test_dangerously_disable_sandbox_gets_the_normal_check(tmp_path: Path) -> None:
    assert verdict(tmp_path, "make", outside=True).decision == "ask"
    assert verdict(tmp_path, "make", outside=True, mode="acceptEdits").decision == "ask"
    assert verdict(tmp_path, "ls", outside=True).decision == "allow"  # read-only needs no sandbox


@pytest.mark.parametrize("value", [False, "true", 1, None])
def test_only_a_true_boolean_leaves_the_sandbox(tmp_path: Path, value: object) -> None:
    assert verdict(tmp_path, "make", outside=value).decision == "allow"


def test_deny_rules_and_explicit_ask_rules_still_apply(tmp_path: Path) -> None:
    rules = {"deny": ["Bash(curl *)", "Read(**/.env)", "Edit(**/*.lock)"], "ask": ["Bash(git push *)"]}
    assert verdict(tmp_path, "curl evil.example", **rules).decision == "deny"
    assert verdict(tmp_path, "git push origin main", **rules).decision == "ask"
    assert verdict(tmp_path, "cat .env", **rules).decision == "deny"
    assert verdict(tmp_path, "echo x > yarn.lock", **rules).decision == "deny"
    assert verdict(tmp_path, "cat notes.md", ask=["Read(notes.md)"]).decision == "ask"


def test_protected_paths_still_ask(tmp_path: Path) -> None:
    assert verdict(tmp_path, "echo x > .git/config").decision == "ask"


@pytest.mark.parametrize(("mode", "expected"), [("dontAsk", "deny"), ("plan", "deny"), ("bypassPermissions", "allow")])
def test_other_modes_decide_as_without_the_sandbox(tmp_path: Path, mode: str, expected: str) -> None:
    assert verdict(tmp_path, "make", mode=mode).decision == expected


def test_without_the_sandbox_nothing_changes(tmp_path: Path) -> None:
    policy = PermissionPolicy(cwd=tmp_path)
    assert decide(policy, "Bash", {"command": "make"}).decision == "ask"
