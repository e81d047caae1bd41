"""Text from a model made safe to show: inert for people, well-formed for the wire.

A model (or a file it read) can write characters that act on whoever displays them instead of being shown: escape
sequences that set the clipboard (OSC 52), clear the screen or hide text; bidi controls that reorder what follows;
zero-width and other invisible characters. `inert` writes each of them as a visible escape (`\\x1b`, `\\u202e`,
`\\U000e0041`), so a person sees that something was there, at every place text leaves for a person: the CLI, the
permission question, the dashboard, the App view, progress and log notifications. What the host's model reads
(`<task_result>`) is not changed.

What is escaped:
- control characters (Unicode category Cc): C0 but newline and tab, DEL, C1; a carriage return only when no
  newline follows it (a CRLF line ending is kept);
- format characters (Cf): bidi embeddings, overrides and isolates, the marks LRM, RLM and ALM, zero-width space,
  non-joiner and joiner, word joiner, invisible operators, the byte order mark, soft hyphen, tag characters, ...;
- the line and paragraph separators (Zl, Zp), which some displays break lines at and others do not;
- the other code points Unicode says a font draws as nothing (Default_Ignorable_Code_Point: Hangul fillers,
  combining grapheme joiner, Mongolian and supplementary variation selectors, ...), except the variation selectors
  U+FE00-U+FE0F that emoji need;
- lone surrogates (Cs), which are not text at all.

The ranges are written out rather than read from `unicodedata` at import (that costs ~100 ms of start-up); a test
checks them against `unicodedata`'s categories.

`well_formed` is the wire's side of the same problem: a lone surrogate cannot be encoded as UTF-8, and one in a
message the server writes used to end the stdio server. It becomes U+FFFD; nothing else changes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from ..core.well_formed import well_formed, well_formed_values

__all__ = ["inert", "inert_values", "well_formed", "well_formed_values"]

_HIDDEN = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad"
    "\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    "\ud800-\udfff"
    "\ufeff\uffa0\ufff0-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_NOT_INERT = re.compile(f"[{_HIDDEN}\r]")
_NOT_INERT_ON_ONE_LINE = re.compile(f"[{_HIDDEN}\t\n\r]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    short = _SHORT.get(char)
    if short is not None:
        return short
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    return f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def _escape_but_crlf(match: re.Match[str]) -> str:
    if match.group() == "\r" and match.string.startswith("\n", match.end()):
        return "\r"  # a line ending, not a return to the start of the line
    return _escape(match)


def inert(text: str, *, one_line: bool = False) -> str:
    """`text` with every character that would act on a display, or not show at all, written as a visible escape.
    `one_line` escapes newlines and tabs too, for a field that must stay on its line (a name, a table cell).
    Applying it twice changes nothing more than applying it once."""
    if text.isascii() and text.isprintable():
        return text
    if one_line:
        return _NOT_INERT_ON_ONE_LINE.sub(_escape, text)
    return _NOT_INERT.sub(_escape_but_crlf, text)


def inert_values(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with `inert` applied to every string in it, keys too."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value)
        return {inert_values(key): inert_values(item) for key, item in items.items()}
    if isinstance(value, list | tuple):
        return [inert_values(item) for item in cast("list[object]", value)]
    return value
