"""Where agent definitions come from, which one wins, and a loader that rescans cheaply.

Priority, lowest first: built-in < plugins < user < project (`.claude/agents`, then `.agents/agents`) <
`--agents-dir` folders in order < `--agents` JSON < the managed policy's `agents`. A later definition replaces an
earlier one with the same name. Deny rules (`Task(X)` / `Agent(X)` in `permissions.deny` of any settings file)
then remove agents. The settings files are read by `claude_settings.ClaudeSettingsFiles`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

from ..config.claude_settings import ClaudeSettings, ClaudeSettingsFiles
from ..core.errors import DefinitionError, UnknownAgentError
from ..core.json_values import JsonObject
from ._coerce import as_list, as_object
from .cache import CatalogCache, Identity, Key, Signature, file_signature, settled
from .frontmatter import has_frontmatter
from .model import AgentDefinition, CachedAgent, LoadError, Source, tools_summary
from .parse import parse_definition, parse_json_agents

__all__ = [
    "AgentTable",
    "Catalog",
    "CatalogLoader",
    "DefinitionSources",
    "LoadError",
    "builtin_agents_dir",
    "plugin_folders",
]

logger = logging.getLogger(__name__)

_PLUGIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_MANIFEST = os.path.join(".claude-plugin", "plugin.json")

_FileOutcome: TypeAlias = AgentDefinition | CachedAgent | LoadError | None
_JsonOutcome: TypeAlias = JsonObject | LoadError | None


@dataclass(frozen=True, slots=True, kw_only=True)
class DefinitionSources:
    """Every place definitions are read from. Paths that do not exist are simply skipped."""

    builtin_dir: Path | None = None
    plugin_dirs: tuple[Path, ...] = ()
    """Plugin folders, or folders whose subfolders are plugins (like a marketplace's `plugins/`)."""
    user_dir: Path | None = None
    """Normally `~/.claude/agents`."""
    project_root: Path | None = None
    """The working directory: `<root>/.claude/agents` and `<root>/.agents/agents` are scanned."""
    extra_dirs: tuple[Path, ...] = ()
    """`--agents-dir` folders (or single `.md` files), later ones winning."""
    agents_json: str | None = None
    """The `--agents` JSON: `{"name": {"description", "prompt", ...}}`."""
    settings_files: ClaudeSettingsFiles | None = None
    """The Claude Code settings hierarchy: the managed policy's `agents` (same shape as `--agents`) win over
    everything, and `Task(Name)` / `Agent(Name)` in any `permissions.deny` removes an agent."""

    def cache_identity(self) -> Identity:
        """The folders agent files are read from, as the state directory's cache tells projects apart."""
        folders = (self.builtin_dir, self.plugin_dirs, self.user_dir, self.project_root, self.extra_dirs)
        return [[os.fspath(path) for path in item] if isinstance(item, tuple) else _text(item) for item in folders]


class AgentTable(Mapping[str, AgentDefinition]):
    """A catalog's agents by name. An agent known only from the state directory's cache (`CachedAgent`) is parsed
    from its file the first time its definition is read; `listing()` needs no parsing."""

    __slots__ = ("_entries", "_parse")

    def __init__(
        self,
        entries: Mapping[str, AgentDefinition | CachedAgent] | None = None,
        parse: Callable[[CachedAgent], AgentDefinition | None] | None = None,
    ) -> None:
        self._entries: dict[str, AgentDefinition | CachedAgent] = dict(entries or {})
        self._parse = parse

    def __getitem__(self, name: str) -> AgentDefinition:
        entry = self._entries[name]
        if isinstance(entry, AgentDefinition):
            return entry
        definition = self._parse(entry) if self._parse is not None else None
        if definition is None:  # the file broke or was renamed since the scan: the next scan says so
            raise KeyError(name)
        self._entries[name] = definition
        return definition

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, AgentTable):  # without parsing anything
            return self._entries == other._entries
        return super().__eq__(other)

    __hash__ = None

    def __repr__(self) -> str:
        return f"AgentTable({list(self._entries)!r})"

    def listing(self) -> tuple[AgentDefinition | CachedAgent, ...]:
        return tuple(self._entries.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """The agents in effect after priority and deny rules, plus what went wrong on the way."""

    agents: Mapping[str, AgentDefinition]
    """Built-in agents first, then the rest, each group by name (case-insensitive)."""
    errors: tuple[LoadError, ...] = ()
    denied: tuple[str, ...] = ()
    """Names removed by deny rules."""
    overridden: tuple[AgentDefinition | CachedAgent, ...] = ()
    """Definitions replaced by a later one with the same name, in load order."""

    def names(self) -> tuple[str, ...]:
        return tuple(self.agents)

    def listing(self) -> tuple[tuple[str, str, str], ...]:
        """(name, description, tools summary) of each agent, in order, as the Task tool shows them; parses nothing."""
        agents = self.agents
        entries = agents.listing() if isinstance(agents, AgentTable) else tuple(agents.values())
        return tuple((entry.name, entry.description, tools_summary(entry)) for entry in entries)

    def get(self, name: str) -> AgentDefinition | None:
        return self.agents.get(name)

    def require(self, name: str) -> AgentDefinition:
        """The named agent.

        Raises:
            UnknownAgentError: listing the available names.
        """
        definition = self.agents.get(name)
        if definition is None:
            raise self.unknown(name)
        return definition

    def unknown(self, name: str) -> UnknownAgentError:
        """The error for a Task that names no loaded agent; it names the file that meant to define `name` and why
        that file failed to load, when one did (a file named after the agent)."""
        failed = next((error for error in self.errors if Path(error.path).stem == name), None)
        if failed is None:
            failed = next((error for error in self.errors if Path(error.path).stem.casefold() == name.casefold()), None)
        return UnknownAgentError(
            name, list(self.agents), failed=(failed.path, failed.error) if failed is not None else None
        )


def builtin_agents_dir() -> Path | None:
    """The built-in agents shipped with the package (or the repo's `agents/` in a source checkout)."""
    package = Path(__file__).resolve().parent.parent
    if (package / "_builtin_agents").is_dir():
        return package / "_builtin_agents"
    checkout = package.parent
    if (checkout / "pyproject.toml").is_file() and (checkout / "agents").is_dir():
        return checkout / "agents"
    return None


class CatalogLoader:
    """Builds a `Catalog` from `DefinitionSources`, anew on every `load()` so edits show at once.

    Parsed files are cached by path and signature (`cache.Signature`), so rescanning an unchanged tree only lists
    folders and stats files, and an unchanged file yields the very same `AgentDefinition` object.
    """

    def __init__(self, sources: DefinitionSources, *, cache_file: Path | None = None) -> None:
        """`cache_file`: `state_dir / cache.CACHE_FILE` to keep parsed files between runs, in a file of these
        sources' own (see `cache`); None keeps them in memory only."""
        self.sources = sources
        self._cache = CatalogCache(cache_file, sources.cache_identity()) if cache_file is not None else None
        self._from_disk: set[Key] = set()
        self._files: dict[Key, tuple[Signature, _FileOutcome]] = {}
        self._unsettled: set[Key] = set()
        self._json: dict[str, tuple[Signature, _JsonOutcome]] = {}
        self._flag_agents: tuple[list[AgentDefinition], list[LoadError]] | None = None
        self._signatures: dict[str, Signature] = {}

    def load(self) -> Catalog:
        """Scan every source. Never raises for a bad file: those end up in `Catalog.errors`."""
        if self._cache is not None and not self._files and not self._from_disk:
            self._files = self._cache.read()
            self._from_disk = set(self._files)
        scan = _Scan(self._files, self._json, self._from_disk, self._unsettled)
        settings = self.sources.settings_files.load() if self.sources.settings_files is not None else ClaudeSettings()
        found = self._collect(scan, settings)
        deny_targets = settings.denied_agents
        if self._cache is not None and (scan.parsed or scan.new_files.keys() != self._files.keys()):
            unsettled = scan.unsettled
            self._cache.write({key: entry for key, entry in scan.new_files.items() if key not in unsettled})
        self._files, self._json, self._unsettled = scan.new_files, scan.new_json, scan.unsettled
        self._signatures = {path: signature for (path, _, _), (signature, _) in scan.new_files.items()}

        chosen: dict[str, AgentDefinition | CachedAgent] = {}
        overridden: list[AgentDefinition | CachedAgent] = []
        for definition in found:
            previous = chosen.pop(definition.name, None)
            if previous is not None:
                overridden.append(previous)
            chosen[definition.name] = definition

        denied = sorted(name for name in chosen if name in deny_targets)
        for name in denied:
            del chosen[name]

        ordered = sorted(chosen.values(), key=lambda d: (d.source != "built-in", d.name.casefold(), d.name))
        return Catalog(
            agents=AgentTable({d.name: d for d in ordered}, self._parse_cached),
            errors=tuple(scan.errors),
            denied=tuple(denied),
            overridden=tuple(overridden),
        )

    def _parse_cached(self, cached: CachedAgent) -> AgentDefinition | None:
        """The definition of a file known from the state directory's cache; None when it no longer yields that
        agent. Its warnings were logged when the cache was read."""
        try:
            stat = os.stat(cached.path)
        except OSError:
            return None
        outcome = _parse_file(cached.path, cached.source, cached.plugin, log_warnings=False)
        if not isinstance(outcome, AgentDefinition) or outcome.name != cached.name:
            return None
        key = (cached.path, cached.source, cached.plugin)
        known = self._files.get(key)
        if known is not None and known[0] == file_signature(stat):
            self._files[key] = (known[0], outcome)  # later scans reuse it
        return outcome

    def changed_since_scan(self, definition: AgentDefinition) -> bool:
        """Whether the file `definition` was read from has changed (or gone) since the last `load()`; one stat."""
        if definition.path is None:
            return False
        path = os.fspath(definition.path)
        try:
            stat = os.stat(path)
        except OSError:
            return True
        return self._signatures.get(path) != file_signature(stat)

    def _collect(self, scan: _Scan, settings: ClaudeSettings) -> list[AgentDefinition | CachedAgent]:
        """All definitions, lowest priority first."""
        sources = self.sources
        if sources.builtin_dir is not None:
            scan.folder(sources.builtin_dir, "built-in")
        for plugin_dir in sources.plugin_dirs:
            for root in _plugin_roots(plugin_dir):
                scan.plugin(root)
        if sources.user_dir is not None:
            scan.folder(sources.user_dir, "user")
        if sources.project_root is not None:
            project_dir = os.path.join(sources.project_root, ".claude", "agents")
            # Hosts often start servers in $HOME, where the project folder is the user folder: read it once.
            if sources.user_dir is None or not _same_folder(project_dir, sources.user_dir):
                scan.folder(project_dir, "project")
            scan.folder(os.path.join(sources.project_root, ".agents", "agents"), "project")
        for extra in sources.extra_dirs:
            scan.folder(extra, "flag")
        if sources.agents_json is not None:
            if self._flag_agents is None:
                self._flag_agents = parse_json_agents(sources.agents_json, source="flag", origin="--agents")
            scan.found.extend(self._flag_agents[0])
            scan.errors.extend(self._flag_agents[1])
        scan.policy(settings)
        return scan.found


class _Scan:
    """One pass over the sources: the definitions found, the errors, and the cache entries still in use."""

    def __init__(
        self,
        old_files: Mapping[Key, tuple[Signature, _FileOutcome]],
        old_json: Mapping[str, tuple[Signature, _JsonOutcome]],
        from_disk: set[Key],
        old_unsettled: set[Key],
    ) -> None:
        self.started_ns = time.time_ns()
        self.found: list[AgentDefinition | CachedAgent] = []
        self.errors: list[LoadError] = []
        self.old_files = old_files
        self.old_json = old_json
        self.from_disk = from_disk
        """Cache entries read from the state directory whose warnings this process has not logged yet."""
        self.old_unsettled = old_unsettled
        self.parsed: set[Key] = set()
        self.unsettled: set[Key] = set()
        """Files parsed while they could still change unseen (`cache.settled`): parsed again at the next scan."""
        self.new_files: dict[Key, tuple[Signature, _FileOutcome]] = {}
        self.new_json: dict[str, tuple[Signature, _JsonOutcome]] = {}
        self._errors_seen: set[LoadError] = set()

    def error(self, error: LoadError) -> None:
        # A settings file read for both its agents and its deny list reports its problem once.
        if error not in self._errors_seen:
            self._errors_seen.add(error)
            self.errors.append(error)

    def folder(self, folder: str | Path, source: Source, plugin: str | None = None) -> None:
        try:
            for path, signature in markdown_files(os.fspath(folder)):
                self.file(path, signature, source, plugin)
        except OSError as exc:
            self.error(LoadError(os.fspath(folder), f"cannot list folder: {exc.strerror or exc}"))

    def file(self, path: str, signature: Signature, source: Source, plugin: str | None) -> None:
        key = (path, source, plugin)
        cached = self.old_files.get(key)
        if cached is not None and cached[0] == signature and key not in self.old_unsettled:
            outcome = cached[1]
            if key in self.from_disk:
                self.from_disk.discard(key)
                if isinstance(outcome, CachedAgent):
                    _log_warnings(path, outcome.warnings)
        else:
            outcome = _parse_file(path, source, plugin)
            self.parsed.add(key)
            if not settled(signature, self.started_ns):
                self.unsettled.add(key)
        self.new_files[key] = (signature, outcome)
        if isinstance(outcome, LoadError):
            self.error(outcome)
        elif outcome is not None:
            self.found.append(outcome)

    def plugin(self, root: str) -> None:
        manifest_path = os.path.join(root, _MANIFEST)
        manifest: JsonObject = {}
        if os.path.isfile(manifest_path):
            parsed = self.json(manifest_path)
            if parsed is None:  # Broken manifest, already reported: the plugin's name and agent list are unknown.
                return
            manifest = parsed
        name = manifest.get("name") or os.path.basename(root)
        if not isinstance(name, str) or not _PLUGIN_NAME.fullmatch(name):
            self.error(LoadError(root, f"invalid plugin name {name!r}"))
            return
        listed = manifest.get("agents")
        if listed is None:
            self.folder(os.path.join(root, "agents"), "plugin", name)
            return
        entries = [listed] if isinstance(listed, str) else as_list(listed)
        if entries is None or not all(isinstance(entry, str) for entry in entries):
            self.error(LoadError(manifest_path, "'agents' must be a path or a list of paths"))
            return
        for entry in entries:
            target = os.path.normpath(os.path.join(root, str(entry)))
            if os.path.exists(target):
                self.folder(target, "plugin", name)
            else:
                self.error(LoadError(manifest_path, f"'agents' lists {entry!r}, which does not exist"))

    def policy(self, settings: ClaudeSettings) -> None:
        """The managed policy's agents, and the settings files that could not be used (reported with the rest)."""
        for problem in settings.problems:
            self.error(LoadError(problem.path, problem.message))
        agents = settings.managed_agents
        if agents is None:
            return
        definitions, errors = parse_json_agents(agents[0], source="policy", origin=agents[1])
        self.found.extend(definitions)
        for error in errors:
            self.error(error)

    def json(self, path: str) -> JsonObject | None:
        """A JSON object file, None when missing; broken ones are recorded as errors and read as None."""
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self.error(LoadError(path, f"cannot read: {exc.strerror or exc}"))
            return None
        signature = file_signature(stat)
        cached = self.new_json.get(path) or self.old_json.get(path)
        outcome = cached[1] if cached is not None and cached[0] == signature else _read_json(path)
        self.new_json[path] = (signature, outcome)
        if isinstance(outcome, LoadError):
            self.error(outcome)
            return None
        return outcome


def read_definition_text(path: str) -> str | LoadError | None:
    """The file's text; a `LoadError` when unreadable or not UTF-8; None for a file without frontmatter.

    A Markdown file with no frontmatter at all (a README.md, CLAUDE.md or CONTRIBUTING.md kept beside the agents) is
    not an agent, so it is skipped silently, as Claude Code skips it; a file whose frontmatter is broken is an agent
    file with a fault, and the parser reports it.
    """
    try:
        text = _read_bytes(path).decode("utf-8")
    except OSError as exc:
        return LoadError(path, f"cannot read: {exc.strerror or exc}")
    except UnicodeDecodeError as exc:
        return LoadError(path, f"not UTF-8 text (invalid byte at offset {exc.start})")
    if not has_frontmatter(text):
        return None
    return text


def _read_bytes(path: str) -> bytes:
    # os.read rather than open(): a third less CPU for the small files agent files are, which counts by thousands.
    descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks: list[bytes] = []
        while chunk := os.read(descriptor, 1 << 16):
            chunks.append(chunk)
    finally:
        os.close(descriptor)
    return b"".join(chunks)


def _parse_file(path: str, source: Source, plugin: str | None, *, log_warnings: bool = True) -> _FileOutcome:
    text = read_definition_text(path)
    if not isinstance(text, str):
        return text
    try:
        definition = parse_definition(text, path=Path(path), source=source, plugin=plugin)
    except DefinitionError as exc:
        return LoadError(path, exc.message)
    if log_warnings:  # once per change of the file: unchanged files are not parsed again
        _log_warnings(path, definition.warnings)
    return definition


def _log_warnings(path: str, warnings: tuple[str, ...]) -> None:
    for warning in warnings:
        logger.warning("agent file %s: %s", path, warning)


def _read_json(path: str) -> JsonObject | LoadError:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except (OSError, UnicodeDecodeError) as exc:
        return LoadError(path, f"cannot read: {exc}")
    except json.JSONDecodeError as exc:
        return LoadError(path, f"invalid JSON: {exc}")
    settings = as_object(data)
    return settings if settings is not None else LoadError(path, "must hold a JSON object")


def markdown_files(root: str) -> list[tuple[str, Signature]]:
    """`*.md` files under `root`, recursively, sorted by name at each level; hidden folders skipped.

    A missing root yields nothing; a root that is itself a file yields that file.

    Raises:
        OSError: the root exists but cannot be listed.
    """
    try:
        stat = os.stat(root)
    except FileNotFoundError:
        return []
    if not os.path.isdir(root):
        return [(root, file_signature(stat))]
    found: list[tuple[str, Signature]] = []
    visited: set[tuple[int, int]] = set()

    def walk(folder: str, identity: tuple[int, int]) -> None:
        if identity in visited:  # A symlink loop.
            return
        visited.add(identity)
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda entry: entry.name)
        for entry in entries:
            try:
                if entry.is_dir():
                    if not entry.name.startswith("."):
                        inner = entry.stat()
                        walk(entry.path, (inner.st_dev, inner.st_ino))
                elif entry.name.endswith(".md") and entry.is_file():
                    inner = entry.stat()
                    found.append((entry.path, file_signature(inner)))
            except FileNotFoundError:  # Deleted, or a dangling symlink, while we looked.
                continue

    walk(root, (stat.st_dev, stat.st_ino))
    return found


