"""Project trust: whether the hooks and MCP servers a project's own files bring may run.

A repository's `.claude/settings*.json`, `.claude/agents/` and `.mcp.json` can name commands to run. As in Claude
Code, they run only for a project the person trusted: one Claude Code recorded as trusted in its global state file
(`projects[<path>].hasTrustDialogAccepted` in `~/.claude.json`, for the folder itself or its git repository's
root), one named by `--trust-project`, or one the person chose to trust when this server asked (remembered in the
state directory: `trust_answers`). User, command-line and managed sources are always trusted.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, cast

from ..core.git import checkout_root
from .settings import Settings
from .trust_answers import TRUST_ANSWERS_FILE, TrustAnswer, TrustAnswers


def project_trust(settings: Settings) -> ProjectTrust:
    """The trust this server goes by: Claude Code's record, `--trust-project`, and the person's answers to this
    server's own question, remembered in the state directory."""
    answers = TrustAnswers(settings.state_dir / TRUST_ANSWERS_FILE)
    return ProjectTrust(settings.claude_config_file, settings.trust_projects, answers=answers)


class ProjectTrust:
    """Answers "is this project trusted?"; the state file is read again only when it changes."""

    def __init__(
        self, config_file: Path | None, trusted: Iterable[Path] = (), *, answers: TrustAnswers | None = None
    ) -> None:
        self.config_file = config_file
        self.answers = answers
        """What the person answered this server's trust question (None: no state directory to remember in)."""
        self._named = tuple(_forms(folder) for folder in trusted)
        self._cache: tuple[tuple[int, int] | None, frozenset[str]] = (None, frozenset())

    def is_trusted(self, project: Path) -> bool:
        forms = _forms(project) if self._named else frozenset[str]()
        if any(named & forms for named in self._named):
            return True
        accepted = self._accepted() | self._answered_yes()
        if not accepted:
            return False  # nothing to compare the folder and its repository with: spare their lookups
        candidates = set(forms or _forms(project))
        root = checkout_root(project)
        if root is not None:
            candidates |= _forms(root)
        return bool(accepted & candidates)

    def why_untrusted(self, project: Path) -> str:
        """How to trust the project, in one sentence (for the log, `agents list`, `agents validate` and a denial
        that trust would have spared): the three ways, and the person's own "no" when this server remembers one."""
        where = self.config_file or Path("~/.claude.json")
        said = self._refused(project)
        return (
            f"the project {project} is not trusted{said}: open it once in Claude Code and accept the trust dialog, "
            f'set projects["{project}"].hasTrustDialogAccepted: true in {where}, or start mcp-subagents with '
            f"--trust-project {project}"
        )

    def standing(self, project: Path) -> str:
        """Whether the project is trusted and what says so, in one sentence (for `agents list`)."""
        forms = _forms(project)
        if any(named & forms for named in self._named):
            return f"the project {project} is trusted: --trust-project names it"
        root = checkout_root(project)
        candidates = forms | (_forms(root) if root is not None else frozenset[str]())
        if self._accepted() & candidates:
            return f"the project {project} is trusted: Claude Code's record in {self.config_file} says so"
        if self.answers is not None and self._answered_yes() & candidates:
            return (
                f"the project {project} is trusted: you said so when this server asked; it remembers that in "
                f"{self.answers.path} (remove the folder's entry there to take it back)"
            )
        return self.why_untrusted(project)

    def answer(self, project: Path) -> TrustAnswer | None:
        """The person's remembered answer to this server's trust question about `project`, if any."""
        return None if self.answers is None else self.answers.get(project)

    def _refused(self, project: Path) -> str:
        """ " (you chose not to trust it ...)" when the person said no to this server's question; else ""."""
        answers = self.answers
        answer = None if answers is None else answers.get(project)
        if answers is None or answer is None or answer.trusted:
            return ""
        return f" ({_refusal(answer, answers)})"

    def _answered_yes(self) -> frozenset[str]:
        if self.answers is None:
            return frozenset()
        return frozenset(folder for folder, answer in self.answers.all().items() if answer.trusted)

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


def _refusal(answer: TrustAnswer, answers: TrustAnswers) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(answer.at))
    where = f" via {answer.via}" if answer.via else ""
    return (
        f"you chose not to trust it on {when}{where}; this server remembers that in {answers.path} and does not ask "
        "again until its entry there is removed"
    )


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
