"""Files a subagent never changes without a rule that names them: the server's own configuration and git's.

The settings files of the hierarchy, the agent folders, every `.claude/` folder, `.mcp.json`, the managed policy,
and `.git/config` and `.git/hooks` (which make git run programs). A write there asks in every mode, bypassPermissions
and acceptEdits included, unless an `Edit(...)` allow rule matches the path and names it (`Edit(./.claude/**)` does,
`Edit(**)` does not): otherwise a subagent could widen its own permissions, plant agents, or make the next
"read-only" `git status` run its code.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_GIT_RUNS_CODE = (("config",), ("hooks",), ("info", "attributes"))
"""Paths inside `.git` that make git run programs."""


@dataclass(frozen=True, slots=True)
class Protection:
    """Why a path is protected, and the name an allow rule has to mention to lift it."""

    what: str
    marker: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtectedPaths:
    files: tuple[str, ...] = ()
    """Absolute files: the settings files, the managed policy, `.mcp.json`."""
    folders: tuple[str, ...] = ()
    """Absolute folders: the agent folders."""
    worktree: str | None = None
    """An isolated agent's git worktree (which lies in the repository's `.claude/worktrees/`): paths inside it are
    judged from its root, so its own `.claude/` and `.git` stay protected and the rest is ordinary work."""

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
        if ".claude" in parts[:-1] or parts[-1] == ".claude":
            return Protection("a Claude Code configuration folder (.claude)", ".claude")
        if parts[-1] == ".mcp.json":
            return Protection("the project's MCP server list (.mcp.json)", ".mcp.json")
        if ".git" in parts:
            inside = parts[len(parts) - 1 - parts[::-1].index(".git") + 1 :]
            if any(tuple(inside[: len(prefix)]) == prefix for prefix in _GIT_RUNS_CODE) or not inside:
                return Protection("git's configuration or hooks, which make git run programs", ".git")
        for file in self.files:
            if path == file:
                return Protection("a settings file this server reads", os.path.basename(file))
        for folder in self.folders:
            if path == folder or path.startswith(folder.rstrip("/") + "/"):
                return Protection("an agent folder this server reads", os.path.basename(folder.rstrip("/")))
        return None


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path