def has_many_agent_files(sources: DefinitionSources, many: int) -> bool:
    """Whether the agent folders of `sources` hold at least `many` `*.md` files: counted from folder listings alone
    (no file is stat-ed or read), stopping at `many`, and only in each plugin's `agents` folder (a manifest may name
    others). Enough to tell a few dozen files from thousands."""
    folders = [os.fspath(folder) for folder in (sources.builtin_dir, sources.user_dir) if folder is not None]
    folders += [os.path.join(root, "agents") for folder in sources.plugin_dirs for root in _plugin_roots(folder)]
    if sources.project_root is not None:
        folders += [os.path.join(sources.project_root, ".claude", "agents")]
        folders += [os.path.join(sources.project_root, ".agents", "agents")]
    folders += [os.fspath(folder) for folder in sources.extra_dirs]
    found = 0
    pending = [(folder, 0) for folder in folders]
    while pending and found < many:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if entry.name.endswith(".md"):
                        found += 1
                    elif depth < 4 and not entry.name.startswith(".") and entry.is_dir():
                        pending.append((entry.path, depth + 1))
        except OSError:  # missing, a file (a single `--agents-dir` file), or unreadable
            found += folder.endswith(".md")
    return found >= many


def plugin_folders(folder: Path) -> list[tuple[str, Path]]:
    """(plugin name, plugin root) of `folder` itself or of its plugin subfolders; plugins whose manifest is broken
    or whose name is invalid are left out (the catalog reports them)."""
    found: list[tuple[str, Path]] = []
    for root in _plugin_roots(folder):
        manifest = _read_json(os.path.join(root, _MANIFEST)) if os.path.isfile(os.path.join(root, _MANIFEST)) else {}
        if isinstance(manifest, LoadError):
            continue
        name = manifest.get("name") or os.path.basename(root)
        if isinstance(name, str) and _PLUGIN_NAME.fullmatch(name):
            found.append((name, Path(root)))
    return found


def _plugin_roots(folder: Path) -> list[str]:
    """`folder` itself when it is a plugin, else its subfolders that are plugins, sorted by name."""
    root = os.fspath(folder)
    if _is_plugin(root):
        return [root]
    try:
        children = sorted(name for name in os.listdir(root) if not name.startswith("."))
    except OSError:
        return []
    return [os.path.join(root, name) for name in children if _is_plugin(os.path.join(root, name))]


def _is_plugin(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, _MANIFEST)) or any(
        os.path.isdir(os.path.join(folder, part)) for part in ("agents", "skills")
    )


def _text(path: Path | None) -> str | None:
    return None if path is None else os.fspath(path)


def _same_folder(first: str | Path, second: str | Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return False
