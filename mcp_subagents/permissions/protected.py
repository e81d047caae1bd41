"""Files a subagent never changes without a rule that names them: what programs outside its reach run or obey later.

The settings files of the hierarchy, the agent folders, the managed policy, and wherever they appear in a project
the names of `GUARDED_NAMES`: a whole git directory (`.git`, or a bare repository under another name), `.claude/`,
`.agents/`, `.mcp.json`, `CLAUDE.md`, editors' and direnv's files. A write there asks in every mode,
bypassPermissions and acceptEdits included, unless an `Edit(...)` allow rule matches the path and names it
(`Edit(./.claude/**)` does, `Edit(**)` does not): otherwise a subagent could widen its own permissions, plant agents
or instructions, or make the next "read-only" `git status` run its code. The Bash sandbox keeps the same names
read-only for the commands it confines (`sandbox.guarded`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .git_config import git_run_paths

GUARDED_NAMES: dict[str, str] = {
    ".git": "git's repository: its config and hooks make git run programs",
    ".gitmodules": "git's submodule list: it names repositories and paths git fetches into",
    ".gitconfig": "git's configuration",
    ".claude": "Claude Code's and this server's settings, agents, skills, hooks and rules",
    ".agents": "agent definitions this server and other hosts load",
    ".mcp.json": "the project's MCP servers, which hosts start",
    "CLAUDE.md": "instructions Claude Code obeys",
    "CLAUDE.local.md": "instructions Claude Code obeys",
    "AGENTS.md": "instructions other coding agents obey",
    ".cursor": "Cursor's rules and MCP servers",
    ".envrc": "direnv runs it on entering the folder",
    ".vscode": "VS Code's tasks (run on opening the folder) and settings (interpreters, terminals)",
    ".idea": "JetBrains IDEs' run configurations and startup tasks",
    ".devcontainer": "what a dev container runs when it is built",
    ".husky": "git hooks installed by husky",
    ".pre-commit-config.yaml": "commands pre-commit runs at every commit",
    ".bashrc": "a shell's start-up file",
    ".bash_profile": "a shell's start-up file",
    ".zshrc": "a shell's start-up file",
    ".zprofile": "a shell's start-up file",
    ".profile": "a shell's start-up file",
    ".ripgreprc": "ripgrep's configuration, which can name programs it runs",
}
"""Names guarded wherever they appear in a project, and why: what git, editors, direnv, shells, Claude Code and this
server run or obey later, outside the reach of any sandbox."""


@dataclass(frozen=True, slots=True)
class Protection:
    """Why a path is protected, and the name an allow rule has to mention to lift it."""

    what: str
    marker: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedPaths:
    files: tuple[str, ...] = ()
    """Absolute files: the settings files, the managed policy, `.mcp.json`, the scripts hooks run."""
    folders: tuple[str, ...] = ()
    """Absolute folders: the agent folders."""
    worktree: str | None = None
    """An isolated agent's git worktree (which lies in the repository's `.claude/worktrees/`): paths inside it are
    judged from its root, so its own `.claude/` and `.git` stay protected and the rest is ordinary work."""
    home: str = field(default_factory=lambda: os.path.expanduser("~"))
    """Where the person's own git configuration is read from (it can name programs in a working tree too)."""

    def protection(self, path: str) -> Protection | None:
        """Why `path` (absolute and normalized) is protected, or None."""
        for form in dict.fromkeys((path, _real(path))):
            found = self._protection(form)
            if found is not None:
                return found
        return None

    def _protection(self, path: str) -> Protection | None:
        parts = path.split("/")
        if self.worktree is not None and (path + "/").startswith(self.worktree.rstrip("/") + "/"):
            parts = ["", *path[len(self.worktree.rstrip("/")) :].split("/")[1:]]
        for part in parts[1:]:
            why = GUARDED_NAMES.get(part)
            if why is not None:
                return Protection(why, part)
        git_directory = _inside_git_directory(path)
        if git_directory is not None:
            return Protection(f"inside the git directory {git_directory}, which makes git run programs", ".git")
        configured = _named_by_git_configuration(path, self.home)
        if configured is not None:
            return Protection(
                f"named by git's configuration ({configured}), so git runs or reads it", os.path.basename(configured)
            )
        for file in self.files:
            if path == file:
                return Protection("a file this server reads or runs", os.path.basename(file))
        for folder in self.folders:
            if path == folder or path.startswith(folder.rstrip("/") + "/"):
                return Protection("an agent folder this server reads", os.path.basename(folder.rstrip("/")))
        return None


def _inside_git_directory(path: str) -> str | None:
    """The git directory (a bare repository, or a folder a `gitdir:` line names) that holds `path` under a name
    other than `.git`, if any: git obeys its `config` and `hooks` too."""
    folder = os.path.dirname(path)
    while folder not in ("/", ""):
        if is_git_directory(folder):
            return folder
        folder = os.path.dirname(folder)
    return None


def _named_by_git_configuration(path: str, home: str) -> str | None:
    """The file or folder holding `path` that the configuration of its repository (or the person's) makes git run
    or read: a hooks folder, an included file, a program (`git_config`)."""
    folder = os.path.dirname(path)
    while folder not in ("/", ""):
        entry = os.path.join(folder, ".git")
        if os.path.lexists(entry):
            git_dir = entry if os.path.isdir(entry) else _pointed_git_dir(entry)
            if git_dir is None:
                return None
            for named in git_run_paths(Path(git_dir), Path(folder), Path(home)):
                if path == str(named) or path.startswith(str(named).rstrip("/") + "/"):
                    return str(named)
            return None
        folder = os.path.dirname(folder)
    return None


def _pointed_git_dir(pointer: str) -> str | None:
    try:
        with open(pointer, encoding="utf-8", errors="replace") as file:
            line = file.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    return os.path.normpath(os.path.join(os.path.dirname(pointer), line[len("gitdir:") :].strip()))


def is_git_directory(folder: str) -> bool:
    """Whether `folder` is laid out as a git directory: a HEAD file with objects/ and refs/, or with a commondir."""
    return os.path.isfile(os.path.join(folder, "HEAD")) and (
        os.path.isfile(os.path.join(folder, "commondir"))
        or (os.path.isdir(os.path.join(folder, "objects")) and os.path.isdir(os.path.join(folder, "refs")))
    )


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path
