"""What each project's agent files said in earlier runs, kept in the state directory, so a restart need not parse them.

With thousands of agent files, parsing them was most of a cold start. A restart takes, for every file whose
signature (mtime, size, ctime, inode) is unchanged, what the Task tool shows of it (name, description, tools) as a
`CachedAgent`, or the error it had; the catalog parses the file itself only when a Task needs its definition.

The default state directory is shared by all of a person's projects, so each set of sources (the project folder,
the user's, plugin, built-in and `--agents-dir` folders) has a file of its own in the folder `catalog-cache`; the
`MAX_FILES` most recently used are kept, within `MAX_BYTES`. A file is replaced atomically, so two servers writing
at once leave one whole file. Each belongs to one version of the parsing code (a digest of its sources and PyYAML's
version) and names the sources it was written for: one written by other code, for other sources, or that cannot be
read, is ignored. It is JSON, never pickle: what lies in a state directory is data, not code. Nothing in it is
trusted but for speed: an entry is used only for the path it names while the file's signature is unchanged, and a
Task always runs the definition parsed from the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import secrets
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final, TypeAlias, cast

from .model import AgentDefinition, CachedAgent, LoadError, Source

logger = logging.getLogger(__name__)

CACHE_FILE: Final = "catalog-cache.json"
"""What the loader is given (`state_dir / CACHE_FILE`): the per-project files are in the folder of that name
without its suffix. (Earlier versions kept one file of that name, for the last project only; it is not read.)"""
MAX_FILES: Final = 32
"""Projects whose cache is kept; the least recently used go first."""
MAX_BYTES: Final = 64 * 1024 * 1024
"""All the projects' cache files together (2000 agent files take about 1 MB)."""
STALE_TEMPORARY_SECONDS: Final = 3600
"""A temporary file older than this was left by a writer that was killed: it is removed."""
COARSE_SETTLE_NS: Final = 2_000_000_000
_FORMAT: Final = 3
_SOURCES: Final[frozenset[str]] = frozenset({"built-in", "plugin", "user", "project", "flag", "policy"})

Key: TypeAlias = tuple[str, Source, "str | None"]
Signature: TypeAlias = tuple[int, int, int, int]
"""(mtime_ns, size, ctime_ns, inode): a file whose signature is unchanged is not read again. The ctime is set by the
system on every change and cannot be set back by a program, unlike the mtime."""
Outcome: TypeAlias = AgentDefinition | CachedAgent | LoadError | None
Entries: TypeAlias = dict[Key, tuple[Signature, Outcome]]
Identity: TypeAlias = list[Any]
"""The sources a cache file is for (JSON values): their digest names the file, and the file repeats them."""


class CacheFileError(ValueError):
    """A cache file that is not what this code writes."""


def file_signature(stat: os.stat_result) -> Signature:
    return (stat.st_mtime_ns, stat.st_size, stat.st_ctime_ns, stat.st_ino)


def settled(signature: Signature, scanned_ns: int) -> bool:
    """Whether a file stat-ed after `scanned_ns` (wall clock) can no longer change without changing its signature.

    On a file system that keeps whole seconds (FAT, HFS+, some network shares) a file written again within the same
    second or two, at the same size, keeps its signature; such a file is read again at the next scan, and kept on
    disk only once it is older than that. Finer time stamps change with every write."""
    mtime, _, ctime, _ = signature
    if mtime % 1_000_000_000 or ctime % 1_000_000_000:
        return True
    return max(mtime, ctime) < scanned_ns - COARSE_SETTLE_NS


@cache
def parser_digest() -> str:
    """What the cache is valid for: the code that turns a file into a definition, and the YAML library (whose
    `__init__.py` names its version: read, not imported, so a start that parses nothing does not import it)."""
    package = Path(__file__).resolve().parent
    models = package.parent / "models"
    sources = [*sorted(package.glob("*.py")), models / "resolve.py", models / "base.py"]
    yaml_spec = importlib.util.find_spec("yaml")
    if yaml_spec is not None and yaml_spec.origin is not None:
        sources.append(Path(yaml_spec.origin))
    digest = hashlib.blake2b(digest_size=16)
    for source in sources:
        try:
            digest.update(source.read_bytes())
        except OSError:
            digest.update(source.name.encode())
    return digest.hexdigest()


def cache_path(cache_file: Path, identity: Identity) -> Path:
    """The file that keeps what the agent files of these sources said; `cache_file` as the loader is given it."""
    digest = hashlib.blake2b(json.dumps(identity).encode(), digest_size=16).hexdigest()
    return cache_file.with_suffix("") / f"{digest}.json"


