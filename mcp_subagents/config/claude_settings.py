"""Claude Code's settings files, read as Claude Code reads them, and merged.

Levels, lowest precedence first: user (`~/.claude/settings.json`), project (`.claude/settings.json`), local
(`.claude/settings.local.json`), flag (`--settings FILE`), managed (`/etc/claude-code/managed-settings.json` on
Linux, `/Library/Application Support/ClaudeCode/managed-settings.json` on macOS, or `--policy-file`, plus the
`managed-settings.d/*.json` drop-ins beside the default file). Objects merge key by key, lists are joined
(so every level's permission rules count), and for any other value the higher level wins.

A file named by a flag must exist and be valid (`check()` raises at start); a broken file found in a default
location is reported and skipped. A file that breaks while the server runs keeps its last readable content, so a
policy's deny rules never silently vanish. Each file is read again only when its (mtime, size) changes.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from ..core.errors import ConfigError
from ..core.json_values import JsonObject, json_object

Level: TypeAlias = Literal["user", "project", "local", "flag", "managed"]
LEVELS: tuple[Level, ...] = ("user", "project", "local", "flag", "managed")
"""Lowest precedence first."""
SELECTABLE_LEVELS: tuple[Level, ...] = ("user", "project", "local")
"""The levels `--setting-sources` chooses among; flag and managed settings always load."""
REPOSITORY_LEVELS: frozenset[Level] = frozenset({"project", "local"})
"""Levels a repository controls: they may not grant bypassPermissions."""

_AGENT_RULE = re.compile(r"\s*(?:Task|Agent)\s*\(\s*(.+?)\s*\)\s*")
_Signature: TypeAlias = tuple[int, int]


def default_managed_settings_file() -> Path:
    """Where Claude Code looks for the managed policy on this platform."""
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode/managed-settings.json")
    if sys.platform == "win32":
        return Path("C:/Program Files/ClaudeCode/managed-settings.json")
    return Path("/etc/claude-code/managed-settings.json")


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """One settings file that loaded, with its level and its parsed content."""

    level: Level
    path: Path
    data: JsonObject


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """A settings file (or an entry in it) that could not be used."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Credit:
    """How commits and pull requests credit the agent, as the settings say: None keeps Claude Code's default line,
    "" leaves it out, other text replaces it."""

    commit: str | None = None
    pr: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaudeSettings:
    """The settings in effect: each file that loaded, their merge, and the values the server reads from them."""

    files: tuple[SettingsFile, ...] = ()
    """Lowest precedence first."""
    problems: tuple[SettingsProblem, ...] = ()
    merged: JsonObject = field(default_factory=lambda: {})
    withheld: tuple[SettingsFile, ...] = ()
    """For a project the person has not trusted (`untrusted`): each repository file's `permissions.allow` that was
    left out, as a file holding only that list. Nothing grants from here: a denial names the rule that would have
    allowed the call, and why it did not count."""
    why_withheld: str = ""
    """How to trust the project (`ProjectTrust.why_untrusted`), when something is withheld."""

    def at(self, level: Level) -> tuple[SettingsFile, ...]:
        return tuple(file for file in self.files if file.level == level)

    @property
    def permissions(self) -> JsonObject:
        return json_object(self.merged.get("permissions"))

    @property
    def default_mode(self) -> tuple[str, SettingsFile] | None:
        """`permissions.defaultMode` of the highest level that sets it, with the file it came from.

        As in Claude Code, project and local settings (which a repository controls) cannot grant
        bypassPermissions; their `defaultMode: bypassPermissions` is skipped (see `problems`).
        """
        for file in reversed(self.files):
            mode = json_object(file.data.get("permissions")).get("defaultMode")
            if not isinstance(mode, str):
                continue
            if mode == "bypassPermissions" and file.level in REPOSITORY_LEVELS:
                continue
            return mode, file
        return None

    @property
    def model(self) -> tuple[str, SettingsFile] | None:
        """`model` of the highest level that sets one (the person's main model in Claude Code), with its file."""
        for file in reversed(self.files):
            model = file.data.get("model")
            if isinstance(model, str) and model.strip():
                return model.strip(), file
        return None

    @property
    def additional_directories(self) -> tuple[tuple[str, SettingsFile], ...]:
        """`permissions.additionalDirectories` of every level, each entry with the file that lists it."""
        found: list[tuple[str, SettingsFile]] = []
        for file in self.files:
            entries = json_object(file.data.get("permissions")).get("additionalDirectories")
            for entry in cast("list[Any]", entries) if isinstance(entries, list) else ():
                if isinstance(entry, str) and entry.strip():
                    found.append((entry, file))
        return tuple(found)

    @property
    def bypass_disabled(self) -> bool:
        """`permissions.disableBypassPermissionsMode: "disable"` at any level: bypassPermissions acts as default."""
        return self._restrictive("disableBypassPermissionsMode", "disable")

    @property
    def deny_instead_of_prompting(self) -> bool:
        """`permissions.denyInsteadOfPrompting: true` at any level: what would ask is denied."""
        return self._restrictive("denyInsteadOfPrompting", True)

    @property
    def managed_rules_only(self) -> bool:
        """`allowManagedPermissionRulesOnly: true` in the managed policy: only its own rules apply."""
        return any(
            file.data.get("allowManagedPermissionRulesOnly") is True
            or json_object(file.data.get("permissions")).get("allowManagedPermissionRulesOnly") is True
            for file in self.at("managed")
        )

    @property
    def denied_agents(self) -> frozenset[str]:
        """Agent names removed by `Task(Name)` / `Agent(Name)` in any level's `permissions.deny`."""
        entries = self.permissions.get("deny")
        names: set[str] = set()
        for entry in cast("list[Any]", entries) if isinstance(entries, list) else ():
            match = _AGENT_RULE.fullmatch(entry) if isinstance(entry, str) else None
            if match is not None:
                names.add(match.group(1))
        return frozenset(names)

    @property
    def managed_agents(self) -> tuple[Any, str] | None:
        """The managed policy's `agents` (same shape as `--agents`) and the file they came from."""
        for file in reversed(self.at("managed")):
            if "agents" in file.data:
                return file.data["agents"], str(file.path)
        return None

    @property
    def credit(self) -> Credit:
        """`attribution` (`commit`, `pr`) where set, as Claude Code 2.1.328 reads it: it wins over the older
        `includeCoAuthoredBy`, whose `false` leaves out both lines."""
        attribution = self.merged.get("attribution")
        if isinstance(attribution, dict):
            given = cast("dict[str, Any]", attribution)
            commit, pr = given.get("commit"), given.get("pr")
            return Credit(commit=commit if isinstance(commit, str) else None, pr=pr if isinstance(pr, str) else None)
        if self.merged.get("includeCoAuthoredBy") is False:
            return Credit(commit="", pr="")
        return Credit()

    @property
    def sandbox(self) -> JsonObject:
        """The merged `sandbox` block, as written (Claude Code's sandbox settings)."""
        return json_object(self.merged.get("sandbox"))

    def _restrictive(self, key: str, value: object) -> bool:
        return any(json_object(file.data.get("permissions")).get(key) == value for file in self.files)

    def untrusted(self, why: str) -> ClaudeSettings:
        """These settings for a project the person has not trusted: what the repository's own files (project and
        local levels) grant is left out, so they can only confine more: `permissions.allow`,
        `permissions.additionalDirectories` and a `defaultMode` that widens (acceptEdits, bypassPermissions). Each
        file that loses something gets a problem naming it, with `why` (how to trust the project)."""
        files: list[SettingsFile] = []
        withheld: list[SettingsFile] = []
        problems = list(self.problems)
        for file in self.files:
            permissions = json_object(file.data.get("permissions"))
            granted = [key for key in _GRANTING_KEYS if key in permissions]
            if permissions.get("defaultMode") in _WIDENING_MODES:
                granted.append("defaultMode")
            if file.level not in REPOSITORY_LEVELS or not granted:
                files.append(file)
                continue
            kept = {key: value for key, value in permissions.items() if key not in granted}
            files.append(SettingsFile(file.level, file.path, {**file.data, "permissions": kept}))
            if "allow" in permissions:
                withheld.append(SettingsFile(file.level, file.path, {"permissions": {"allow": permissions["allow"]}}))
            listed = ", ".join(f"permissions.{key}" for key in granted)
            problems.append(SettingsProblem(str(file.path), f"{listed} ignored until the project is trusted: {why}"))
        return ClaudeSettings(
            files=tuple(files),
            problems=tuple(problems),
            merged=merge_settings(file.data for file in files),
            withheld=tuple(withheld),
            why_withheld=why if withheld else "",
        )


