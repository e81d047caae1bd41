"""A definition's compact permission map, such as `{"*": "deny", "Grep": "allow", "Read": {"*.env": "deny"}}`.

The map can only narrow what the server decided; `policy.decide` applies it. The entry for a tool is the most
specific key: the exact name, then the name in another case, then `Read`/`Edit` for the tools those rules
cover, then the longest matching glob such as `mcp__github__*`, then `*`. A nested map keys path globs (file
tools), command patterns (Bash) or `domain:HOST` / URL globs (WebFetch). Among its matching keys the strictest
value wins; `*` applies only when no other key matches. A value that is not allow, ask or deny counts as deny.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ..core.json_values import JsonObject
from .bash import ShellSyntaxError, SimpleCommand, matching_variants, split_command
from .patterns import Bases, PatternError, compile_command_pattern, compile_domain_pattern, compile_path_pattern
from .rules import EDIT_TOOLS, PATH_TOOLS, READ_TOOLS
from .targets import PathTarget, TargetError, path_target
from .verdict import DECISIONS, Decision, Verdict, strictest

_FALLBACK_KEYS = frozenset({"*", "**"})


@dataclass(frozen=True, slots=True)
class _Entry:
    key: str
    decision: Decision
    valid: bool


def agent_map_problems(agent_map: Mapping[str, object]) -> tuple[str, ...]:
    """What is wrong in a permission map (bad values, nested keys that do not compile), for the validator."""
    problems: list[str] = []
    for key, value in agent_map.items():
        if isinstance(value, Mapping):
            for inner_key, inner_value in cast("Mapping[Any, object]", value).items():
                label = f"permission.{key}.{inner_key}"
                if not _is_decision(inner_value):
                    problems.append(f"{label}: {inner_value!r} is not allow, ask or deny (treated as deny)")
                if not _compiles(str(key), str(inner_key)):
                    problems.append(f"{label}: the pattern does not compile (treated as matching everything)")
        elif not _is_decision(value):
            problems.append(f"permission.{key}: {value!r} is not allow, ask or deny (treated as deny)")
    return tuple(problems)


def agent_map_verdict(
    agent_map: Mapping[str, object], tool: str, arguments: JsonObject, *, bases: Bases
) -> Verdict | None:
    """What the map says about this call, or None when no entry applies."""
    found = _tool_entry(agent_map, tool)
    if found is None:
        return None
    key, value = found
    if not isinstance(value, Mapping):
        entry = _entry(key, value)
        return _verdict(tool, [key], entry)
    nested = cast("Mapping[Any, object]", value)
    entries = [_entry(str(inner_key), inner_value) for inner_key, inner_value in nested.items()]
    chosen = _nested_entry(tool, entries, arguments, bases)
    return None if chosen is None else _verdict(tool, [key, chosen.key], chosen)


def _verdict(tool: str, keys: list[str], entry: _Entry) -> Verdict:
    path = " > ".join(f'"{key}"' for key in keys)
    shown = entry.decision if entry.valid else f"an invalid value (treated as {entry.decision})"
    return Verdict(
        entry.decision, f"the agent's permission map sets {path} to {shown} for {tool}", f"permission {path}"
    )


def _is_decision(value: object) -> bool:
    return isinstance(value, str) and value in DECISIONS


def _entry(key: str, value: object) -> _Entry:
    if isinstance(value, str) and value in DECISIONS:
        return _Entry(key, value, valid=True)
    return _Entry(key, "deny", valid=False)


def _tool_entry(agent_map: Mapping[str, object], tool: str) -> tuple[str, object] | None:
    items = [(str(key), value) for key, value in agent_map.items()]
    ranked = [(rank, index) for index, (key, _) in enumerate(items) if (rank := _rank(key, tool)) is not None]
    if ranked:
        return items[min(ranked)[1]]
    lowered = tool.lower()
    globs = [
        (key, value)
        for key, value in items
        if key not in _FALLBACK_KEYS and "*" in key and fnmatch.fnmatchcase(lowered, key.lower())
    ]
    if globs:
        return max(globs, key=lambda item: len(item[0]))
    return next(((key, value) for key, value in items if key in _FALLBACK_KEYS), None)


def _rank(key: str, tool: str) -> int | None:
    """How specifically a non-glob key names the tool: 0 exactly, then other case, family, MCP server."""
    if key == tool:
        return 0
    if key.lower() == tool.lower():
        return 1
    family = "read" if tool in READ_TOOLS else "edit" if tool in EDIT_TOOLS else None
    if family is not None and key.lower() == family:
        return 2
    if key.startswith("mcp__") and key.count("__") == 1 and tool.startswith(key + "__"):
        return 3
    return None


def _nested_entry(tool: str, entries: list[_Entry], arguments: JsonObject, bases: Bases) -> _Entry | None:
    fallback = next((entry for entry in entries if entry.key in _FALLBACK_KEYS), None)
    specific = [entry for entry in entries if entry.key not in _FALLBACK_KEYS]
    try:
        if tool == "Bash":
            return _bash_entry(arguments.get("command"), specific, fallback)
        matched = list(_matching(tool, specific, arguments, bases))
    except (TargetError, ShellSyntaxError):
        # The call cannot be compared with the patterns: take the strictest entry the map has.
        return _strictest_entry(entries)
    return _strictest_entry(matched) or fallback


def _matching(tool: str, entries: list[_Entry], arguments: JsonObject, bases: Bases) -> Iterator[_Entry]:
    if tool in PATH_TOOLS:
        target = path_target(tool, arguments, cwd=bases.cwd, home=bases.home)
        if target is None:
            return
        for entry in entries:
            if _path_matches(entry, target, bases):
                yield entry
    elif tool == "WebFetch":
        url = arguments.get("url")
        if not isinstance(url, str):
            raise TargetError("WebFetch needs 'url' as a string")
        for entry in entries:
            if _url_matches(entry.key, url):
                yield entry


def _path_matches(entry: _Entry, target: PathTarget, bases: Bases) -> bool:
    try:
        pattern = compile_path_pattern(entry.key)
    except PatternError:
        return True
    hits = [pattern.matches(path, bases, directory=target.directory) for path in target.paths]
    return all(hits) if entry.decision == "allow" else any(hits)


def _url_matches(key: str, url: str) -> bool:
    if key.startswith("domain:"):
        try:
            return compile_domain_pattern(key).matches(url)
        except PatternError:
            return True
    return fnmatch.fnmatchcase(url, key)


def _bash_entry(command: object, specific: list[_Entry], fallback: _Entry | None) -> _Entry | None:
    if not isinstance(command, str):
        raise TargetError("Bash needs 'command' as a string")
    chosen: list[_Entry] = []
    for piece in split_command(command):
        matched = [entry for entry in specific if _command_matches(entry, piece)]
        entry = _strictest_entry(matched) or fallback
        if entry is not None:
            chosen.append(entry)
    whole = " ".join(command.split())
    chosen += [
        entry for entry in specific if entry.decision != "allow" and compile_command_pattern(entry.key).matches(whole)
    ]
    return _strictest_entry(chosen)


def _command_matches(entry: _Entry, piece: SimpleCommand) -> bool:
    pattern = compile_command_pattern(entry.key)
    if entry.decision == "allow":
        return pattern.matches(piece.text)
    return any(pattern.matches(text) for text in matching_variants(piece))


def _strictest_entry(entries: list[_Entry]) -> _Entry | None:
    decision = strictest([entry.decision for entry in entries])
    return next((entry for entry in entries if entry.decision == decision), None)


def _compiles(tool_key: str, key: str) -> bool:
    if key in _FALLBACK_KEYS:
        return True
    lowered = tool_key.lower()
    try:
        if lowered in {name.lower() for name in PATH_TOOLS}:
            compile_path_pattern(key)
        elif lowered == "webfetch" and key.startswith("domain:"):
            compile_domain_pattern(key)
    except PatternError:
        return False
    return True
