from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_subagents.permissions import (
    MODES,
    PermissionPolicy,
    PermissionRules,
    Verdict,
    agent_map_problems,
    decide,
    effective_mode,
    normalize_mode,
)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    (folder / "src").mkdir(parents=True)
    return folder


def policy(
    work: Path,
    *,
    mode: str = "default",
    allow: Sequence[str] = (),
    ask: Sequence[str] = (),
    deny: Sequence[str] = (),
    agent_map: dict[str, Any] | None = None,
    roots: tuple[Path, ...] = (),
    project_root: Path | None = None,
) -> PermissionPolicy:
    return PermissionPolicy(
        cwd=work,
        mode=mode,
        rules=PermissionRules.of(allow=allow, ask=ask, deny=deny, source="settings.json"),
        agent_map=agent_map,
        roots=roots,
        home=work.parent / "home",
        project_root=project_root,
    )


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "read": ("Read", {"file_path": "src/a.py"}),
    "glob": ("Glob", {"pattern": "**/*.py"}),
    "grep": ("Grep", {"pattern": "TODO", "path": "src"}),
    "todo": ("TodoWrite", {"todos": []}),
    "write": ("Write", {"file_path": "src/a.py", "content": "x"}),
    "edit": ("Edit", {"file_path": "src/a.py", "old_string": "a", "new_string": "b"}),
    "bash": ("Bash", {"command": "make"}),
    "bash_read": ("Bash", {"command": "ls src"}),
    "fetch": ("WebFetch", {"url": "https://example.com/", "prompt": "summarize"}),
    "mcp": ("mcp__github__create_issue", {"title": "x"}),
}

# What each mode decides when no rule matches.
MODE_TABLE = {
    "default": {"read": "allow", "glob": "allow", "grep": "allow", "todo": "allow", "write": "ask", "edit": "ask",
                "bash": "ask", "bash_read": "allow", "fetch": "ask", "mcp": "ask"},
    "acceptEdits": {"read": "allow", "glob": "allow", "grep": "allow", "todo": "allow", "write": "allow",
                    "edit": "allow", "bash": "ask", "bash_read": "allow", "fetch": "ask", "mcp": "ask"},
    "dontAsk": {"read": "allow", "glob": "allow", "grep": "allow", "todo": "allow", "write": "deny", "edit": "deny",
                "bash": "deny", "bash_read": "allow", "fetch": "deny", "mcp": "deny"},
    "bypassPermissions": dict.fromkeys(CALLS, "allow"),
    "plan": {"read": "allow", "glob": "allow", "grep": "allow", "todo": "allow", "write": "deny", "edit": "deny",
             "bash": "deny", "bash_read": "allow", "fetch": "deny", "mcp": "deny"},
}  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_decides_what_no_rule_covers(work: Path, mode: str) -> None:
    p = policy(work, mode=mode)
    decided = {name: decide(p, tool, args).decision for name, (tool, args) in CALLS.items()}
    assert decided == MODE_TABLE[mode]


@pytest.mark.parametrize("alias", ["auto", "manual", None, "nonsense"])
def test_auto_manual_and_unknown_modes_act_as_default(work: Path, alias: str | None) -> None:
    assert normalize_mode(alias) == "default"
    p = policy(work, mode=alias or "default")
    assert {n: decide(p, t, a).decision for n, (t, a) in CALLS.items()} == MODE_TABLE["default"]


# --- precedence ----------------------------------------------------------------------------------


def test_deny_beats_ask_beats_allow(work: Path) -> None:
    everything = policy(work, allow=["Bash"], ask=["Bash"], deny=["Bash"])
    assert decide(everything, "Bash", {"command": "ls"}).decision == "deny"
    asked = policy(work, allow=["Bash(git *)"], ask=["Bash(git push *)"])
    assert decide(asked, "Bash", {"command": "git push"}).decision == "ask"
    assert decide(asked, "Bash", {"command": "git pull"}).decision == "allow"


def test_a_specific_allow_does_not_punch_a_hole_in_a_broad_deny(work: Path) -> None:
    p = policy(work, allow=["Bash(aws s3 ls)"], deny=["Bash(aws *)"])
    assert decide(p, "Bash", {"command": "aws s3 ls"}).decision == "deny"


def test_rules_beat_the_mode_default(work: Path) -> None:
    p = policy(work, allow=["Edit(src/**)", "mcp__github"], deny=["Read(src/secret.py)"])
    assert decide(p, "Write", {"file_path": "src/new.py", "content": ""}).decision == "allow"
    assert decide(p, "mcp__github__create_issue", {}).decision == "allow"
    assert decide(p, "Read", {"file_path": "src/secret.py"}).decision == "deny"