_GRANTING_KEYS = ("allow", "additionalDirectories")
_WIDENING_MODES = frozenset({"acceptEdits", "bypassPermissions"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SettingsLocations:
    """Where the settings files are. A None path is not read."""

    user: Path | None = None
    project_root: Path | None = None
    """`<root>/.claude/settings.json` and `<root>/.claude/settings.local.json`."""
    flag: Path | None = None
    """`--settings FILE`: must exist and be valid."""
    managed: Path | None = None
    """The managed policy file."""
    managed_named: bool = False
    """The managed file was named by `--policy-file`: it must exist, and no drop-in folder is read beside it."""
    sources: tuple[Level, ...] = SELECTABLE_LEVELS
    """Which of user, project and local load (`--setting-sources`)."""

    def candidates(self, project_root: Path | None) -> list[tuple[Level, Path, bool]]:
        """(level, path, named by a flag) for every file to look at, lowest precedence first."""
        found: list[tuple[Level, Path, bool]] = []
        if "user" in self.sources and self.user is not None:
            found.append(("user", self.user, False))
        root = project_root or self.project_root
        if root is not None:
            if "project" in self.sources:
                found.append(("project", root / ".claude" / "settings.json", False))
            if "local" in self.sources:
                found.append(("local", root / ".claude" / "settings.local.json", False))
        if self.flag is not None:
            found.append(("flag", self.flag, True))
        if self.managed is not None:
            found.append(("managed", self.managed, self.managed_named))
            if not self.managed_named:
                for path in _drop_ins(self.managed.parent / "managed-settings.d"):
                    found.append(("managed", path, False))
        return found

    def paths(self, project_root: Path | None = None) -> tuple[Path, ...]:
        """Every settings file of the hierarchy, whether it exists or not."""
        return tuple(path for _, path, _ in self.candidates(project_root))


@dataclass(frozen=True, slots=True)
class _Read:
    signature: _Signature | None
    """None when the file is missing (or could not be stat'ed)."""
    data: JsonObject | None
    problem: SettingsProblem | None


class ClaudeSettingsFiles:
    """Reads the settings hierarchy; `load()` is cheap when nothing changed (a stat per file)."""

    def __init__(self, locations: SettingsLocations) -> None:
        self.locations = locations
        self._reads: dict[Path, _Read] = {}
        self._snapshot: tuple[tuple[object, ...], ClaudeSettings] | None = None

    def check(self) -> ClaudeSettings:
        """Load once, and fail when a file named by a flag is missing or invalid.

        Raises:
            ConfigError: one line naming the flag, the file and what is wrong.
        """
        settings = self.load()
        for level, path, named in self.locations.candidates(None):
            problem = next((p for p in settings.problems if p.path == str(path)), None)
            if named and problem is not None:
                flag = "--settings" if level == "flag" else "--policy-file"
                raise ConfigError(f"{flag} {path}: {problem.message}")
        return settings

    def load(self, project_root: Path | None = None) -> ClaudeSettings:
        """The settings in effect now. Never raises: problems are in `ClaudeSettings.problems`."""
        reads: list[tuple[Level, Path, _Read]] = [
            (level, path, self._read(path, required=named))
            for level, path, named in self.locations.candidates(project_root)
        ]
        key = tuple((level, path, read.signature, read.problem) for level, path, read in reads)
        if self._snapshot is not None and self._snapshot[0] == key:
            return self._snapshot[1]
        files = [SettingsFile(level, path, read.data) for level, path, read in reads if read.data is not None]
        problems = [read.problem for _, _, read in reads if read.problem is not None]
        problems += [
            SettingsProblem(
                str(file.path),
                'permissions.defaultMode "bypassPermissions" is ignored here: project and local settings are '
                "controlled by the repository, so only user, --settings and managed settings may set it",
            )
            for file in files
            if file.level in REPOSITORY_LEVELS
            and json_object(file.data.get("permissions")).get("defaultMode") == "bypassPermissions"
        ]
        snapshot = ClaudeSettings(
            files=tuple(files), problems=tuple(problems), merged=merge_settings(f.data for f in files)
        )
        self._snapshot = (key, snapshot)
        return snapshot

    def _read(self, path: Path, *, required: bool) -> _Read:
        previous = self._reads.get(path)
        last_good = previous.data if previous is not None else None
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            read = _Read(None, None, SettingsProblem(str(path), "not found") if required else None)
        except OSError as exc:
            read = _Read(None, last_good, SettingsProblem(str(path), f"cannot read: {exc.strerror or exc}"))
        else:
            signature = (stat.st_mtime_ns, stat.st_size)
            if previous is not None and previous.signature == signature:
                return previous
            data, message = _parse(path)
            if message is None:
                read = _Read(signature, data, None)
            elif last_good is not None:
                kept = f"{message}; its last readable content stays in effect until it is fixed"
                read = _Read(signature, last_good, SettingsProblem(str(path), kept))
            else:
                read = _Read(signature, None, SettingsProblem(str(path), message))
        self._reads[path] = read
        return read


def merge_settings(layers: Iterable[Mapping[str, Any]]) -> JsonObject:
    """Merge settings objects given lowest precedence first: objects key by key, lists joined without
    duplicates, other values from the higher level."""
    merged: JsonObject = {}
    for layer in layers:
        merged = _merge(merged, layer)
    return merged


def _merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> JsonObject:
    result: JsonObject = dict(low)
    for key, value in high.items():
        previous = result.get(key)
        if isinstance(previous, dict) and isinstance(value, dict):
            result[key] = _merge(cast("JsonObject", previous), cast("JsonObject", value))
        elif isinstance(previous, list) and isinstance(value, list):
            joined = list(cast("list[Any]", previous))
            joined += [item for item in cast("list[Any]", value) if item not in joined]
            result[key] = joined
        else:
            result[key] = value
    return result


def _parse(path: Path) -> tuple[JsonObject, None] | tuple[None, str]:
    try:
        with open(path, encoding="utf-8") as file:
            data: object = json.load(file)
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read: {exc}"
    except json.JSONDecodeError as exc:
        return None, f"invalid JSON: {exc}"
    if not isinstance(data, dict):
        return None, "must hold a JSON object"
    return cast("JsonObject", data), None


def _drop_ins(folder: Path) -> list[Path]:
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json") and not name.startswith("."))
    except OSError:
        return []
    return [folder / name for name in names]
