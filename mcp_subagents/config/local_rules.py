"""Adding an allow rule to a project's `.claude/settings.local.json`, as Claude Code's "don't ask again" does: the
person's own file beside the project's, which the settings hierarchy reads at the local level."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from ..core.errors import ConfigError
from .json_file import replace_json

LOCAL_SETTINGS = Path(".claude") / "settings.local.json"


def add_local_allow_rule(project: Path, rule: str) -> Path:
    """Add `rule` to `permissions.allow` of the project's local settings (created if missing, every other key kept);
    returns the file. Nothing is written when the rule is there already.

    Raises:
        ConfigError: the file exists but is not a JSON object with a list at `permissions.allow`, or cannot be
            written; it is left as it was.
    """
    path = project / LOCAL_SETTINGS
    for link in (path.parent, path):
        if link.is_symlink():  # a project file must not steer our write (or our read) elsewhere
            raise ConfigError(f"{link} is a symbolic link, so the rule was not added")
    data = _read(path)
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ConfigError(f"{path}: 'permissions' is not an object, so the rule was not added")
    allow = cast("dict[str, Any]", permissions).setdefault("allow", [])
    if not isinstance(allow, list):
        raise ConfigError(f"{path}: 'permissions.allow' is not a list, so the rule was not added")
    entries = cast("list[Any]", allow)
    if rule in entries:
        return path
    entries.append(rule)
    _write(path, data)
    return path


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}), so the rule was not added") from None
    try:
        data: object = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}), so the rule was not added") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object, so the rule was not added")
    return cast("dict[str, Any]", data)


def _write(path: Path, data: dict[str, Any]) -> None:
    """Replace the file in one step: a reader never sees half of it."""
    try:
        replace_json(path, data)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be written ({exc.strerror}), so the rule was not added") from None