def test_deny_rules_apply_in_bypass_permissions_mode(work: Path) -> None:
    p = policy(work, mode="bypassPermissions", deny=["Edit(.env)", "WebFetch"], ask=["Bash(git push *)"])
    assert decide(p, "Write", {"file_path": ".env", "content": ""}).decision == "deny"
    assert decide(p, "WebFetch", {"url": "https://x.org", "prompt": "p"}).decision == "deny"
    assert decide(p, "Write", {"file_path": "/anywhere/x", "content": ""}).decision == "allow"
    # Ask rules exist to force a prompt, so they still ask in bypassPermissions.
    assert decide(p, "Bash", {"command": "git push"}).decision == "ask"


def test_bypass_can_be_disabled_by_the_managed_policy(work: Path) -> None:
    rules = PermissionRules(bypass_disabled=True)
    p = PermissionPolicy(cwd=work, mode="bypassPermissions", rules=rules)
    assert p.active_mode == "default"
    assert decide(p, "Bash", {"command": "make"}).decision == "ask"


def test_plan_mode_allow_rules_cannot_permit_writes(work: Path) -> None:
    p = policy(work, mode="plan", allow=["Edit", "Bash", "WebFetch", "mcp__github"])
    for name in ("write", "edit", "bash", "fetch", "mcp"):
        tool, args = CALLS[name]
        verdict = decide(p, tool, args)
        assert verdict.decision == "deny", name
        assert "plan mode is read-only" in verdict.reason


def test_plan_mode_still_honours_deny_and_ask_on_reads(work: Path) -> None:
    p = policy(work, mode="plan", ask=["Read(src/**)"], deny=["Grep"])
    assert decide(p, "Read", {"file_path": "src/a.py"}).decision == "ask"
    assert decide(p, "Grep", {"pattern": "x"}).decision == "deny"


def test_dont_ask_turns_ask_rules_into_deny_but_keeps_allow_rules(work: Path) -> None:
    p = policy(work, mode="dontAsk", allow=["Bash(git status)", "Edit(src/**)"], ask=["Read(src/a.py)"])
    assert decide(p, "Bash", {"command": "git status"}).decision == "allow"
    assert decide(p, "Write", {"file_path": "src/b.py", "content": ""}).decision == "allow"
    verdict = decide(p, "Read", {"file_path": "src/a.py"})
    assert verdict.decision == "deny"
    assert "dontAsk" in verdict.reason and "permissions.ask" in verdict.reason


# --- paths ---------------------------------------------------------------------------------------


