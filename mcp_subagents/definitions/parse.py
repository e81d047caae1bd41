"""Turn frontmatter fields (or `--agents` JSON entries) into an `AgentDefinition`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..errors import DefinitionError
from ..messages import JsonObject
from ..models.resolve import MODEL_ALIASES as ALIAS_TO_MODEL_ID
from ._coerce import as_list, as_object
from .frontmatter import read_frontmatter
from .model import AgentDefinition, LoadError, McpServerSpec, MemoryScope, Source

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
"""Accepted names. The contract asks for lowercase letters, digits and hyphens, but the built-ins are `Explore`,
`Plan` and `Bash`, so case and underscores are accepted here and only the validator flags them."""
MODEL_ALIASES: Final = frozenset({*ALIAS_TO_MODEL_ID, "inherit"})
PERMISSION_MODES: Final = ("default", "acceptEdits", "auto", "dontAsk", "bypassPermissions", "plan")
MEMORY_SCOPES: Final[tuple[MemoryScope, ...]] = ("user", "project", "local")
DESCRIPTION_FALLBACKS: Final = ("when-to-use", "when_to_use")
KNOWN_FIELDS: Final = frozenset(
    {
        "name",
        "description",
        *DESCRIPTION_FALLBACKS,
        "tools",
        "disallowedTools",
        "model",
        "permissionMode",
        "maxTurns",
        "skills",
        "mcpServers",
        "hooks",
        "memory",
        "background",
        "effort",
        "isolation",
        "color",
        "initialPrompt",
        "omitClaudeMd",
        "experimental",
        "criticalSystemReminder_EXPERIMENTAL",
        "permission",
    }
)
_KEPT_IN_EXTRA: Final = frozenset({"experimental"})


def parse_definition(text: str, *, path: Path | None, source: Source, plugin: str | None = None) -> AgentDefinition:
    """Parse one Markdown agent file: YAML frontmatter for the fields, the body for the system prompt.

    A missing `name` falls back to the file's stem. Plugin agents get the id `plugin:name`.

    Raises:
        DefinitionError: the frontmatter is missing or not YAML, or a field has a value the contract forbids.
    """
    frontmatter = read_frontmatter(text, path)
    fallback_name = path.stem if path is not None else None
    return build_definition(
        frontmatter.fields,
        frontmatter.body,
        path=path,
        source=source,
        plugin=plugin,
        fallback_name=fallback_name,
    )


def parse_json_agents(
    data: str | Mapping[str, Any], *, source: Source, origin: str = "--agents"
) -> tuple[list[AgentDefinition], list[LoadError]]:
    """Parse `{"name": {"description", "prompt", "tools", ...}}` as given to `--agents` or in a policy file.

    Each entry takes the frontmatter fields plus `prompt` for the system prompt. Broken entries (and broken JSON)
    become `LoadError`s labelled with `origin`; the good entries still load.
    """
    if isinstance(data, str):
        try:
            entries = as_object(json.loads(data))
        except json.JSONDecodeError as exc:
            return [], [LoadError(origin, f"invalid JSON: {exc}")]
    else:
        entries = as_object(data)
    if entries is None:
        return [], [LoadError(origin, "agents JSON must be an object mapping agent names to definitions")]
    definitions: list[AgentDefinition] = []
    errors: list[LoadError] = []
    for name, entry in entries.items():
        try:
            fields = as_object(entry)
            if fields is None:
                raise DefinitionError("must be an object with at least description and prompt")
            prompt = _text(fields, "prompt") or ""
            fields = {key: value for key, value in fields.items() if key != "prompt"} | {"name": name}
            definitions.append(build_definition(fields, prompt.strip(), path=None, source=source))
        except DefinitionError as exc:
            errors.append(LoadError(origin, f"agent {name!r}: {exc.message}"))
    return definitions, errors


def build_definition(
    fields: Mapping[str, Any],
    body: str,
    *,
    path: Path | None,
    source: Source,
    plugin: str | None = None,
    fallback_name: str | None = None,
) -> AgentDefinition:
    """Check and convert already-parsed fields; shared by Markdown files and JSON definitions.

    Raises:
        DefinitionError: naming the field and what it accepts.
    """
    try:
        return _build(fields, body, path=path, source=source, plugin=plugin, fallback_name=fallback_name)
    except DefinitionError as exc:
        if exc.path is None and path is not None:
            raise DefinitionError(exc.message, path) from exc
        raise


def _build(
    fields: Mapping[str, Any],
    body: str,
    *,
    path: Path | None,
    source: Source,
    plugin: str | None,
    fallback_name: str | None,
) -> AgentDefinition:
    name = _name(fields, fallback_name)
    unknown = tuple(key for key in fields if key not in KNOWN_FIELDS)
    return AgentDefinition(
        name=f"{plugin}:{name}" if plugin else name,
        description=_description(fields),
        prompt=body,
        tools=_tool_list(fields, "tools"),
        disallowed_tools=_tool_list(fields, "disallowedTools") or (),
        model=_model(fields),
        permission_mode=_permission_mode(fields),
        max_turns=_positive_int(fields, "maxTurns"),
        skills=_string_list(fields, "skills"),
        mcp_servers=_mcp_servers(fields),
        hooks=_mapping(fields, "hooks"),
        memory=_memory(fields),
        background=_flag(fields, "background"),
        effort=_text(fields, "effort"),
        isolation=_text(fields, "isolation"),
        color=_text(fields, "color"),
        initial_prompt=_text(fields, "initialPrompt"),
        omit_claude_md=_flag(fields, "omitClaudeMd"),
        critical_reminder=_text(fields, "criticalSystemReminder_EXPERIMENTAL"),
        permission=_mapping(fields, "permission"),
        source=source,
        path=path,
        plugin=plugin,
        unknown_fields=unknown,
        extra={key: fields[key] for key in (*unknown, *_KEPT_IN_EXTRA) if key in fields},
    )


def _name(fields: Mapping[str, Any], fallback: str | None) -> str:
    name = _text(fields, "name")
    if not name:
        if fallback is None:
            raise DefinitionError("missing required field 'name'")
        name = fallback
    if not NAME_PATTERN.fullmatch(name):
        raise DefinitionError(
            f"invalid name {name!r}: use letters, digits, hyphens and underscores, starting with a letter or digit"
            " (no ':' or spaces)"
        )
    return name


def _description(fields: Mapping[str, Any]) -> str:
    for key in ("description", *DESCRIPTION_FALLBACKS):
        text = _text(fields, key)
        if text and text.strip():
            # One-line descriptions (the format Claude Code's /agents command wrote) carry literal `\n` escapes in
            # plain YAML scalars, meant as line breaks.
            return text.strip().replace("\\n", "\n")
    raise DefinitionError("missing required field 'description' (when to delegate to this agent)")


def _tool_list(fields: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """None when absent or `*` is listed (all tools); `()` for an empty list or string (no tools)."""
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        entries = _split_outside_parentheses(value)
    else:
        items = as_list(value)
        if items is None or not all(isinstance(item, str) for item in items):
            raise DefinitionError(f"{key} must be a comma-separated string or a list of tool names")
        entries = [part for item in items for part in _split_outside_parentheses(item)]
    if "*" in entries and key == "tools":
        return None
    return tuple(dict.fromkeys(entries))


def _split_outside_parentheses(value: str) -> list[str]:
    """Split on commas, except those inside `Bash(git add *, git commit *)`-style patterns."""
    entries: list[str] = []
    depth = 0
    current: list[str] = []
    for char in value:
        if char == "," and depth == 0:
            entries.append("".join(current))
            current = []
            continue
        if char == "(":
            depth += 1
        elif char == ")" and depth > 0:
            depth -= 1
        current.append(char)
    entries.append("".join(current))
    return [entry.strip() for entry in entries if entry.strip()]


def _model(fields: Mapping[str, Any]) -> str:
    model = (_text(fields, "model") or "").strip()
    if not model:
        return "inherit"
    return model.lower() if model.lower() in MODEL_ALIASES else model


def _permission_mode(fields: Mapping[str, Any]) -> str | None:
    mode = _text(fields, "permissionMode")
    if mode is None:
        return None
    if mode == "manual":
        return "default"
    if mode not in PERMISSION_MODES:
        allowed = ", ".join((*PERMISSION_MODES, "manual"))
        raise DefinitionError(f"invalid permissionMode {mode!r}; allowed: {allowed}")
    return mode


def _positive_int(fields: Mapping[str, Any], key: str) -> int | None:
    value = fields.get(key)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DefinitionError(f"{key} must be a positive integer, got {value!r}")
    return value


def _string_list(fields: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = fields.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(_split_outside_parentheses(value))
    items = as_list(value)
    if items is not None and all(isinstance(item, str) for item in items):
        return tuple(item.strip() for item in items if item.strip())
    raise DefinitionError(f"{key} must be a comma-separated string or a list of names")


def _mcp_servers(fields: Mapping[str, Any]) -> tuple[McpServerSpec, ...]:
    value = fields.get("mcpServers")
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    servers = as_object(value)
    if servers is not None:
        # The `.mcp.json` shape `{name: config, ...}`: one inline server per key.
        return tuple({name: config} for name, config in servers.items())
    items = as_list(value)
    if items is not None:
        specs: list[McpServerSpec] = []
        for item in items:
            spec = item if isinstance(item, str) else as_object(item)
            if spec is None:
                raise DefinitionError("mcpServers entries must be server names or {name: config} mappings")
            specs.append(spec)
        return tuple(specs)
    raise DefinitionError("mcpServers must be a list of server names or {name: config} mappings")


def _mapping(fields: Mapping[str, Any], key: str) -> JsonObject | None:
    value = fields.get(key)
    if value is None:
        return None
    mapping = as_object(value)
    if mapping is None:
        raise DefinitionError(f"{key} must be a mapping")
    return mapping


def _memory(fields: Mapping[str, Any]) -> MemoryScope | None:
    value = _text(fields, "memory")
    if value is None:
        return None
    for scope in MEMORY_SCOPES:
        if value == scope:
            return scope
    raise DefinitionError(f"invalid memory {value!r}; allowed: {', '.join(MEMORY_SCOPES)}")


def _flag(fields: Mapping[str, Any], key: str) -> bool:
    value = fields.get(key)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise DefinitionError(f"{key} must be true or false, got {value!r}")


def _text(fields: Mapping[str, Any], key: str) -> str | None:
    """A text field; YAML numbers and dates (`effort: 3`, `name: 2024`) are taken as written."""
    value = fields.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        raise DefinitionError(f"{key} must be text, not a {'list' if isinstance(value, list) else 'mapping'}")
    return str(value)
