"""Bash and the sandbox: where a command runs changes what runs without asking.

In the sandbox with autoAllowBashIfSandboxed, what would ask runs, while rules and protected paths still hold; without
the setting it asks, as in Claude Code. A command that leaves the sandbox runs only by an allow rule that names it or
in bypassPermissions mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, Verdict, decide
from mcp_subagents.permissions.context import BashRuns
from mcp_subagents.permissions.protected import ProtectedPaths
from tests.support import RuleLists


def verdict(
    tmp_path: Path,
    command: str,
    *,
    mode: str = "default",
    outside: object = None,
    runs: BashRuns = "sandboxed",
    auto_allow: bool = True,
    too_wide: str | None = None,
    **rules: Unpack[RuleLists],
) -> Verdict:
    policy = PermissionPolicy(
        cwd=tmp_path,
        mode=mode,
        rules=PermissionRules.of(**rules),
        bash_runs=runs,
        sandbox_auto_allow=auto_allow,
        sandbox_too_wide=too_wide,
        protected=ProtectedPaths(),
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


@pytest.mark.parametrize("command", ["echo hi > made.txt", "touch made2.txt", "rm -f notes.txt", "make"])
def test_without_auto_allow_a_sandboxed_command_asks_and_says_how_to_allow_it(tmp_path: Path, command: str) -> None:
    result = verdict(tmp_path, command, auto_allow=False)
    assert result.decision == "ask"
    assert "autoAllowBashIfSandboxed" in result.reason and "--sandbox auto-allow" in result.reason


def test_without_auto_allow_read_only_commands_still_run(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x\n", encoding="utf-8")
    for command in ("ls", "cat notes.txt", "grep -n secret notes.txt", "git status --short"):
        assert verdict(tmp_path, command, auto_allow=False).decision == "allow", command


def test_a_sandbox_wider_than_a_project_never_runs_commands_unasked(tmp_path: Path) -> None:
    why = f"{tmp_path} is your home directory, so the sandbox cannot confine writes to a project"
    result = verdict(tmp_path, "touch made.txt", too_wide=why)
    assert result.decision == "ask" and why in result.reason and "--cwd" in result.reason
    assert verdict(tmp_path, "ls", too_wide=why).decision == "allow"


@pytest.mark.parametrize("mode", ["default", "acceptEdits"])
@pytest.mark.parametrize("command", ["make", "ls", "cat notes.txt", "git status", "echo hi"])
def test_a_command_that_leaves_the_sandbox_asks_even_when_it_only_reads(
    tmp_path: Path, mode: str, command: str
) -> None:
    for result in (
        verdict(tmp_path, command, outside=True, mode=mode),
        verdict(tmp_path, command, runs="outside_sandbox", mode=mode),
    ):
        assert result.decision == "ask"
        assert "outside the sandbox" in result.reason and "permissions.allow" in result.reason


def test_the_question_names_why_it_leaves(tmp_path: Path) -> None:
    assert "dangerouslyDisableSandbox" in verdict(tmp_path, "ls", outside=True).reason
    assert "sandbox.excludedCommands" in verdict(tmp_path, "docker ps", runs="outside_sandbox").reason


def test_only_an_allow_rule_that_matches_or_bypass_mode_lets_it_leave(tmp_path: Path) -> None:
    assert verdict(tmp_path, "docker ps", outside=True, allow=["Bash(docker *)"]).decision == "allow"
    assert verdict(tmp_path, "docker ps", outside=True, allow=["Bash"]).decision == "allow"
    assert verdict(tmp_path, "docker ps", outside=True, mode="bypassPermissions").decision == "allow"
    # Every part needs a rule: the read-only `ls` does not ride along.
    assert verdict(tmp_path, "ls && docker ps", outside=True, allow=["Bash(docker *)"]).decision == "ask"
    assert verdict(tmp_path, "docker ps", outside=True, allow=["Bash(npm *)"]).decision == "ask"


def test_deny_and_ask_rules_and_other_modes_still_decide_first_for_a_command_that_leaves(tmp_path: Path) -> None:
    rules: RuleLists = {"allow": ["Bash"], "deny": ["Bash(rm *)"], "ask": ["Bash(git push *)"]}
    assert verdict(tmp_path, "rm -rf x", outside=True, **rules).decision == "deny"
    assert verdict(tmp_path, "git push", outside=True, **rules).decision == "ask"
    assert verdict(tmp_path, "ls", outside=True, mode="dontAsk").decision == "deny"
    planned = verdict(tmp_path, "ls", outside=True, mode="plan")
    assert planned.decision == "deny" and "outside the sandbox" in planned.reason


@pytest.mark.parametrize("value", [True, "true", 1, "yes"])
def test_every_value_the_bash_tool_takes_for_true_leaves_the_sandbox(tmp_path: Path, value: object) -> None:
    assert verdict(tmp_path, "make", outside=value).decision == "ask"


@pytest.mark.parametrize("value", [False, "false", 0, None])
def test_values_the_bash_tool_takes_for_false_stay_in_the_sandbox(tmp_path: Path, value: object) -> None:
    assert verdict(tmp_path, "make", outside=value).decision == "allow"


def test_the_snake_case_spelling_of_the_argument_leaves_too(tmp_path: Path) -> None:
    policy = PermissionPolicy(cwd=tmp_path, bash_runs="sandboxed", sandbox_auto_allow=True)
    arguments: dict[str, object] = {"command": "ls", "dangerously_disable_sandbox": True}
    assert decide(policy, "Bash", arguments).decision == "ask"


def test_deny_rules_and_explicit_ask_rules_still_apply(tmp_path: Path) -> None:
    rules: RuleLists = {"deny": ["Bash(curl *)", "Read(**/.env)", "Edit(**/*.lock)"], "ask": ["Bash(git push *)"]}
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
    assert decide(policy, "Bash", {"command": "ls", "dangerouslyDisableSandbox": True}).decision == "allow"