def test_accept_edits_allows_edits_only_inside_the_allowed_roots(work: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    p = policy(work, mode="acceptEdits", roots=(work, other))
    assert decide(p, "Edit", {"file_path": str(other / "x.py")}).decision == "allow"
    assert decide(p, "Write", {"file_path": "../outside.py"}).decision == "ask"
    assert decide(p, "Write", {"file_path": "/etc/hosts"}).decision == "ask"


def test_reading_outside_the_allowed_roots_asks_with_a_rule_to_add(work: Path) -> None:
    verdict = decide(policy(work), "Read", {"file_path": "/etc/hosts"})
    assert verdict.decision == "ask"
    assert '"Read(//etc/hosts)"' in verdict.reason
    assert decide(policy(work, allow=["Read(//etc/**)"]), "Read", {"file_path": "/etc/hosts"}).decision == "allow"


def test_relative_and_home_paths_resolve_before_matching(work: Path) -> None:
    home = work.parent / "home"
    p = policy(work, deny=["Read(~/.ssh/**)", "Edit(//etc/**)"], mode="bypassPermissions")
    assert decide(p, "Read", {"file_path": "~/.ssh/id_rsa"}).decision == "deny"
    assert decide(p, "Read", {"file_path": str(home / ".ssh" / "id_rsa")}).decision == "deny"
    assert decide(p, "Read", {"file_path": "../home/.ssh/id_rsa"}).decision == "deny"
    assert decide(p, "Write", {"file_path": "/etc/../etc/passwd", "content": ""}).decision == "deny"


def test_project_root_anchors_single_slash_rules(work: Path, tmp_path: Path) -> None:
    p = policy(work / "src", deny=["Edit(/src/**)"], mode="bypassPermissions", project_root=work)
    assert decide(p, "Edit", {"file_path": "a.py"}).decision == "deny"
    assert policy(work, deny=["Edit(/src/**)"]).bases.project == work


def test_a_deny_rule_matches_a_symlink_by_its_target(work: Path) -> None:
    (work / "secrets").mkdir()
    (work / "alias").symlink_to(work / "secrets", target_is_directory=True)
    p = policy(work, deny=["Read(secrets/**)"])
    assert decide(p, "Read", {"file_path": "alias/key.pem"}).decision == "deny"


def test_an_allow_rule_must_cover_a_symlink_and_its_target(work: Path) -> None:
    (work / "docs").mkdir()
    (work / "docs" / "link.md").symlink_to(work / "src" / "a.py")
    p = policy(work, allow=["Edit(docs/**)"])
    assert decide(p, "Edit", {"file_path": "docs/link.md"}).decision == "ask"
    assert decide(p, "Edit", {"file_path": "docs/real.md"}).decision == "allow"


def test_read_rules_apply_to_glob_and_grep_search_roots(work: Path) -> None:
    p = policy(work, deny=["Read(src/**)"])
    assert decide(p, "Grep", {"pattern": "x", "path": "src"}).decision == "deny"
    assert decide(p, "Grep", {"pattern": "x", "path": "src/a.py"}).decision == "deny"
    assert decide(p, "Glob", {"pattern": "*.py", "path": "src"}).decision == "deny"
    assert decide(p, "Glob", {"pattern": "src/**/*.py"}).decision == "deny"
    assert decide(p, "Grep", {"pattern": "x"}).decision == "allow"  # a search above the denied folder
    assert decide(policy(work, deny=["Read"]), "Glob", {"pattern": "*"}).decision == "deny"


def test_webfetch_rules_match_the_domain(work: Path) -> None:
    p = policy(work, allow=["WebFetch(domain:docs.python.org)"], deny=["WebFetch(domain:*.evil.com)"])
    assert decide(p, "WebFetch", {"url": "https://docs.python.org/3/", "prompt": "p"}).decision == "allow"
    assert decide(p, "WebFetch", {"url": "https://python.org/", "prompt": "p"}).decision == "ask"
    assert decide(p, "WebFetch", {"url": "https://a.evil.com/", "prompt": "p"}).decision == "deny"
    verdict = decide(p, "WebFetch", {"url": "https://python.org/", "prompt": "p"})
    assert '"WebFetch(domain:python.org)"' in verdict.reason


def test_task_and_agent_rules_are_ignored_for_tool_calls(work: Path) -> None:
    p = policy(work, deny=["Task(Explore)", "Agent(Plan)"])
    assert decide(p, "Read", {"file_path": "a"}).decision == "allow"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("Read", {}),
        ("Write", {"file_path": 3}),
        ("Edit", {"file_path": ""}),
        ("Read", {"file_path": "a\0b"}),
        ("Bash", {"command": ["ls"]}),
        ("WebFetch", {"prompt": "p"}),
    ],
)
def test_arguments_that_cannot_be_checked_are_denied(work: Path, tool: str, arguments: dict[str, Any]) -> None:
    verdict = decide(policy(work, mode="bypassPermissions"), tool, arguments)
    assert verdict.decision == "deny"
    assert "Cannot check the permissions" in verdict.reason


# --- reasons -------------------------------------------------------------------------------------


def test_reasons_say_which_rule_decided(work: Path) -> None:
    verdict = decide(policy(work, deny=["Bash(rm *)"]), "Bash", {"command": "rm -rf build"})
    assert verdict == Verdict(
        "deny",
        'The Bash command `rm -rf build` is denied by "Bash(rm *)" in permissions.deny of settings.json.',
        "Bash(rm *)",
    )


def test_reasons_for_asking_say_how_to_allow(work: Path) -> None:
    verdict = decide(policy(work), "Write", {"file_path": "src/new.py", "content": ""})
    assert verdict.decision == "ask"
    assert verdict.rule is None
    assert '"Edit(./src/new.py)" to permissions.allow' in verdict.reason
    assert "--permission-mode acceptEdits" in verdict.reason


# --- an agent's permissionMode ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "definition", "expected"),
    [
        ("default", None, "default"),
        ("default", "acceptEdits", "acceptEdits"),  # as in Claude Code: the editor agent writes
        ("default", "plan", "plan"),
        ("default", "dontAsk", "dontAsk"),
        ("default", "bypassPermissions", "default"),  # a file never grants bypass
        ("dontAsk", "acceptEdits", "acceptEdits"),
        ("dontAsk", "default", "default"),
        ("dontAsk", "bypassPermissions", "dontAsk"),
        ("acceptEdits", "dontAsk", "acceptEdits"),  # a server in acceptEdits, plan or bypass keeps its mode
        ("acceptEdits", "plan", "acceptEdits"),
        ("bypassPermissions", "plan", "bypassPermissions"),
        ("plan", "bypassPermissions", "plan"),
        ("plan", "acceptEdits", "plan"),
        ("default", "auto", "default"),
        ("manual", "acceptEdits", "acceptEdits"),
    ],
)
def test_an_agents_permission_mode_follows_claude_codes_rule(
    server: str, definition: str | None, expected: str
) -> None:
    assert effective_mode(server, definition) == expected


# --- the agent's permission map ------------------------------------------------------------------


