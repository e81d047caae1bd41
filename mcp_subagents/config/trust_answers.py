"""The person's answers to this server's trust question, remembered so that no folder is asked about twice.

They live in the server's own state directory (`trust.json`), never in a project: a repository cannot ship an
answer for itself. The file is replaced in one step (a reader never sees half of it) and created private (0600).
Only such a file counts: one that is a symbolic link, belongs to someone else, or others may read or write (as a
file a repository ships is, should the state directory lie inside one) is neither believed nor written, so nothing
planted in its place can make a folder trusted or steer the write elsewhere. Claude Code's own record
(`~/.claude.json`) is read elsewhere and never written here.

```json
{"folders": {"/home/ann/src/app": {"trusted": true, "at": 1767225600.0, "by": "local", "via": "the host's form"}}}
```
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ..core.errors import ConfigError
from .json_file import replace_json

TRUST_ANSWERS_FILE = "trust.json"
"""The file's name inside the state directory."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustAnswer:
    """What the person answered about one folder."""

    folder: str
    """The folder as it was asked about, symlinks resolved."""
    trusted: bool
    at: float
    """When (`time.time()`)."""
    by: str | None = None
    via: str | None = None


class TrustAnswers:
    """The remembered answers in `path`; read again only when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: tuple[tuple[int, int, int] | None, dict[str, TrustAnswer]] = (None, {})
        self._unsaved: dict[str, TrustAnswer] = {}
        """Answers the file could not take: they hold while this process runs."""

    def all(self) -> dict[str, TrustAnswer]:
        """Every remembered answer by folder: the file's (none when it is missing, unreadable or a symbolic link),
        and those it could not take."""
        return {**self._saved(), **self._unsaved} if self._unsaved else self._saved()

    def _saved(self) -> dict[str, TrustAnswer]:
        try:
            status = os.lstat(self.path)
        except OSError:
            return {}
        if _foreign(status) is not None:
            return {}  # no answer of the person's
        signature = (status.st_ino, status.st_mtime_ns, status.st_size)
        if self._cache[0] != signature:
            self._cache = (signature, _parse(_read(self.path)))
        return self._cache[1]

    def get(self, folder: Path) -> TrustAnswer | None:
        return self.all().get(folder_key(folder))

    def remember(self, folder: Path, *, trusted: bool, at: float, by: str | None, via: str | None) -> TrustAnswer:
        """Record the answer for `folder` (replacing an earlier one).

        Raises:
            ConfigError: the file is a symbolic link, holds something other than the answers, or cannot be written;
                it is left as it was, and the answer holds until this process ends.
        """
        answer = TrustAnswer(folder=folder_key(folder), trusted=trusted, at=at, by=by, via=via)
        try:
            self._update(lambda folders: folders.__setitem__(answer.folder, _entry(answer)))
        except ConfigError:
            self._unsaved[answer.folder] = answer
            raise
        self._unsaved.pop(answer.folder, None)
        return answer

    def forget(self, folder: Path) -> bool:
        """Remove the answer for `folder`, so the server asks again; whether there was one.

        Raises:
            ConfigError: as `remember`.
        """
        key = folder_key(folder)
        unsaved = self._unsaved.pop(key, None)
        if key not in self._saved():
            return unsaved is not None
        self._update(lambda folders: folders.pop(key, None))
        return True

    def _update(self, change: Callable[[dict[str, Any]], object]) -> None:
        try:
            foreign = _foreign(os.lstat(self.path))
        except FileNotFoundError:
            foreign = None
        except OSError as exc:
            foreign = f"cannot be read ({exc.strerror})"
        if foreign is not None:
            raise ConfigError(f"{self.path} {foreign}, so the answer was not remembered; remove it")
        data = _read(self.path, strict=True)
        folders = data.setdefault("folders", {})
        if not isinstance(folders, dict):
            raise ConfigError(f"{self.path}: 'folders' is not an object, so the answer was not remembered")
        change(cast("dict[str, Any]", folders))
        _write(self.path, data)
        self._cache = (None, {})


def _foreign(status: os.stat_result) -> str | None:
    """Why a file at the answers' place is not one this server wrote, or None when it may be."""
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if not stat.S_ISREG(status.st_mode):
        return "is not a plain file"
    getuid = getattr(os, "getuid", None)
    if getuid is not None and status.st_uid != getuid():
        return "belongs to another user"
    if status.st_mode & 0o077:
        return f"may be read or changed by others (mode {stat.S_IMODE(status.st_mode):o})"
    return None


def folder_key(folder: Path) -> str:
    """The folder as answers name it: absolute, symlinks resolved (a link to a folder is the same folder)."""
    return os.path.realpath(os.path.abspath(folder))


def _entry(answer: TrustAnswer) -> dict[str, Any]:
    entry: dict[str, Any] = {"trusted": answer.trusted, "at": answer.at}
    if answer.by is not None:
        entry["by"] = answer.by
    if answer.via is not None:
        entry["via"] = answer.via
    return entry


def _parse(data: dict[str, Any]) -> dict[str, TrustAnswer]:
    folders = data.get("folders")
    found: dict[str, TrustAnswer] = {}
    for folder, raw in cast("dict[str, Any]", folders).items() if isinstance(folders, dict) else ():
        entry = cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}
        trusted, at = entry.get("trusted"), entry.get("at")
        if not isinstance(trusted, bool):
            continue
        by, via = entry.get("by"), entry.get("via")
        found[folder] = TrustAnswer(
            folder=folder,
            trusted=trusted,
            at=float(at) if isinstance(at, int | float) else 0.0,
            by=by if isinstance(by, str) else None,
            via=via if isinstance(via, str) else None,
        )
    return found


def _read(path: Path, *, strict: bool = False) -> dict[str, Any]:
    """The file's object; {} when it is missing (or, unless `strict`, unreadable).

    Raises:
        ConfigError: with `strict`, the file exists but cannot be read or is not a JSON object.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(descriptor, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        if strict:
            raise ConfigError(f"{path}: cannot be read ({exc}), so the answer was not remembered") from None
        return {}
    try:
        data: object = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        if strict:
            raise ConfigError(f"{path}: not valid JSON ({exc.msg}), so the answer was not remembered") from None
        return {}
    if not isinstance(data, dict):
        if strict:
            raise ConfigError(f"{path}: not a JSON object, so the answer was not remembered")
        return {}
    return cast("dict[str, Any]", data)


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace the file in one step, private to its owner."""
    try:
        replace_json(path, data, folder_mode=0o700)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be written ({exc.strerror}), so the answer was not remembered") from None
