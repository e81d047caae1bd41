"""Attack: a subagent changes the configuration that governs it (settings files, agent folders, .mcp.json) or
makes git run its code (.git/config, .git/hooks), then benefits from it.

Before the fix, under acceptEdits (and bypassPermissions) each of these writes went through without asking."""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide
from mcp_subagents.permissions.protected import ProtectedPaths
from tests.support import RuleLists

FILE_WRITES = [
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".claude/agents/evil.md",
    ".claude/skills/x/SKILL.md",
    ".mcp.json",
    ".git/config",
    ".git/hooks/pre-commit",
    "sub/.git/hooks/post-checkout",
    "home/.claude/settings.json",
    "home/.claude/agents/evil.md",
    "elsewhere/my-settings.json",
    "agents-extra/evil.md",
]

BASH_WRITES = [
    "echo '{}' > .claude/settings.json",
    "printf x >> .git/config",
    "tee .claude/settings.local.json < /dev/null",
    "cp /tmp/x .git/hooks/pre-commit",
    "mv evil.md .claude/agents/",
    "sed -i 's/deny/allow/' .claude/settings.json",
    "cd .git && echo x > config",
    "cd .git/hooks; touch pre-push",
    "rm .mcp.json",
    "ln -sf /tmp/hook .git/hooks/pre-commit",
    "dd if=/tmp/x of=.git/config",
    "bash -c 'echo x > .git/config'",
    'sh -c "tee .claude/agents/e.md" <<< x',
    "echo 'echo x > .git/config' | sh",
    "find . -name x -exec cp {} .claude/agents/ \\;",
    "/bin/cp x .mcp.json",
    "git status > .git/hooks/post-merge",
    "echo x >| .claude/settings.json",
    "echo x &> .git/config",
]


def policy(work: Path, mode: str, **rules: Unpack[RuleLists]) -> PermissionPolicy:
    protected = ProtectedPaths(
        files=(str(work / "elsewhere" / "my-settings.json"),), folders=(str(work / "agents-extra"),)
    )
    return PermissionPolicy(
        cwd=work, mode=mode, rules=PermissionRules.of(**rules), home=work / "home", protected=protected
    )


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions", "default"])
@pytest.mark.parametrize("path", FILE_WRITES)
def test_write_and_edit_never_change_protected_files_on_their_own(tmp_path: Path, mode: str, path: str) -> None:
    for tool in ("Write", "Edit"):
        verdict = decide(policy(tmp_path, mode, allow=["Edit(**)"]), tool, {"file_path": str(tmp_path / path)})
        assert verdict.decision == "ask", (tool, verdict)
        assert "No mode lets a subagent change it" in verdict.reason


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("command", BASH_WRITES)
def test_bash_never_changes_protected_files_on_its_own(tmp_path: Path, mode: str, command: str) -> None:
    verdict = decide(policy(tmp_path, mode, allow=["Bash", "Edit"]), "Bash", {"command": command})
    assert verdict.decision == "ask", verdict


def test_dont_ask_and_background_runs_deny_it(tmp_path: Path) -> None:
    verdict = decide(policy(tmp_path, "dontAsk"), "Write", {"file_path": str(tmp_path / ".git" / "config")})
    assert verdict.decision == "deny"


def test_a_symlink_to_a_protected_file_is_the_protected_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (tmp_path / "innocent.txt").symlink_to(tmp_path / ".git" / "config")
    verdict = decide(policy(tmp_path, "bypassPermissions"), "Write", {"file_path": "innocent.txt"})
    assert verdict.decision == "ask"


def test_an_allow_rule_that_names_the_path_lifts_it(tmp_path: Path) -> None:
    named = policy(tmp_path, "acceptEdits", allow=["Edit(./.claude/agents/**)"])
    assert decide(named, "Write", {"file_path": ".claude/agents/new.md"}).decision == "allow"
    assert decide(named, "Write", {"file_path": ".claude/settings.json"}).decision == "ask"
    assert decide(named, "Bash", {"command": "cp a.md .claude/agents/"}).decision == "ask"  # cp itself still asks
    bash_named = policy(tmp_path, "bypassPermissions", allow=["Edit(/.git/hooks/**)"])
    assert decide(bash_named, "Bash", {"command": "cp hook .git/hooks/pre-commit"}).decision == "allow"


def test_ordinary_files_and_reads_are_untouched(tmp_path: Path) -> None:
    p = policy(tmp_path, "acceptEdits")
    assert decide(p, "Write", {"file_path": "src/claude.py"}).decision == "allow"
    assert decide(p, "Write", {"file_path": ".github/workflows/ci.yml"}).decision == "allow"
    assert decide(p, "Write", {"file_path": ".git-blame-ignore-revs"}).decision == "allow"
    assert decide(p, "Read", {"file_path": ".claude/settings.json"}).decision == "allow"
    assert decide(p, "Bash", {"command": "cat .git/config && git status"}).decision == "allow"
