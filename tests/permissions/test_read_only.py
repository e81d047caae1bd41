"""The read-only classifier against a table of commands, ordinary and hostile."""

from __future__ import annotations

from pathlib import Path
from typing import Unpack

import pytest

from mcp_subagents.permissions import PermissionPolicy, PermissionRules, decide
from mcp_subagents.permissions.bash import split_command
from mcp_subagents.permissions.read_only import Reads, read_only
from tests.support import RuleLists


def classify(command: str) -> list[Reads | None]:
    return [read_only(piece) for piece in split_command(command)]


READ_ONLY = [
    "ls", "ls -la src", "cat README.md", "head -n 20 a.py", "head -20 a.py", "tail -f log.txt", "wc -l *.py",
    "grep -rn TODO src", "grep -n 'def .*:$' a.py", 'grep -n "foo$" a.py', "egrep -i 'a|b' x", "rg pattern",
    "rg -t py -e foo src", "find . -name '*.py'", "find src -type f -newer a.py -print", "find -H . -maxdepth 2",
    "git status", "git status --short", "git log --oneline -5", "git diff HEAD~1 -- src", "git show HEAD:README.md",
    "git branch", "git branch -a", "git branch --list 'feat*'", "git branch --show-current", "git tag -l 'v1*'",
    "git tag", "git -C sub log", "git --no-pager log", "git config --get user.name", "git config list",
    "git remote -v", "git stash list", "git worktree list", "git rev-parse HEAD", "git blame a.py",
    "git ls-files", "git reflog", "wc", "pwd", "echo hello world", "echo 'a && b'", "which python3", "file a.bin",
    "stat a.py", "du -sh .", "df -h", "sort a.txt", "sort -k2 -t, a.csv", "uniq a.txt", "cut -d: -f1 /dev/null",
    "tr a-z A-Z", "jq .name package.json", "jq -r '.deps | keys[]' package.json", "tree -L 2", "date",
    "date -u +%s", "sed -n '1,20p' a.py", "sed -n '/start/,/end/p' a.txt", "sed 's/foo/bar/g' a.txt",
    "sed -e 's|a|b|' -e '5q' a.txt", "sed -n '$p' a.txt", "diff a.txt b.txt", "cmp a b", "basename /a/b.c",
    "test -f a.py", "[ -d src ]", "true", "LC_ALL=C sort a.txt", "time ls", "nice -n 5 cat a", "timeout 5 cat a",
    "command -v git", "cd src", "cat < a.txt", "grep foo <<< 'some text'", "uname -a", "id -u", "seq 1 10",
    "ls 2>/dev/null", "cat a.txt 2>&1", "printf '%s\\n' a b", "xxd a.bin", "base64 a.bin",
]  # fmt: skip


@pytest.mark.parametrize("command", READ_ONLY)
def test_commands_that_only_read(command: str) -> None:
    assert all(reads is not None for reads in classify(command)), command


NOT_READ_ONLY = [
    # writes
    "touch a", "rm a", "mv a b", "cp a b", "mkdir x", "tee out.txt", "echo hi > out.txt", "cat a >> b",
    "ls > listing.txt", "sed -i 's/a/b/' f", "sed -i.bak 's/a/b/' f", "sed --in-place 's/a/b/' f",
    "sed 's/a/b/w out.txt' f", "sed -n 'w out.txt' f", "sed '1e id' f", "sed 's/a/id/e' f", "sed 'r /etc/passwd' f",
    "sed -f script.sed f", "sort -o out.txt a", "sort --output=out.txt a", "sort --out=x a", "sort -uo out a",
    "sort --compress-program=sh a", "uniq in.txt out.txt", "tree -o out.txt", "file -C -m magic",
    "xxd -r dump out.bin", "date -s 2020-01-01", "hostname evil", "printf -v x '%s' y", "base64 -d a b",
    "git branch newbranch", "git branch -d old", "git branch -D old", "git branch -m a b", "git tag v1",
    "git tag -d v1", "git config user.name x", "git config --unset user.name", "git stash", "git stash pop",
    "git remote add o url", "git worktree add ../x", "git reflog expire --all", "git commit -m x", "git push",
    "git checkout .", "git log --output=out.txt", "git diff --out=x", "git diff --ext-diff", "git diff --no-index a b",
    "git grep -O foo", "git -c core.pager=sh log", "git --exec-path=/tmp log", "git --git-dir=/x log",
    "git -c alias.x='!sh' x", "wc --files0-from=list", "du --files0-from=list",
    # runs other code
    "find . -exec rm {} ;", "find . -execdir sh -c x ;", "find . -delete", "find . -fprint out", "find . -ok rm {} ;",
    "rg --pre ./decode pattern", "rg --pre=sh x", "jq -f prog.jq data.json", "jq --rawfile x /etc/passwd .",
    "jq -n env", "jq '$ENV.HOME' x", "test -v 'a[$(touch x)]'", "[ 'a[$(id)]' -eq 1 ]", "xargs cat", "awk '{print}' f",
    "bash -c ls", "sh script.sh", "python3 -c 'print(1)'", "node x.js", "make", "npm test", "env ls", "sudo ls",
    "exec ls", "eval ls", "./ls", "/tmp/ls", "watch ls", "less a.txt", "vim a.txt", "exit 3",
    # the shell changes the words
    "cat $FILE", 'cat "$FILE"', "ls $(pwd)", "ls `pwd`", "cat a{b,c}", "cat {a..z}", "echo $((1+2))",
    "cat <(ls)", "cat < $FILE", "grep foo <<< \"$(id)\"", "$CMD", "${CMD} x", "ls ~root",
    # variables that change what runs
    "PATH=/tmp ls", "LD_PRELOAD=/tmp/x.so cat a", "GIT_PAGER=sh git log", "PAGER=sh git log", "BASH_ENV=x ls",
    "PATH=/tmp", "IFS=x ls", "GIT_DIR=/x git status",
    # changing directory to somewhere unknown
    "cd", "cd -", "popd", "cd $HOME",
]  # fmt: skip


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_commands_that_write_or_run_other_code_or_cannot_be_known(command: str) -> None:
    assert any(reads is None for reads in classify(command)), command


