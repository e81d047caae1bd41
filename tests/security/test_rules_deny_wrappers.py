"""Attack: evade a deny rule on `rm` through a program that runs the command it is given, or through a shell (or
`source`) reading what another command prints.

Before the fix each of these ran `rm` while `Bash(rm *)` was denied and `Bash` as a whole allowed: `flock` (with a
lock file, its options, or `-c`), `chrt`, `taskset`, `setpriv`, `prlimit`, `unshare`, `script -c`, `su -c`,
`runuser`, `systemd-run`, `strace`, `ltrace`, `parallel`, `nsenter`, `sg`, `chronic`, `caffeinate`, `stdbuf` with a
separate value; `bash < <(...)`, `source <(...)`, `. <(...)`, `bash <(...)`; and words that are a command
substitution whose output the command line shows (`$(echo rm) -rf build`, `eval "$(echo ...)"`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide
from tests.support import RuleLists

WRAPPED = [
    "flock /tmp/lock rm -rf build",
    "flock -n /tmp/lock rm -rf build",
    "flock -w 5 /tmp/lock rm -rf build",
    "flock --timeout 5 /tmp/lock rm -rf build",
    "flock -E 3 -x /tmp/lock rm -rf build",
    "flock /tmp/lock -c 'rm -rf build'",
    "flock -n /tmp/lock --command 'rm -rf build'",
    "flock /tmp/lock -c'rm -rf build'",
    "chrt -f 10 rm -rf build",
    "chrt 0 rm -rf build",
    "chrt --other 0 rm -rf build",
    "chrt -T 1000 -d 0 rm -rf build",
    "taskset 0x1 rm -rf build",
    "taskset -c 0,1 rm -rf build",
    "taskset -a 3 rm -rf build",
    "ionice -c 3 rm -rf build",
    "ionice -c3 -n7 rm -rf build",
    "ionice --class idle rm -rf build",
    "setpriv --reuid=1000 rm -rf build",
    "setpriv --reuid 1000 --regid 1000 --clear-groups rm -rf build",
    "setpriv --no-new-privs rm -rf build",
    "prlimit --nofile=100 rm -rf build",
    "prlimit -n100 rm -rf build",
    "unshare -r rm -rf build",
    "unshare --map-user 0 rm -rf build",
    "unshare -w /tmp rm -rf build",
    "script -qc 'rm -rf build' /dev/null",
    "script -q -c 'rm -rf build' out.log",
    "script --command 'rm -rf build'",
    "script out.log -c 'rm -rf build'",
    "su -c 'rm -rf build'",
    "su root -c 'rm -rf build'",
    "su -lc 'rm -rf build'",
    "su --command='rm -rf build' root",
    "su -s /bin/sh -c 'rm -rf build' nobody",
    "runuser -u nobody -- rm -rf build",
    "runuser -u nobody rm -rf build",
    "runuser nobody -c 'rm -rf build'",
    "systemd-run --user rm -rf build",
    "systemd-run -p Nice=5 --wait rm -rf build",
    "systemd-run --unit x --scope rm -rf build",
    "strace -f rm -rf build",
    "strace -e trace=file -o /dev/null rm -rf build",
    "strace -o '|rm -rf build' true",
    "ltrace rm -rf build",
    "ltrace -o /dev/null rm -rf build",
    "parallel rm -rf ::: build",
    "parallel 'rm -rf {}' ::: build",
    "parallel -j 2 rm -rf ::: build",
    "parallel ::: 'rm -rf build'",
    "nsenter -t 1 -m rm -rf build",
    "nsenter --target 1 --mount rm -rf build",
    "sg wheel -c 'rm -rf build'",
    "sg wheel rm -rf build",
    "stdbuf -oL rm -rf build",
    "stdbuf -o L rm -rf build",
    "stdbuf --output=L rm -rf build",
    "chronic rm -rf build",
    "chronic -e rm -rf build",
    "caffeinate -i rm -rf build",
    "caffeinate -t 60 rm -rf build",
    "doas rm -rf build",
    "doas -u root rm -rf build",
    "pkexec rm -rf build",
    "sudo --user=root rm -rf build",
    "sudo -u root -- rm -rf build",
    "chroot / rm -rf build",
    "fakeroot rm -rf build",
    "faketime '2020-01-01' rm -rf build",
    "eatmydata rm -rf build",
    "xvfb-run -a rm -rf build",
    "coproc rm -rf build",
    "xargs -i rm -rf {}",
    "trap 'rm -rf build' EXIT",
    "time -o /dev/null rm -rf build",
    "nice -n 5 ionice -c 3 flock /tmp/lock rm -rf build",
]
READ_FROM_ANOTHER_COMMAND = [
    "bash < <(echo rm -rf build)",
    "sh -s < <(echo 'rm -rf build')",
    "bash < <(printf 'rm -rf %s' build)",
    "bash <(echo rm -rf build)",
    "source <(echo rm -rf build)",
    ". <(echo 'rm -rf build')",
    "source <(printf '%s\\n' 'rm -rf build')",
    "source /dev/stdin <<< 'rm -rf build'",
    ". /dev/stdin < <(echo rm -rf build)",
    'bash <<< "$(echo rm -rf build)"',
    'eval "$(echo rm -rf build)"',
    "eval $(echo rm -rf build)",
    "$(echo rm) -rf build",
    "`echo rm` -rf build",
    'bash -c "$(echo rm -rf build)"',
    "printf '%s\\n' 'rm -rf build' | bash",
    "echo -e 'ls\\nrm -rf build' | sh",
    "source <(echo ls; echo rm -rf build)",
    "cat < <(echo rm -rf build) | bash",
]


def verdict(tmp_path: Path, command: str, **rules: Unpack[RuleLists]) -> str:
    return decide(
        PermissionPolicy(cwd=tmp_path, rules=PermissionRules.of(**rules)), "Bash", {"command": command}
    ).decision


@pytest.mark.parametrize("command", WRAPPED + READ_FROM_ANOTHER_COMMAND)
def test_a_deny_rule_on_rm_sees_the_command_inside(tmp_path: Path, command: str) -> None:
    rules = PermissionRules.of(allow=["Bash"], deny=["Bash(rm *)"])
    result = decide(PermissionPolicy(cwd=tmp_path, rules=rules), "Bash", {"command": command})
    assert result.decision == "deny", result
    assert "Bash(rm *)" in result.reason


@pytest.mark.parametrize("command", WRAPPED + READ_FROM_ANOTHER_COMMAND)
def test_an_ask_rule_on_rm_asks_for_it(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command, allow=["Bash"], ask=["Bash(rm *)"]) == "ask"


@pytest.mark.parametrize(
    "command",
    ["bash < <(echo ls)", "source <(echo ls)", ". <(echo ls)", "bash <(echo ls)", "flock /tmp/lock ls",
     "su -c ls", "script -qc ls /dev/null", "$(echo ls)", "eval \"$(echo ls)\"", "parallel ls ::: a"],
)  # fmt: skip
def test_what_runs_inside_is_never_allowed_by_a_rule_for_the_inner_program_nor_read_only(
    tmp_path: Path, command: str
) -> None:
    assert verdict(tmp_path, command, allow=["Bash(ls *)", "Bash(echo *)"]) == "ask"
    assert verdict(tmp_path, command) == "ask"


def test_ordinary_commands_are_not_mistaken_for_the_denied_one(tmp_path: Path) -> None:
    rules: RuleLists = {"allow": ["Bash"], "deny": ["Bash(rm *)"]}
    for command in ("echo rm | grep rm", "git commit -m 'rm stuff'", "timeout 60 pytest -k rm", "flock /tmp/lock ls",
                    "source <(echo ls)", "diff <(echo rm) <(echo ls)", "xargs -0 grep rm", "sudo -E git rm notes.txt",
                    "stdbuf -oL grep rm"):  # fmt: skip
        assert verdict(tmp_path, command, **rules) == "allow", command
