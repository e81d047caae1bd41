"""Text made well-formed: a lone surrogate (half of a UTF-16 pair, which a model's JSON can carry as `\\ud800`)
cannot be encoded as UTF-8, so a message, transcript line or model request holding one cannot be written. Each
becomes U+FFFD; nothing else changes. Used where text from a model enters the run (the loop) and where answers
leave the server (the wire); `render.inert` builds the people's side on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, so that it can be encoded as UTF-8."""
    if text.isascii() or _LONE_SURROGATE.search(text) is None:
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def well_formed_values(value: Any) -> Any:
    """A JSON-like value with `well_formed` applied to every string in it (keys too). The value itself when no
    string needed it: the common case copies nothing."""
    cleaned, _ = _well_formed(value)
    return cleaned


def _well_formed(value: object) -> tuple[object, bool]:
    """The cleaned value, and whether anything in it changed."""
    if isinstance(value, str):
        cleaned = well_formed(value)
        return cleaned, cleaned is not value
    if isinstance(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        pairs = [(_well_formed(key), _well_formed(item)) for key, item in mapping.items()]
        if not any(key[1] or item[1] for key, item in pairs):
            return mapping, False
        return {key[0]: item[0] for key, item in pairs}, True
    if isinstance(value, list | tuple):
        sequence = cast("list[object]", value)
        elements = [_well_formed(item) for item in sequence]
        if not any(changed for _, changed in elements):
            return sequence, False
        return [element for element, _ in elements], True
    return value, False
