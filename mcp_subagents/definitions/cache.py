"""What the agent files of the last run said, kept in the state directory, so a restart need not parse them.

With thousands of agent files, parsing them was most of a cold start. A restart takes, for every file whose
(mtime_ns, size) is unchanged, what the Task tool shows of it (name, description, tools) as a `CachedAgent`, or the
error it had; the catalog parses the file itself only when a Task needs its definition. Entries are keyed as in the
loader's memory: (path, source, plugin). The cache belongs to one version of the parsing code (a digest of its
sources and PyYAML's version): one written by other code, or that cannot be read, is ignored. It is JSON, never
pickle: what lies in a state directory is data, not code.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, TypeAlias, cast

from .model import AgentDefinition, CachedAgent, LoadError, Source

logger = logging.getLogger(__name__)

CACHE_FILE = "catalog-cache.json"
_FORMAT = 2

Key: TypeAlias = tuple[str, Source, "str | None"]
Signature: TypeAlias = tuple[int, int]
Outcome: TypeAlias = AgentDefinition | CachedAgent | LoadError | None
Entries: TypeAlias = dict[Key, tuple[Signature, Outcome]]


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


def read_cache(path: Path) -> Entries:
    """The entries of a cache written by this code; empty when there is none or it cannot be used."""
    try:
        with open(path, "rb") as file:
            data = json.load(file)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.debug("agent file cache %s ignored: %s", path, exc)
        return {}
    document = cast(dict[str, Any], data) if isinstance(data, dict) else {}
    if document.get("format") != _FORMAT or document.get("parser") != parser_digest():
        return {}
    entries: Entries = {}
    for item in cast(list[Any], document.get("entries") or []):
        try:
            key: Key = (item["path"], item["source"], item["plugin"])
            entries[key] = ((int(item["mtime_ns"]), int(item["size"])), _decode(key, item["outcome"]))
        except (KeyError, TypeError, ValueError) as exc:
            logger.debug("agent file cache %s: an entry is ignored: %s", path, exc)
    return entries


def write_cache(path: Path, entries: Mapping[Key, tuple[Signature, Outcome]]) -> None:
    """Replace the cache with `entries` (atomically; readable by the user only). Failing to write costs only the
    cache: the next start parses."""
    items = [
        {
            "path": key[0],
            "source": key[1],
            "plugin": key[2],
            "mtime_ns": signature[0],
            "size": signature[1],
            "outcome": _encode(outcome),
        }
        for key, (signature, outcome) in entries.items()
    ]
    document = {"format": _FORMAT, "parser": parser_digest(), "entries": items}
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(document, file, ensure_ascii=False, separators=(",", ":"))
        os.replace(temporary, path)
    except (OSError, TypeError, ValueError) as exc:
        logger.debug("agent file cache %s not written: %s", path, exc)
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)


def _encode(outcome: Outcome) -> dict[str, Any] | None:
    if outcome is None:
        return None
    if isinstance(outcome, LoadError):
        return {"error": outcome.error, "at": outcome.path}
    tools = None if outcome.tools is None else list(outcome.tools)
    return {
        "name": outcome.name,
        "description": outcome.description,
        "tools": tools,
        "disallowed_tools": list(outcome.disallowed_tools),
        "warnings": list(outcome.warnings),
    }


def _decode(key: Key, encoded: Any) -> Outcome:
    if encoded is None:
        return None
    if "error" in encoded:
        return LoadError(str(encoded["at"]), str(encoded["error"]))
    tools = encoded["tools"]
    return CachedAgent(
        name=str(encoded["name"]),
        description=str(encoded["description"]),
        tools=None if tools is None else tuple(str(tool) for tool in tools),
        disallowed_tools=tuple(str(tool) for tool in encoded["disallowed_tools"]),
        source=key[1],
        path=key[0],
        plugin=key[2],
        warnings=tuple(str(warning) for warning in encoded["warnings"]),
    )