class CatalogCache:
    """The cache file of one set of sources."""

    def __init__(self, cache_file: Path, identity: Identity) -> None:
        self.path = cache_path(cache_file, identity)
        self.identity = identity

    def read(self) -> Entries:
        """The entries, when the file was written by this code for these sources; else none (and a log line)."""
        try:
            with open(self.path, "rb") as file:
                data = file.read()
            document = _document(json.loads(data))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            logger.info("agent-file cache %s ignored (it is rewritten): %s", self.path, exc)
            return {}
        if document.get("format") != _FORMAT or document.get("parser") != parser_digest():
            logger.debug("agent-file cache %s ignored: written by another version", self.path)
            return {}
        if document.get("sources") != self.identity:
            logger.info("agent-file cache %s ignored: it was written for other agent sources", self.path)
            return {}
        entries = _entries(document.get("entries"), self.path)
        with contextlib.suppress(OSError):
            os.utime(self.path)  # used now: the least recently used go first
        return entries

    def write(self, entries: Mapping[Key, tuple[Signature, Outcome]]) -> None:
        """Replace the file with `entries` (atomically; readable by the user only), then drop the least recently
        used files beyond the limits. Failing to write costs only the cache: the next start parses."""
        items = [[*key, list(signature), _encode(outcome)] for key, (signature, outcome) in entries.items()]
        document = {"format": _FORMAT, "parser": parser_digest(), "sources": self.identity, "entries": items}
        folder = self.path.parent
        temporary = folder / f".{self.path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))  # dumps: json.dump is pure Python
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(temporary, self.path)
        except (OSError, TypeError, ValueError) as exc:
            logger.debug("agent-file cache %s not written: %s", self.path, exc)
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            return
        evict(folder, keep=self.path)


def evict(folder: Path, *, keep: Path) -> None:
    """Remove the least recently used cache files beyond `MAX_FILES` and `MAX_BYTES` (never `keep`), and the
    temporary files of writers that were killed. Another server may remove the same files at the same time."""
    kept: list[tuple[int, int, Path]] = []
    try:
        with os.scandir(folder) as listing:
            for entry in listing:
                with contextlib.suppress(OSError):
                    stat = entry.stat(follow_symlinks=False)
                    if entry.name.endswith(".tmp"):
                        if stat.st_mtime < time.time() - STALE_TEMPORARY_SECONDS:
                            os.unlink(entry.path)
                    elif entry.name.endswith(".json") and entry.path != os.fspath(keep):
                        kept.append((stat.st_mtime_ns, stat.st_size, Path(entry.path)))
        total = keep.stat().st_size
    except OSError:
        return
    kept.sort(reverse=True)  # the most recently used first
    for number, (_, size, path) in enumerate(kept, start=2):
        total += size
        if number > MAX_FILES or total > MAX_BYTES:
            with contextlib.suppress(OSError):
                path.unlink()


def _document(data: object) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise CacheFileError("not a JSON object")
    return cast(dict[str, Any], data)


def _entries(items: object, path: Path) -> Entries:
    if not isinstance(items, list):
        logger.info("agent-file cache %s ignored (it is rewritten): no list of entries", path)
        return {}
    entries: Entries = {}
    ignored = 0
    for item in cast(list[Any], items):
        try:
            key, signature, outcome = _decode(item)
        except (CacheFileError, TypeError, ValueError):
            ignored += 1
            continue
        entries[key] = (signature, outcome)
    if ignored:
        logger.info("agent-file cache %s: %d entries ignored (not what this code writes)", path, ignored)
    return entries


def _encode(outcome: Outcome) -> list[Any] | None:
    if outcome is None:
        return None
    if isinstance(outcome, LoadError):
        return ["error", outcome.path, outcome.error]
    tools = None if outcome.tools is None else list(outcome.tools)
    return [
        "agent",
        outcome.name,
        outcome.description,
        tools,
        list(outcome.disallowed_tools),
        list(outcome.warnings),
    ]


def _decode(item: Any) -> tuple[Key, Signature, Outcome]:
    """An entry as `CatalogCache.write` wrote it; anything else raises. (Checked field by field rather than with
    `match`: a restart decodes thousands.)"""
    path, source, plugin, signature, outcome = item
    if type(path) is not str or source not in _SOURCES or not (plugin is None or type(plugin) is str):
        raise CacheFileError("bad key")
    mtime, size, ctime, inode = signature
    if not type(mtime) is type(size) is type(ctime) is type(inode) is int:
        raise CacheFileError("bad signature")
    key: Key = (path, source, plugin)
    return key, (mtime, size, ctime, inode), _decode_outcome(key, outcome)


def _decode_outcome(key: Key, encoded: Any) -> Outcome:
    if encoded is None:
        return None
    if type(encoded) is not list:
        raise CacheFileError("bad outcome")
    fields = cast(list[Any], encoded)
    if len(fields) == 3 and fields[0] == "error" and _only(_STR, fields):
        return LoadError(fields[1], fields[2])
    if len(fields) != 6 or fields[0] != "agent":
        raise CacheFileError("bad outcome")
    _, name, description, tools, disallowed, warnings = fields
    if not (
        type(name) is type(description) is str
        and (tools is None or _texts(tools))
        and _texts(disallowed)
        and _texts(warnings)
    ):
        raise CacheFileError("bad agent")
    return CachedAgent(
        name=name,
        description=description,
        tools=None if tools is None else tuple(tools),
        disallowed_tools=tuple(disallowed),
        source=key[1],
        path=key[0],
        plugin=key[2],
        warnings=tuple(warnings),
    )


_STR: Final = frozenset({str})


def _only(types: frozenset[type], values: Any) -> bool:
    return set(map(type, values)) <= types


def _texts(values: Any) -> bool:
    return type(values) is list and _only(_STR, values)
