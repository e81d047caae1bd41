"""The YAML most agent files' frontmatter is, read without PyYAML: one top-level `key: value` per field.

Parsing thousands of agent files was most of a first start's CPU, and most of that was PyYAML (even its C loader,
and importing it); yet nearly every file's frontmatter is as plain as `name: x` / `description: Use when...` /
`model: sonnet`. `plain_mapping` reads such text and gives exactly what PyYAML's safe loader gives for it, or None
for anything else, which PyYAML then parses:

- a line is blank (spaces only), or `key:` at column 0, a key of letters, digits, `_` and `-` starting with a
  letter or `_`, then nothing or spaces and a value (trailing spaces are not part of it);
- a value is: plain text starting with an ASCII letter (so never a number or a date) with no `: `, ` #` or `:` at
  its end, where YAML 1.1's words for true, false and null mean those; text in double quotes with no `"` or `\\`
  inside, or in single quotes with no `'` inside; `[]`, or `[a, b]` of such plain words with no `:`, `?`, `#` or quote;
  or a block scalar (`>`, `>-`, `|`, `|-`) whose lines are all indented alike, none blank, none ending in a space;
- the text holds no tab and no character outside what YAML calls printable, nor one PyYAML reads as a line break.

A later key replaces an earlier one of the same name, as in PyYAML.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.json_values import JsonObject

_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]{0,200}):(?: +(.*))?")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_FLOW_ITEM = re.compile(r"[A-Za-z][^,?\[\]{}:#'\"]*")
_OUTSIDE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
"""Tabs, control characters, U+0085 and U+2028/9 (line breaks to PyYAML), U+FEFF, U+FFFE/F, and carriage returns."""
_WORDS: dict[str, bool | None] = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("null", "Null", "NULL"), None),
}
"""The plain words PyYAML's resolver (YAML 1.1) reads as booleans or null, letter-led ones only."""
_BLOCK_JOINERS = {">": " ", ">-": " ", "|": "\n", "|-": "\n"}


class _NotPlain(Exception):
    pass


def plain_mapping(text: str) -> JsonObject | None:
    """The mapping `text` holds when it is plain one-line `key: value` YAML (see the module), else None."""
    if _OUTSIDE.search(text) is not None:
        return None
    lines = text.split("\n")
    fields: JsonObject = {}
    index = 0
    try:
        while index < len(lines):
            line = lines[index]
            index += 1
            match = _LINE.fullmatch(line)
            if match is None:
                if line.strip(" "):
                    return None
                continue
            key, value = match.group(1), (match.group(2) or "").rstrip(" ")
            if key in _WORDS:
                return None
            if value in _BLOCK_JOINERS:
                fields[key], index = _block(lines, index, value)
            else:
                fields[key] = _value(value)
    except _NotPlain:
        return None
    return fields


def _value(value: str) -> Any:
    if not value:
        return None
    first = value[0]
    if first in _LETTERS:
        if ": " in value or " #" in value or value[-1] == ":":
            raise _NotPlain
        return _WORDS.get(value, value)
    inner = value[1:-1]
    if len(value) >= 2 and first == value[-1] and first in "\"'" and first not in inner:
        if first == "'" or "\\" not in inner:
            return inner
    elif first == "[" and value[-1] == "]":
        items = [item.strip(" ") for item in inner.split(",")] if inner.strip(" ") else []
        if all(_FLOW_ITEM.fullmatch(item) for item in items):
            return [_WORDS.get(item, item) for item in items]
    raise _NotPlain


def _block(lines: list[str], index: int, header: str) -> tuple[str, int]:
    """A block scalar's text, and the index of the line after it."""
    content: list[str] = []
    indent = 0
    while index < len(lines) and lines[index].startswith(" "):
        line = lines[index]
        text = line.lstrip(" ")
        if not content:
            indent = len(line) - len(text)
        if not text or text.endswith(" ") or len(line) - len(text) != indent:
            raise _NotPlain  # a blank, trailing-space or differently indented line: YAML's finer rules apply
        content.append(text)
        index += 1
    if not content or (index < len(lines) and not lines[index]):
        raise _NotPlain
    # `>` and `|` keep the last line break, and the text's last line has none
    kept_break = "\n" if index < len(lines) and not header.endswith("-") else ""
    return _BLOCK_JOINERS[header].join(content) + kept_break, index
