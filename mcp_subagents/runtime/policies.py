"""The permission policy of each run: Claude Code's settings hierarchy as it stands for the run's project (without
what an untrusted project's own files grant), the agent file's mode and map, and what no mode lets a subagent
change. Tasks launched together share one: each is kept while nothing it depends on changed."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config.claude_settings import ClaudeSettings, ClaudeSettingsFiles
from ..config.settings import Settings
from ..config.trust import ProjectTrust
from ..core.state import EARLY_ANSWERS_FILE
from ..definitions import AgentDefinition
from ..definitions.trust import untrusted_source
from ..permissions import MODES, PermissionPolicy, effective_mode, normalize_mode, rules_from_settings
from ..permissions.protected import ProtectedPaths
from ..permissions.rules import PermissionRules

if TYPE_CHECKING:
    from .extensions import RunPlace

KEPT = 64
"""Policies (and settings snapshots) kept for reuse: more than a host launches at once."""


class RunPolicies:
    def __init__(
        self,
        settings: Settings,
        settings_files: ClaudeSettingsFiles,
        trust: ProjectTrust,
        *,
        home: Path,
        warn_once: Callable[[str], None],
    ) -> None:
        self._settings = settings
        self._files = settings_files
        self._trust = trust
        self._home = home
        self._warn_once = warn_once
        self._rules: tuple[ClaudeSettings, PermissionRules] | None = None
        self._untrusted: tuple[ClaudeSettings, ClaudeSettings] | None = None
        """The last snapshot loaded for an untrusted project, and what a run obeys of it."""
        self._policies: dict[tuple[object, ...], tuple[ClaudeSettings, AgentDefinition, PermissionPolicy]] = {}

    def run_settings(self, project: Path) -> ClaudeSettings:
        """The settings a run in `project` obeys: the files as they are now, and for a project the person has not
        trusted, without what its own files grant (`ClaudeSettings.untrusted`). The same object while neither the
        files nor the trust changed, so what is derived from it is reused."""
        loaded = self._files.load(project)
        if self._trust.is_trusted(project):
            return loaded
        why = self._trust.why_untrusted(project)
        kept = self._untrusted
        if kept is None or kept[0] is not loaded or kept[1].why_withheld not in ("", why):
            kept = (loaded, loaded.untrusted(why))
            self._untrusted = kept
        return kept[1]

    def project_settings(self, project: Path) -> ClaudeSettings:
        """The settings files of `project` as they are, trusted or not (for the trust question's list)."""
        return self._files.load(project)

    def additional_directories(self, claude_settings: ClaudeSettings, project: Path) -> list[Path]:
        """`permissions.additionalDirectories`: folders file tools may use besides the working directory."""
        home = self._home
        found: list[Path] = []
        for entry, file in claude_settings.additional_directories:
            raw = str(home) + entry[1:] if entry == "~" or entry.startswith("~/") else entry
            folder = (project / raw).resolve()
            if folder.is_dir():
                found.append(folder)
            else:
                self._warn_once(f"{file.path}: permissions.additionalDirectories lists {entry}, not a folder; skipped")
        return found

    def agent_mode(self, definition: AgentDefinition, claude_settings: ClaudeSettings, project: Path) -> str:
        """The permission mode the agent runs in: the server's, narrowed (or widened, by Claude Code's rule) by the
        file's. A file of a project nobody trusted may narrow it only."""
        default_mode = claude_settings.default_mode
        server_mode = normalize_mode(self._settings.permission_mode or (default_mode[0] if default_mode else None))
        mode = effective_mode(server_mode, definition.permission_mode)
        untrusted = untrusted_source(self._trust, definition, project)
        if untrusted is None or MODES.index(mode) <= MODES.index(server_mode):
            return mode
        self._warn_once(
            f"agent {definition.name} ({definition.path}): permissionMode: {definition.permission_mode} is ignored "
            f"and it runs in {server_mode} mode: a project's agent file may only narrow the mode, and "
            f"{self._trust.why_untrusted(untrusted)}"
        )
        return server_mode

    def policy(
        self,
        definition: AgentDefinition,
        place: RunPlace,
        roots: tuple[Path, ...],
        claude_settings: ClaudeSettings,
        *,
        extra_allow: tuple[str, ...] = (),
        hook_files: tuple[Path, ...] = (),
    ) -> PermissionPolicy:
        untrusted = untrusted_source(self._trust, definition, place.project)  # the file's mode counts once trusted
        key = (id(claude_settings), id(definition), place, roots, extra_allow, hook_files, untrusted)
        kept = self._policies.get(key)
        if kept is not None and kept[0] is claude_settings and kept[1] is definition:
            return kept[2]
        policy = self._new_policy(definition, place, roots, claude_settings, extra_allow, hook_files)
        if len(self._policies) >= KEPT:
            self._policies.clear()
        self._policies[key] = (claude_settings, definition, policy)
        return policy

    def _new_policy(
        self,
        definition: AgentDefinition,
        place: RunPlace,
        roots: tuple[Path, ...],
        claude_settings: ClaudeSettings,
        extra_allow: tuple[str, ...],
        hook_files: tuple[Path, ...],
    ) -> PermissionPolicy:
        if self._rules is None or self._rules[0] is not claude_settings:
            self._rules = (claude_settings, rules_from_settings(claude_settings))
        rules = self._rules[1]
        if extra_allow:  # the agent's own memory folder, which it may always read and write
            memory = PermissionRules.of(allow=extra_allow, source="the agent's memory folder")
            rules = replace(rules, allow=rules.allow + memory.allow)
        for problem in (*claude_settings.problems, *rules.errors):
            self._warn_once(f"settings file skipped or partly ignored: {problem}")
        return PermissionPolicy(
            cwd=place.cwd,
            mode=self.agent_mode(definition, claude_settings, place.project),
            rules=rules,
            agent_map=definition.permission,
            roots=roots,
            project_root=place.inside_worktree or self._settings.working_directory,
            protected=self._protected(place, hook_files),
        )

    def _protected(self, place: RunPlace, hook_files: tuple[Path, ...]) -> ProtectedPaths:
        worktree = place.inside_worktree
        files = (*self._files.locations.paths(place.project), place.project / ".mcp.json", *hook_files)
        if self._trust.answers is not None:  # a subagent that wrote it could trust a project in the person's place
            files = (*files, self._trust.answers.path)
        # ...or put words of its own in the tool list the host's model reads at the next start
        files = (*files, self._settings.state_dir / EARLY_ANSWERS_FILE)
        return ProtectedPaths(
            files=tuple(os.path.abspath(path) for path in files),
            # A folder holding the whole project (`--agents-dir .`) cannot be kept from every write.
            folders=tuple(str(folder) for folder in self._agent_folders() if not place.cwd.is_relative_to(folder)),
            worktree=str(worktree) if worktree is not None else None,
            home=str(self._home),
        )

    def _agent_folders(self) -> list[Path]:
        settings = self._settings
        folders = [*settings.agents_dirs, *settings.plugin_dirs]
        if settings.user_agents_dir is not None:
            folders.append(settings.user_agents_dir)
        managed = self._files.locations.managed
        if managed is not None:
            folders.append(managed.parent / "managed-settings.d")
        return [Path(os.path.abspath(folder)) for folder in folders]
