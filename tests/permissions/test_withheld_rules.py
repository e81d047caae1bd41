"""An untrusted project's own allow rules do not count, and a call they would have allowed says so: the rule, its
file, and how to trust the project, in the reason the model and the person read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_subagents.config.claude_settings import ClaudeSettings, SettingsFile
from mcp_subagents.core.json_values import JsonObject
from mcp_subagents.permissions import PermissionPolicy, decide, rules_from_settings

WHY = "the project /work is not trusted: here is how to trust it"


def policy(
    tmp_path: Path, permissions: JsonObject, *, mode: str = "default", managed: JsonObject | None = None
) -> PermissionPolicy:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    files = [SettingsFile("project", work / ".claude" / "settings.json", {"permissions": permissions})]
    if managed is not None:
        files.append(SettingsFile("managed", tmp_path / "managed.json", managed))
    settings = ClaudeSettings(files=tuple(files)).untrusted(WHY)
    return PermissionPolicy(cwd=work, mode=mode, rules=rules_from_settings(settings), home=tmp_path / "home")


@pytest.mark.parametrize(
    ("tool", "arguments", "rule"),
    [
        ("Bash", {"command": "make build"}, "Bash(make build)"),
        ("Write", {"file_path": "src/app.py", "content": "x"}, "Edit(./src/**)"),
        ("WebFetch", {"url": "https://docs.example.com/a", "prompt": "p"}, "WebFetch(domain:docs.example.com)"),
    ],
)
def test_a_call_an_untrusted_rule_would_allow_asks_and_names_the_rule_its_file_and_how_to_trust(
    tmp_path: Path, tool: str, arguments: JsonObject, rule: str
) -> None:
    verdict = decide(policy(tmp_path, {"allow": ["Read(./x)", rule]}), tool, arguments)
    file = tmp_path / "work" / ".claude" / "settings.json"
    assert verdict.decision == "ask"
    assert verdict.reason.endswith(
        f"{json.dumps(rule)} in permissions.allow of {file} would allow this call but does not count, because {WHY}."
    )
    assert "Read(./x)" not in verdict.reason


def test_dont_ask_mode_denies_and_says_the_same(tmp_path: Path) -> None:
    verdict = decide(policy(tmp_path, {"allow": ["Bash(make *)"]}, mode="dontAsk"), "Bash", {"command": "make"})
    assert verdict.decision == "deny" and f"does not count, because {WHY}." in verdict.reason


def test_a_compound_command_names_every_untrusted_rule_it_needed(tmp_path: Path) -> None:
    rules = {"allow": ["Bash(make build)", "Bash(make test)", "Bash(rm *)"]}
    verdict = decide(policy(tmp_path, rules), "Bash", {"command": "make build && make test"})
    assert verdict.decision == "ask"
    assert '"Bash(make build)" in permissions.allow' in verdict.reason
    assert '"Bash(make test)" in permissions.allow' in verdict.reason
    assert "Bash(rm *)" not in verdict.reason and "do not count" in verdict.reason


@pytest.mark.parametrize(
    ("permissions", "managed"),
    [
        ({"allow": ["Bash(make other)"]}, None),  # no untrusted rule would allow it
        ({"allow": ["Bash(make build)"], "deny": ["Bash(make *)"]}, None),  # a deny rule decides either way
        ({"allow": ["Bash(make build)"]}, {"allowManagedPermissionRulesOnly": True}),  # only the policy's count
    ],
)
def test_no_word_of_trust_where_trust_would_not_have_allowed_the_call(
    tmp_path: Path, permissions: JsonObject, managed: JsonObject | None
) -> None:
    verdict = decide(policy(tmp_path, permissions, managed=managed), "Bash", {"command": "make build"})
    assert verdict.decision != "allow" and "does not count" not in verdict.reason
