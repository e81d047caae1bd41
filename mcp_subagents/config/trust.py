"""Project trust: whether the hooks and MCP servers a project's own files bring may run.

A repository's `.claude/settings*.json`, `.claude/agents/` and `.mcp.json` can name commands to run. As in Claude
Code, they run only for a project the person trusted: one Claude Code recorded as trusted in its global state file
(`projects[<path>].hasTrustDialogAccepted` in `~/.claude.json`, for the folder itself or its git repository's
root), or one named by `--trust-project`. User, command-line and managed sources are always trusted.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from ..core.git import checkout_root


class ProjectTrust:
    """Answers "is this project trusted?"; the state file is read again only when it changes."""

    def __init__(self, config_file: Path | None, trusted: Iterable[Path] = ()) -> None:
        self.config_file = config_file
        self._named = tuple(_forms(folder) for folder in trusted)
        self._cache: tuple[tuple[int, int] | None, frozenset[str]] = (None, frozenset())

    def is_trusted(self, project: Path) -> bool:
        forms = _forms(project) if self._named else frozenset[str]()
        if any(named & forms for named in self._named):
            return True
        accepted = self._accepted()
        if not accepted:
            return False  # nothing to compare the folder and its repository with: spare their lookups
        candidates = set(forms or _forms(project))
        root = checkout_root(project)
        if root is not None:
            candidates |= _forms(root)
        return bool(accepted & candidates)

    def why_untrusted(self, project: Path) -> str:
        """How to trust the project, in one sentence (for the log, `agents list` and `agents validate`)."""
        where = self.config_file or Path("~/.claude.json")
        return (
            f"the project {project} is not trusted: open it once in Claude Code and accept the trust dialog, set "
            f'projects["{project}"].hasTrustDialogAccepted: true in {where}, or start mcp-subagents with '
            f"--trust-project {project}"
        )

    def _accepted(self) -> frozenset[str]:
        """The folders the state file marks as trusted."""
        if self.config_file is None:
            return frozenset()
        try:
            stat = os.stat(self.config_file)
        except OSError:
            return frozenset()
        signature = (stat.st_mtime_ns, stat.st_size)
        if self._cache[0] == signature:
            return self._cache[1]
        accepted = _read_accepted(self.config_file)
        self._cache = (signature, accepted)
        return accepted


def _read_accepted(path: Path) -> frozenset[str]:
    try:
        with open(path, encoding="utf-8") as file:
            data: object = json.load(file)
    except (OSError, ValueError):
        return frozenset()
    projects: object = cast("dict[str, Any]", data).get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return frozenset()
    entries = cast("dict[str, Any]", projects)
    return frozenset(
        os.path.normpath(folder)
        for folder, entry in entries.items()
        if isinstance(entry, dict) and cast("dict[str, Any]", entry).get("hasTrustDialogAccepted") is True
    )


def _forms(folder: Path) -> frozenset[str]:
    """The folder as written and with symlinks resolved: Claude Code records the path it was started in."""
    absolute = os.path.normpath(os.path.abspath(folder))
    return frozenset({absolute, os.path.realpath(absolute)})


def agent_file_project(path: Path) -> Path | None:
    """The project an agent file belongs to (`<project>/.claude/agents/...` or `<project>/.agents/agents/...`), or
    None for a file elsewhere (a user's or a plugin's)."""
    parts = path.absolute().parts
    for index in range(len(parts) - 2, 0, -1):
        if parts[index] == "agents" and parts[index - 1] in (".claude", ".agents"):
            return Path(*parts[: index - 1])
    return None


def untrusted_agent_file(trust: ProjectTrust) -> Callable[[Path], str | None]:
    """For `agents validate`: why a project agent file's hooks and servers would be skipped, or None."""

    def check(path: Path) -> str | None:
        project = agent_file_project(path)
        if project is None or trust.is_trusted(project):
            return None
        return trust.why_untrusted(project)

    return check
