"""Where the runtime reads from: Claude Code's settings files for the server's flags, and the agent definition sources
(the command line's `agents list` reads the same)."""

from __future__ import annotations

from ..config.claude_settings import ClaudeSettings, ClaudeSettingsFiles, SettingsLocations
from ..config.settings import Settings
from ..core.errors import ConfigError
from ..definitions import DefinitionSources, builtin_agents_dir


def settings_locations(settings: Settings) -> SettingsLocations:
    """Where Claude Code's settings files are for these flags: the user's, the project's, `--settings`, and the
    managed policy (`--policy-file`, else its default location)."""
    return SettingsLocations(
        user=settings.user_settings_file,
        project_root=settings.working_directory,
        flag=settings.settings_file,
        managed=settings.policy_file or settings.managed_settings_file,
        managed_named=settings.policy_file is not None,
        sources=tuple(level for level in ("user", "project", "local") if level in settings.setting_sources),
    )


def definition_sources(settings: Settings, settings_files: ClaudeSettingsFiles | None = None) -> DefinitionSources:
    return DefinitionSources(
        builtin_dir=builtin_agents_dir(),
        plugin_dirs=settings.plugin_dirs,
        user_dir=settings.user_agents_dir,
        project_root=settings.working_directory,
        extra_dirs=settings.agents_dirs,
        agents_json=settings.agents_json,
        settings_files=settings_files or ClaudeSettingsFiles(settings_locations(settings)),
    )


def check_settings_files(settings_files: ClaudeSettingsFiles) -> ClaudeSettings:
    """Read the settings files once at start: a file named by a flag that is missing, not a JSON object, or holds
    a rule that does not parse stops the server. Problems in files at default locations are the caller's to log.

    Raises:
        ConfigError: one line naming the flag, the file and the problem.
    """
    snapshot = settings_files.check()
    flagged = [file for file in snapshot.files if file.level == "flag"]
    if settings_files.locations.managed_named:
        flagged += [file for file in snapshot.at("managed") if file.path == settings_files.locations.managed]
    if flagged:
        from ..permissions.rules import rules_in_file  # the rule engine: only when a flag names a file

        for file in flagged:
            _, problems = rules_in_file(file)
            if problems:
                flag = "--settings" if file.level == "flag" else "--policy-file"
                raise ConfigError(f"{flag} {problems[0]}")
    return snapshot
