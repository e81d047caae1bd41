"""Attack: evade a deny rule on `rm` by spelling the program another way or hiding it in another program.

Each command below ran `rm` while `Bash(rm *)` was denied and `Bash` as a whole was allowed, before the fix
(path programs, `bash -c --`, pipes and here-documents into a shell, `find -delete`/`-exec`, `env -S`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide

EVASIONS = [
    "/bin/rm -rf build",
    "/usr/bin/env rm -rf build",
    "./rm -rf build",
    "sudo /bin/rm -rf build",
    "bash -c -- 'rm -rf build'",
    "bash -x -c 'rm -rf build'",
    "bash -o posix -c 'rm -rf build'",
    "/bin/sh -ec 'rm -rf build'",
    "echo 'rm -rf build' | bash",
    "printf 'rm -rf build' | sh -s",
    "bash <<< 'rm -rf build'",
    "sh <<'EOF'\nrm -rf build\nEOF",
    "cat <<EOF | bash\nrm -rf build\nEOF",
    "find build -delete",
    "find . -name '*.o' -exec rm {} \\;",
    "find . -execdir /bin/rm -f {} +",
    "env -S 'rm -rf build'",
    "env --split-string='rm -rf build'",
    "busybox rm -rf build",
    "watch -n 1 'rm -rf build'",
    "xargs sh -c 'rm -rf build'",
]

SPELLINGS = ["\\rm -rf build", '"rm" -rf build', "'rm' -rf build", "command rm -rf build", "env rm -rf build",
             "nice rm -rf build", "nice -n 5 rm -rf build", "timeout 5 rm -rf build", "exec rm -rf build",
             "X=1 rm -rf build", "eval 'rm -rf build'", "xargs rm -rf < list", "nohup rm -rf build &"]  # fmt: skip


@pytest.mark.parametrize("command", EVASIONS + SPELLINGS)
def test_a_deny_rule_on_rm_sees_through(tmp_path: Path, command: str) -> None:
    rules = PermissionRules.of(allow=["Bash"], deny=["Bash(rm *)"])
    verdict = decide(PermissionPolicy(cwd=tmp_path, rules=rules), "Bash", {"command": command})
    assert verdict.decision == "deny", verdict
    assert "Bash(rm *)" in verdict.reason


@pytest.mark.parametrize(
    "command",
    ["bash -c 'ls'", "sh script.sh", "echo ls | sh", "eval ls", "exec ls", "xargs ls", "find . -exec ls {} ;"],
)
def test_a_command_hidden_in_another_program_is_not_allowed_by_the_inner_programs_rule(
    tmp_path: Path, command: str
) -> None:
    rules = PermissionRules.of(allow=["Bash(ls *)", "Bash(echo *)", "Bash(find *)"])
    verdict = decide(PermissionPolicy(cwd=tmp_path, rules=rules), "Bash", {"command": command})
    if command.startswith("find"):
        assert verdict.decision == "allow"  # the user allowed find with any arguments
    else:
        assert verdict.decision == "ask", verdict


def test_what_a_shell_would_read_is_not_mistaken_for_other_commands(tmp_path: Path) -> None:
    rules = PermissionRules.of(allow=["Bash"], deny=["Bash(rm *)"])
    check = PermissionPolicy(cwd=tmp_path, rules=rules)
    assert decide(check, "Bash", {"command": "echo 'rm -rf build' | grep rm"}).decision == "allow"
    assert decide(check, "Bash", {"command": "cat <<'EOF' > notes.txt\nrm -rf build\nEOF"}).decision == "allow"
    assert decide(check, "Bash", {"command": "bash script.sh"}).decision == "allow"
