"""Which hooks apply to a run: every settings file's `hooks` and the agent file's `hooks:`, minus what an
untrusted project brought, and as the managed policy's `disableAllHooks` / `allowManagedHooksOnly` allow."""

from __future__ import annotations

from dataclasses import dataclass

from ...config.claude_settings import REPOSITORY_LEVELS, ClaudeSettings, SettingsFile
from ...definitions import AgentDefinition
from .config import HookSet, parse_hooks


@dataclass(frozen=True, slots=True, kw_only=True)
class RunHookSet:
    hooks: HookSet
    problems: tuple[str, ...] = ()
    """Entries that could not be used, and hooks skipped for want of trust."""


def hooks_for_run(
    settings: ClaudeSettings,
    definition: AgentDefinition,
    *,
    project_trusted: bool,
    why_untrusted: str,
    agent_file_untrusted: str | None,
) -> RunHookSet:
    """The settings files' hooks (lowest level first), then the agent's own. `agent_file_untrusted` says why the
    agent file's own hooks may not run (its project is not trusted: `trust.untrusted_source`), None when they may."""
    files = _files_whose_hooks_count(settings)
    found = HookSet()
    problems: list[str] = []
    for file in files:
        if "hooks" not in file.data:
            continue
        if file.level in REPOSITORY_LEVELS and not project_trusted:
            problems.append(f"{file.path}: hooks skipped: {why_untrusted}")
            continue
        parsed = parse_hooks(file.data["hooks"], origin=str(file.path))
        found += parsed.hooks
        problems += parsed.problems
    if definition.hooks:
        origin = f"agent {definition.name}" + (f" ({definition.path})" if definition.path else "")
        if agent_file_untrusted is not None:
            problems.append(f"{origin}: hooks skipped: {agent_file_untrusted}")
        elif not _managed_only(settings) and not _all_disabled(settings):
            parsed = parse_hooks(definition.hooks, origin=origin, frontmatter=True)
            found += parsed.hooks
            problems += parsed.problems
    return RunHookSet(hooks=found, problems=tuple(problems))


def _files_whose_hooks_count(settings: ClaudeSettings) -> tuple[SettingsFile, ...]:
    """`disableAllHooks` in the managed policy turns every hook off; elsewhere it turns off all but the managed
    ones, as does the policy's `allowManagedHooksOnly`."""
    if any(file.data.get("disableAllHooks") is True for file in settings.at("managed")):
        return ()
    if _managed_only(settings) or _all_disabled(settings):
        return settings.at("managed")
    return settings.files


def _managed_only(settings: ClaudeSettings) -> bool:
    return any(file.data.get("allowManagedHooksOnly") is True for file in settings.at("managed"))


def _all_disabled(settings: ClaudeSettings) -> bool:
    return any(file.data.get("disableAllHooks") is True for file in settings.files)
