"""Attack: other spellings of the commands that "only read" but run code, follow links out of the project, or read
files their words do not show; with no sandbox, default and plan mode ran every one of them unasked.

Before the fix: git's `-O` pager attached or in a cluster, `--textconv`, `cat-file --filters`, `config --file`,
`blame --contents`; `grep -R`, `rg -L`, `find -L`, `du -L`, `tree -l`, `ls -RL`, `diff -r`; `--files0-from`,
`sha256sum -c`, `sort -T`; `ps e` (other processes' environment); `jq` modules; options with an optional value that
swallowed the file operand (`grep --color x ~/.ssh/id_rsa` read the key unchecked); and git run from a nested or
bare repository inside the project.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_subagents.permissions import PermissionPolicy, decide

GIT_RUNS_OR_READS_ELSEWHERE = [
    "git grep -O'touch x' spot",
    "git grep -Otouch spot",
    "git grep -nO'touch x' spot",
    "git grep -O 'touch x' spot",
    "git grep --open-files-in-pager='touch x' spot",
    "git grep --open-files-in-pager 'touch x' spot",
    "git grep --open='touch x' spot",
    "git grep --op spot",
    "git -c core.pager=x log",
    "git -ccore.pager=x log",
    "git --config-env=core.pager=V log",
    "git --exec-path=/tmp log",
    "git --git-dir=x status",
    "git --work-tree=/ status",
    "git --namespace=x log",
    "git --super-prefix=x/ status",
    "git --bare status",
    "GIT_DIR=x git status",
    "GIT_CONFIG_GLOBAL=x git status",
    "env GIT_DIR=x git status",
    "env GIT_PAGER=x git log",
    "git config --file x --get a",
    "git config -f x --get a",
    "git config --fi=x --get a",
    "git config --blob HEAD:x --get a",
    "git config --includes -l",
    "git config get --file=x a",
    "git config list --includes",
    "git blame --contents /etc/passwd notes.txt",
    "git blame --cont=x notes.txt",
    "git blame -S revs notes.txt",
    "git blame --ignore-revs-file x notes.txt",
    "git grep -f /etc/passwd",
    "git grep -wf x",
    "git grep --no-index spot",
    "git grep --no-i spot",
    "git grep --recurse-submodules spot",
    "git diff --textconv",
    "git log -p --textc",
    "git show --ext-diff",
    "git diff --ext",
    "git cat-file --filters HEAD:notes.txt",
    "git cat-file --textconv HEAD:notes.txt",
    "git log --output=x",
    "git diff --out=x",
    "git diff -Oorder",
    "git log -O order",
    "git ls-files -X ex",
    "git ls-files --exclude-from=x",
    "git diff --submodule=diff",
    "git help log",
    "git help -w log",
    "git -C 'sub*' status",
    "git reflog expire --all",
    "git reflog --all expire",
]
FOLLOWS_LINKS_OR_READS_LISTS = [
    "grep -R KEY .",
    "grep -rR KEY",
    "grep -Rn KEY docs",
    "grep --dereference-recursive KEY",
    "grep --deref KEY .",
    "rg -L KEY",
    "rg --follow KEY",
    "rg -uL KEY",
    "rg -zL KEY",
    "rg --pre cat KEY",
    "rg --search-zip KEY",
    "find -L .",
    "find -L . -name 'id_*'",
    "find . -follow",
    "find . -name x -follow",
    "du -L .",
    "du -aL",
    "du --dereference .",
    "du --deref .",
    "tree -l",
    "tree -al",
    "ls -RL",
    "ls -LR docs",
    "ls -L -R",
    "ls --dereference --recursive",
    "ls -lRL",
    "diff -r a b",
    "diff -ru a b",
    "diff --recursive a b",
    "diff -r --unified a b",
    "wc --files0-from=list",
    "wc --files0=list",
    "du --files0-from=list",
    "sort --files0-from=list",
    "cat --files0-from=x",
    "sha256sum -c list",
    "sha256sum --check list",
    "md5sum -c list",
    "b2sum --check list",
    "cksum -c list",
    "sort -T /etc x",
    "sort --temporary-directory=/etc x",
    "sort --random-source=/etc/passwd x",
    "sort --comp=sh x",
    "ps e",
    "ps aux e",
    "ps auxe",
    "ps eww",
    "strings @opts notes.txt",
    "file -f list",
    "tree -o out",
    "tree -R",
    "jq 'import \"x\" as x; .' notes.json",
    "jq 'include \"x\"; .' notes.json",
    "jq -L /tmp . notes.json",
    "jq -L/tmp . notes.json",
    "jq --argfile a /etc/passwd . notes.json",
    "jq '$__prog_args' x",
    "jq 'get_search_list' x",
    "jq 'input_filename' x",
]
SWALLOWED_OPERANDS = [
    "grep --color KEY ~/.ssh/id_ed25519",
    "grep --colour KEY ~/.ssh/id_ed25519",
    "uniq --group ~/.ssh/id_ed25519",
    "uniq --all-repeated ~/.ssh/id_ed25519",
    "diff --color ~/.ssh/id_ed25519 /dev/null",
    "df --output ~/.ssh/id_ed25519",
    "grep --dir=recurse KEY ~/.ssh",
    "grep -f ~/.ssh/id_ed25519 notes.txt",
    "du -X ~/.ssh/id_ed25519 .",
    "hexdump -f ~/.ssh/id_ed25519 notes.txt",
    "rg --ignore-file ~/.ssh/id_ed25519 KEY",
    "file -m ~/.ssh/id_ed25519 notes.txt",
]
STILL_READ_ONLY = [
    "ls",
    "ls -la",
    "ls -R",
    "ls -L notes.txt",
    "cat notes.txt",
    "grep -n secret notes.txt",
    "git status --short",
    "git status",
    "git log -5",
    "git log --oneline -5",
    "git log --follow notes.txt",
    "git diff --text",
    "git diff --no-ext-diff",
    "git blame --ignore-rev abc notes.txt",
    "git ls-files --exclude=x -o",
    "git rev-list --filter=blob:none HEAD",
    "git grep -n spot",
    "git show HEAD:notes.txt",
    "git -C . status",
    "grep -rn spot .",
    "grep -rn spot src",
    "grep --color=auto spot notes.txt",
    "rg spot",
    "rg -uu spot",
    "find . -name '*.py'",
    "find -H . -name x",
    "du -sh .",
    "tree -L 2",
    "diff notes.txt other.txt",
    "diff -r --no-dereference src src",
    "sha256sum notes.txt",
    "ps aux",
    "ps -ef",
    "jq .a notes.json",
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project that is a git repository, in a home with an SSH key, and a planted link to the key's folder."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("KEY\n", encoding="utf-8")
    work = home / "project"
    (work / "src").mkdir(parents=True)
    (work / ".git").mkdir()
    (work / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    for name in ("notes.txt", "other.txt", "notes.json"):
        (work / name).write_text("spot\n", encoding="utf-8")
    (work / "docs").symlink_to(home / ".ssh")
    return work


def decision(project: Path, command: str, mode: str = "default") -> str:
    policy = PermissionPolicy(cwd=project, mode=mode, home=project.parent)
    return decide(policy, "Bash", {"command": command}).decision


@pytest.mark.parametrize("command", GIT_RUNS_OR_READS_ELSEWHERE + FOLLOWS_LINKS_OR_READS_LISTS + SWALLOWED_OPERANDS)
def test_it_does_not_run_unasked_in_default_or_plan_mode(project: Path, command: str) -> None:
    assert decision(project, command) == "ask", command
    assert decision(project, command, "plan") == "deny", command


@pytest.mark.parametrize("command", STILL_READ_ONLY)
def test_ordinary_reads_still_run_unasked(project: Path, command: str) -> None:
    assert decision(project, command) == "allow", command
    assert decision(project, command, "plan") == "allow", command


def test_diff_compares_folders_only_when_it_does_not_follow_their_links(project: Path) -> None:
    assert decision(project, "diff notes.txt other.txt") == "allow"
    assert decision(project, "diff src docs") == "ask"
    assert decision(project, "diff . src") == "ask"
    assert decision(project, "diff --no-dereference . src") == "allow"


# --- where git finds its repository ---------------------------------------------------------------------------------


def bare_looking(folder: Path) -> None:
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (folder / "config").write_text("[core]\n\tfsmonitor = touch /tmp/pwned\n\tworktree = ..\n", encoding="utf-8")


@pytest.mark.parametrize(
    "command",
    [
        "git -C vendor.git status",
        "git -C vendor.git/refs log",
        "cd vendor.git && git status",
        "cd vendor.git; git log",
        "cd sub && git status",
        "git -C sub diff",
        "git -C sub/deeper status",
        "pushd sub && git status",
        "cd linked && git status",
        "git -C worktree status",
        "command cd sub && git status",
        "cd src && cd ../sub && git log",
        "(cd sub && git status)",
        "git -C src -C ../sub status",
        "git -C ~/project/sub status",
    ],
)
def test_git_run_where_it_finds_another_repository_needs_approval(project: Path, command: str) -> None:
    bare_looking(project / "vendor.git")
    (project / "sub" / ".git").mkdir(parents=True)
    (project / "sub" / "deeper").mkdir()
    (project / "linked").symlink_to(project / "sub")
    (project / "worktree").mkdir()
    (project / "worktree" / ".git").write_text("gitdir: ../vendor.git\n", encoding="utf-8")
    assert decision(project, command) == "ask", command
    assert decision(project, command, "plan") == "deny", command


def test_git_run_in_the_projects_own_repository_runs_unasked(project: Path) -> None:
    for command in ("git status", "cd src && git status", "git -C src log", "git -C .git log", "cd .git && git log"):
        assert decision(project, command) == "allow", command


def test_a_project_that_is_itself_a_bare_looking_folder_has_no_repository_to_trust(tmp_path: Path) -> None:
    work = tmp_path / "work"
    bare_looking(work)
    assert decision(work, "git status") == "ask"
    assert decision(work, "ls") == "allow"


def test_the_question_says_which_repository_and_suggests_the_exact_command(project: Path) -> None:
    bare_looking(project / "vendor.git")
    policy = PermissionPolicy(cwd=project, home=project.parent)
    verdict = decide(policy, "Bash", {"command": "git -C vendor.git status"})
    assert str(project / "vendor.git") in verdict.reason and "not the project's own" in verdict.reason
    assert '"Bash(git -C vendor.git status)"' in verdict.reason


def test_a_real_bare_repository_made_by_git_is_recognised(project: Path) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(project / "real.git")], check=True)
    assert decision(project, "git -C real.git status") == "ask"
