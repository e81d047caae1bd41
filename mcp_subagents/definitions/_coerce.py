"""Narrow values from YAML or JSON (typed `Any`) to containers pyright can follow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ..core.json_values import JsonObject


def as_list(value: object) -> list[Any] | None:
    """The value as a list, or None when it is not one."""
    return cast("list[Any]", value) if isinstance(value, list) else None


def as_object(value: object) -> JsonObject | None:
    """The value as a dict with text keys (YAML allows `1:` or `true:` as keys), or None when not a mapping."""
    if not isinstance(value, Mapping):
        return None
    return {str(key): item for key, item in cast("Mapping[Any, Any]", value).items()}
