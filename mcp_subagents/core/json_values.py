"""Parsed JSON (typed `Any` or `object`) narrowed to what pyright can follow: a value of the wrong type is passed
over, as an empty object, a skipped item or zero, never an error."""

from __future__ import annotations

from typing import Any, TypeAlias, cast

JsonObject: TypeAlias = dict[str, Any]


def json_object(value: object) -> JsonObject:
    """The value as a JSON object; an empty one when it is not an object."""
    return cast("JsonObject", value) if isinstance(value, dict) else {}


def json_objects(value: object) -> list[JsonObject]:
    """The JSON objects of a JSON list; anything else in it, and a value that is not a list, is skipped."""
    items = cast("list[object]", value) if isinstance(value, list) else []
    return [cast("JsonObject", item) for item in items if isinstance(item, dict)]


def json_int(value: object) -> int:
    """The value as an integer count; 0 when it is not an integer (a boolean is not one here)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def json_str(value: object) -> str | None:
    """The value when it is a string, else None."""
    return value if isinstance(value, str) else None