def test_the_agent_map_narrows_allow_to_ask_and_deny(work: Path) -> None:
    agent_map = {"*": "deny", "Grep": "allow", "Read": {"*": "allow", "*.env": "deny"}, "Glob": "ask"}
    p = policy(work, agent_map=agent_map)
    assert decide(p, "Grep", {"pattern": "x"}).decision == "allow"
    assert decide(p, "Read", {"file_path": "src/a.py"}).decision == "allow"
    verdict = decide(p, "Read", {"file_path": "config/.env"})
    assert verdict.decision == "deny"
    assert '"Read" > "*.env"' in verdict.reason
    assert decide(p, "Glob", {"pattern": "*"}).decision == "ask"
    assert decide(p, "TodoWrite", {"todos": []}).decision == "deny"


def test_the_agent_map_never_widens(work: Path) -> None:
    p = policy(work, agent_map={"*": "allow"}, deny=["Read(secret.txt)"])
    assert decide(p, "Bash", {"command": "make"}).decision == "ask"
    assert decide(p, "Write", {"file_path": "a", "content": ""}).decision == "ask"
    assert decide(p, "Read", {"file_path": "secret.txt"}).decision == "deny"
    assert (
        decide(policy(work, mode="plan", agent_map={"Write": "allow"}), "Write", {"file_path": "a"}).decision == "deny"
    )


def test_an_agent_map_ask_becomes_deny_in_dont_ask(work: Path) -> None:
    p = policy(work, mode="dontAsk", agent_map={"Read": "ask"})
    assert decide(p, "Read", {"file_path": "a"}).decision == "deny"


def test_agent_map_keys_by_specificity(work: Path) -> None:
    agent_map = {"edit": "ask", "Write": "deny", "mcp__github__*": "allow", "mcp__*": "deny", "bash": "deny"}
    p = policy(work, mode="bypassPermissions", agent_map=agent_map)
    assert decide(p, "Write", {"file_path": "a"}).decision == "deny"  # exact beats the Edit family
    assert decide(p, "Edit", {"file_path": "a"}).decision == "ask"  # names match in any case
    assert decide(p, "mcp__github__x", {}).decision == "allow"  # the longest glob wins
    assert decide(p, "mcp__slack__x", {}).decision == "deny"
    assert decide(p, "Bash", {"command": "ls"}).decision == "deny"
    assert decide(p, "Read", {"file_path": "a"}).decision == "allow"  # no entry: no narrowing


def test_agent_map_bash_patterns_apply_to_each_part(work: Path) -> None:
    agent_map = {"Bash": {"*": "ask", "git status": "allow", "git diff *": "allow", "rm *": "deny"}}
    p = policy(work, mode="bypassPermissions", agent_map=agent_map)
    assert decide(p, "Bash", {"command": "git status && git diff HEAD"}).decision == "allow"
    assert decide(p, "Bash", {"command": "git status && make"}).decision == "ask"
    assert decide(p, "Bash", {"command": "git status; sudo rm -rf /"}).decision == "deny"
    assert decide(p, "Bash", {"command": "echo 'open"}).decision == "deny"  # unparsable: the strictest entry


def test_agent_map_webfetch_keys(work: Path) -> None:
    agent_map = {"WebFetch": {"*": "deny", "domain:docs.python.org": "allow", "https://example.com/*": "ask"}}
    p = policy(work, mode="bypassPermissions", agent_map=agent_map)
    assert decide(p, "WebFetch", {"url": "https://docs.python.org/3/", "prompt": "p"}).decision == "allow"
    assert decide(p, "WebFetch", {"url": "https://example.com/a", "prompt": "p"}).decision == "ask"
    assert decide(p, "WebFetch", {"url": "https://evil.org/", "prompt": "p"}).decision == "deny"


def test_invalid_agent_map_values_count_as_deny_and_are_reported(work: Path) -> None:
    agent_map: dict[str, Any] = {"Read": "allowed", "Bash": {"git *": "yes", "!x": "deny"}, "Edit": {"!x": "deny"}}
    p = policy(work, mode="bypassPermissions", agent_map=agent_map)
    verdict = decide(p, "Read", {"file_path": "a"})
    assert verdict.decision == "deny"
    assert "invalid value" in verdict.reason
    assert decide(p, "Bash", {"command": "git log"}).decision == "deny"
    assert decide(p, "Edit", {"file_path": "a"}).decision == "deny"  # a broken pattern matches everything
    problems = agent_map_problems(agent_map)
    assert len(problems) == 3
    assert any("permission.Read" in problem for problem in problems)
    assert any("permission.Edit.!x" in problem and "compile" in problem for problem in problems)
    assert agent_map_problems({"*": "deny", "Read": {"*.env": "deny"}}) == ()