def test_pipes_and_chains_are_read_only_when_every_part_is() -> None:
    assert all(classify("git log --oneline | head -5 && git status | grep modified"))
    assert not all(classify("cat a.txt | sh"))
    assert not all(classify("ls && rm -rf build"))


@pytest.mark.parametrize(
    ("command", "files", "trees"),
    [
        ("cat a.txt b.txt", ("a.txt", "b.txt"), ()),
        ("grep -n foo a.py", ("a.py",), ()),
        ("grep -e foo -e bar a.py b.py", ("a.py", "b.py"), ()),
        ("grep -r foo src lib", ("src", "lib"), ("src", "lib")),
        ("grep -r foo", (), (".",)),
        ("grep --directories=recurse foo src", ("src",), ("src",)),
        ("rg foo", (), (".",)),
        ("rg -e foo src", ("src",), ("src",)),
        ("find src -name x", ("src",), ()),
        ("find", (".",), ()),
        ("sed -n 1p a.txt", ("a.txt",), ()),
        ("jq . a.json b.json", ("a.json", "b.json"), ()),
        ("git -C ../other log", ("../other",), ()),
        ("git show HEAD~2:src/app.py", ("src/app.py",), ()),
        ("git grep -n TODO", (), (".",)),
        ("head -n 5 -- -weird.txt", ("-weird.txt",), ()),
        ("sort -k 2 a.txt < b.txt", ("b.txt", "a.txt"), ()),
        ("echo a b c", (), ()),
        ("diff -r --no-dereference a b", ("a", "b"), ("a", "b")),
    ],
)
def test_what_a_read_only_command_reads(command: str, files: tuple[str, ...], trees: tuple[str, ...]) -> None:
    [reads] = classify(command)
    assert reads is not None and (reads.files, reads.trees) == (files, trees)


def test_cd_says_where_it_goes() -> None:
    [reads] = classify("cd ../x")
    assert reads == Reads(files=("../x",), moves_to="../x")


# --- as the permission check uses it ---------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "conf").mkdir()
    (tmp_path / "outside").mkdir()
    (work / ".env").write_text("TOKEN=1\n", encoding="utf-8")
    (work / "sub" / ".env").write_text("TOKEN=2\n", encoding="utf-8")
    (work / "conf" / "secret.txt").write_text("x\n", encoding="utf-8")
    (work / "conf" / "plain.txt").write_text("x\n", encoding="utf-8")
    (work / "link-out").symlink_to(tmp_path / "outside", target_is_directory=True)
    return work


def decision(project: Path, command: str, *, mode: str = "default", **rules: Unpack[RuleLists]) -> str:
    policy = PermissionPolicy(cwd=project, mode=mode, rules=PermissionRules.of(**rules), home=project.parent / "home")
    return decide(policy, "Bash", {"command": command}).decision


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk", "plan"])
def test_read_only_commands_inside_the_project_run_in_every_mode(project: Path, mode: str) -> None:
    for command in ("ls -la", "git status", "cat conf/plain.txt | grep x | wc -l", "find . -name '*.txt'"):
        assert decision(project, command, mode=mode) == "allow", command


@pytest.mark.parametrize(
    "command", ["cat /etc/passwd", "ls ~/", "cat link-out/notes", "cd /etc && cat passwd", "grep -r x ../outside"]
)
def test_reading_outside_the_allowed_directories_still_asks(project: Path, command: str) -> None:
    assert decision(project, command) == "ask"
    assert decision(project, command, mode="dontAsk") == "deny"


def test_a_read_allow_rule_covers_reading_outside(project: Path) -> None:
    assert decision(project, "cat /etc/hostname", allow=["Read(//etc/**)"]) == "allow"


@pytest.mark.parametrize(
    "command",
    ["cat .env", "head -1 sub/.env", "cd sub && cat .env", "cat conf/*", "grep TOKEN .env", "sed -n 1p .env",
     "cat < .env", "git -C sub status && cat sub/.env", "git show HEAD:.env"],
)  # fmt: skip
def test_a_read_deny_rule_denies_a_command_that_names_the_file(project: Path, command: str) -> None:
    rules: RuleLists = {"deny": ["Read(**/.env)", "Read(conf/secret.txt)"], "allow": ["Bash(cat *)", "Bash(head *)"]}
    assert decision(project, command, **rules) == "deny", command


@pytest.mark.parametrize("command", ["grep -r TOKEN .", "rg TOKEN", "grep -r TOKEN sub", "rg TOKEN conf"])
def test_a_search_through_a_folder_a_read_deny_rule_reaches_into_asks(project: Path, command: str) -> None:
    assert decision(project, command) == "allow"
    assert decision(project, command, deny=["Read(**/.env)", "Read(./conf/secret.txt)"]) == "ask"


def test_a_search_elsewhere_is_not_held_up_by_a_rule_for_another_folder(project: Path) -> None:
    assert decision(project, "rg TOKEN sub", deny=["Read(./conf/**)"]) == "allow"


def test_a_read_ask_rule_asks_even_in_bypass_mode(project: Path) -> None:
    assert decision(project, "cat conf/secret.txt", mode="bypassPermissions", ask=["Read(conf/secret.txt)"]) == "ask"
