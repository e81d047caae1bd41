"""Attack: Write, Edit or a shell redirection changes a file that a program outside the subagent's reach runs or
obeys later, in a mode that allows edits.

Before the fix only the settings files, `.claude/`, `.mcp.json`, `.git/config`, `.git/hooks` and
`.git/info/attributes` asked: in acceptEdits or bypassPermissions mode a subagent could write `CLAUDE.md` (the
host's own session obeys it), `.agents/agents/x.md` (a later nested Task loads it), `.git/commondir`,
`.vscode/tasks.json`, `.envrc`, a nested repository's `.git/config` or a bare repository's `config` unasked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide

GUARDED = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    "docs/CLAUDE.md",
    "AGENTS.md",
    ".agents/agents/x.md",
    ".git/commondir",
    ".git/HEAD",
    ".git/modules/sub/config",
    "vendor/lib/.git/config",
    "vendor.git/config",
    "vendor.git/hooks/post-checkout",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".idea/runConfigurations/x.xml",
    ".envrc",
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    ".devcontainer/devcontainer.json",
    ".cursor/mcp.json",
    ".gitmodules",
    ".claude/rules/style.md",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", "--bare", str(work / "vendor.git")], check=True)
    return work


@pytest.mark.parametrize("mode", ["acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("name", GUARDED)
def test_writing_a_guarded_file_asks_in_every_mode(project: Path, mode: str, name: str) -> None:
    policy = PermissionPolicy(cwd=project, mode=mode, rules=PermissionRules.of(allow=["Edit(**)", "Bash"]))
    path = str(project / name)
    write = decide(policy, "Write", {"file_path": path, "content": "planted"})
    edit = decide(policy, "Edit", {"file_path": path, "old_string": "a", "new_string": "b"})
    shell = decide(policy, "Bash", {"command": f"echo planted > {name}"})
    for verdict in (write, edit, shell):
        assert verdict.decision == "ask", (name, verdict)


def test_a_rule_that_names_the_file_lifts_it(project: Path) -> None:
    rules = PermissionRules.of(allow=["Edit(./CLAUDE.md)", "Edit(./.vscode/**)"])
    policy = PermissionPolicy(cwd=project, mode="acceptEdits", rules=rules)
    for name in ("CLAUDE.md", ".vscode/tasks.json"):
        assert decide(policy, "Write", {"file_path": str(project / name), "content": "x"}).decision == "allow"
    ordinary = decide(policy, "Write", {"file_path": str(project / "src" / "app.py"), "content": "x"})
    assert ordinary.decision == "allow"


def test_what_gits_configuration_runs_from_the_working_tree_asks(tmp_path: Path) -> None:
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    (work / "tools").mkdir()
    (work / "tools" / "watch.sh").write_text("#!/bin/sh\n")
    subprocess.run(["git", "-C", str(work), "config", "core.hooksPath", ".githooks"], check=True)
    subprocess.run(["git", "-C", str(work), "config", "core.fsmonitor", "./tools/watch.sh"], check=True)
    (work / ".githooks").mkdir()
    policy = PermissionPolicy(cwd=work, mode="bypassPermissions", rules=PermissionRules.of(allow=["Edit(**)"]))
    for name in (".githooks/pre-commit", "tools/watch.sh"):
        verdict = decide(policy, "Write", {"file_path": str(work / name), "content": "planted"})
        assert verdict.decision == "ask", (name, verdict)
    ordinary = decide(policy, "Write", {"file_path": str(work / "tools" / "other.sh"), "content": "fine"})
    assert ordinary.decision == "allow"
