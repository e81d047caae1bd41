"""Turn frontmatter fields (or `--agents` JSON entries) into an `AgentDefinition`."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

from ..core.errors import DefinitionError
from ..core.json_values import JsonObject
from ..core.names import EFFORT_LEVELS, MODE_ALIASES
from ..core.names import MODEL_ALIASES as ALIAS_TO_MODEL_ID
from ..core.names import PERMISSION_MODES as CLAUDE_PERMISSION_MODES
from ._coerce import as_list, as_object
from .frontmatter import read_frontmatter
from .model import AgentDefinition, LoadError, McpServerSpec, MemoryScope, Source

MAX_NAME_LENGTH: Final = 256
"""Names are taken as written, as Claude Code takes them (dots, spaces and non-ASCII letters included), except that
they must not start with `-`, hold `:` (reserved for `plugin:agent` ids), control characters, or pass this length."""
MODEL_ALIASES: Final = frozenset({*ALIAS_TO_MODEL_ID, "inherit"})
PERMISSION_MODES: Final = ("default", "acceptEdits", "auto", "dontAsk", "bypassPermissions", "plan")
"""The modes a file may name, in the order errors list them: Claude Code's, and its older `auto`."""
assert {*PERMISSION_MODES, "manual"} == {*CLAUDE_PERMISSION_MODES, *MODE_ALIASES}
MEMORY_SCOPES: Final[tuple[MemoryScope, ...]] = ("user", "project", "local")
ISOLATION_MODES: Final = ("worktree", "remote")
COLORS: Final = ("red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan")
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
        "maxBudgetUsd",
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

T = TypeVar("T")


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
    lenient = _Lenient(fields)
    return AgentDefinition(
        name=f"{plugin}:{name}" if plugin else name,
        description=_description(fields),
        prompt=body,
        tools=_tool_list(fields, "tools"),
        disallowed_tools=_tool_list(fields, "disallowedTools") or (),
        model=lenient.get("model", _model, "inherit"),
        permission_mode=lenient.get("permissionMode", _permission_mode, None),
        max_turns=lenient.get("maxTurns", _MAX_TURNS, None),
        max_budget_usd=_budget(fields.get("maxBudgetUsd")),
        skills=lenient.get("skills", _SKILLS, ()),
        mcp_servers=_mcp_servers(fields, lenient.warnings),
        hooks=_mapping(fields, "hooks"),
        memory=lenient.get("memory", _memory, None),
        background=lenient.get("background", _BACKGROUND, False),
        effort=lenient.get("effort", _effort, None),
        isolation=lenient.get("isolation", _isolation, None),
        color=lenient.get("color", _color, None),
        initial_prompt=lenient.get("initialPrompt", _INITIAL_PROMPT, None),
        omit_claude_md=lenient.get("omitClaudeMd", _OMIT_CLAUDE_MD, False),
        critical_reminder=lenient.get("criticalSystemReminder_EXPERIMENTAL", _CRITICAL_REMINDER, None),
        permission=_mapping(fields, "permission"),
        source=source,
        path=path,
        plugin=plugin,
        unknown_fields=unknown,
        extra={key: fields[key] for key in (*unknown, *_KEPT_IN_EXTRA) if key in fields},
        warnings=tuple(lenient.warnings),
    )


class _Lenient:
    """Reads optional fields the way Claude Code does: a bad value drops only that field, with a warning.

    Fields whose loss would widen what the agent may do (`tools`, `disallowedTools`, `hooks`, `permission`) are not
    read through this: a bad value there rejects the file.
    """

    def __init__(self, fields: Mapping[str, Any]) -> None:
        self.fields = fields
        self.warnings: list[str] = []

    def get(self, key: str, convert: Callable[[Any], T], default: T) -> T:
        value = self.fields.get(key)
        if value is None:
            return default
        try:
            return convert(value)
        except DefinitionError as exc:
            self.warnings.append(f"{exc.message}; the field is ignored")
            return default


def _name(fields: Mapping[str, Any], fallback: str | None) -> str:
    name = _text(fields, "name")
    if name is None or not name.strip():
        if fallback is None:
            raise DefinitionError("missing required field 'name'")
        name = fallback
    name = name.strip()
    problem = _name_problem(name)
    if problem is not None:
        raise DefinitionError(f"invalid name {name!r}: {problem}")
    return name


def _name_problem(name: str) -> str | None:
    if name.startswith("-"):
        return "names must not start with '-'"
    ascii_name = name.isascii()  # most are: NFKC leaves them as they are, and only 0-31 and 127 are controls there
    if ":" in (name if ascii_name else unicodedata.normalize("NFKC", name)):
        return "names must not contain ':' (it separates a plugin's name from its agent's)"
    if not name.isprintable() if ascii_name else any(unicodedata.category(char).startswith("C") for char in name):
        return "names must not contain control characters or line breaks"
    if len(name) > MAX_NAME_LENGTH:
        return f"names must be at most {MAX_NAME_LENGTH} characters"
    return None


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
        entries = _split_outside_parentheses(value, by_space=True)
    else:
        items = as_list(value)
        if items is None or not all(isinstance(item, str) for item in items):
            raise DefinitionError(f"{key} must be a comma-separated string or a list of tool names")
        entries = [part for item in items for part in _split_outside_parentheses(item, by_space=True)]
    if "*" in entries and key == "tools":
        return None
    return tuple(dict.fromkeys(entries))


def tool_entries(value: object) -> tuple[str, ...]:
    """A tool list as agent files and skills write it (a comma- or space-separated string, or a list), each
    `Bash(git add *, git commit *)` kept whole; anything else is no entries."""
    if isinstance(value, str):
        return tuple(dict.fromkeys(_split_outside_parentheses(value, by_space=True)))
    items = as_list(value) or []
    entries = [part for item in items if isinstance(item, str) for part in _split_outside_parentheses(item, True)]
    return tuple(dict.fromkeys(entries))


def _split_outside_parentheses(value: str, by_space: bool = False) -> list[str]:
    """Split on commas (and with `by_space`, on whitespace, as Claude Code splits `tools: Read Grep`), except inside
    `Bash(git add *, git commit *)`-style patterns."""
    if "(" not in value:  # most lists: the same split, without a Python step per character
        if by_space:
            return value.replace(",", " ").split()
        return [entry.strip() for entry in value.split(",") if entry.strip()]
    entries: list[str] = []
    depth = 0
    current: list[str] = []
    for char in value:
        if depth == 0 and (char == "," or (by_space and char.isspace())):
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


def _model(value: Any) -> str:
    model = _text_value(value, key="model").strip()
    if not model:
        return "inherit"
    return model.lower() if model.lower() in MODEL_ALIASES else model


def _permission_mode(value: Any) -> str:
    mode = _text_value(value, key="permissionMode").strip()
    if mode == "manual":
        return "default"
    if mode not in PERMISSION_MODES:
        allowed = ", ".join((*PERMISSION_MODES, "manual"))
        raise DefinitionError(f"invalid permissionMode {mode!r}; allowed: {allowed}")
    return mode


def _positive_int(value: Any, *, key: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise DefinitionError(f"{key} must be a positive integer, got {value!r}")
    return value


def _budget(value: Any) -> float | None:
    """A spending limit: a bad value rejects the file, since dropping the field would lift the limit."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip().removeprefix("$"))
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise DefinitionError(f"maxBudgetUsd must be a positive amount of USD, got {value!r}")
    return float(value)


def _string_list(value: Any, *, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(_split_outside_parentheses(value))
    items = as_list(value)
    if items is not None and all(isinstance(item, str) for item in items):
        return tuple(item.strip() for item in items if item.strip())
    raise DefinitionError(f"{key} must be a comma-separated string or a list of names")


def _mcp_servers(fields: Mapping[str, Any], warnings: list[str]) -> tuple[McpServerSpec, ...]:
    """Server names and inline servers; a bad entry (or a bad field) is dropped with a warning, as Claude Code
    drops it."""
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
    if items is None:
        warnings.append("mcpServers must be a list of server names or {name: config} mappings; the field is ignored")
        return ()
    specs: list[McpServerSpec] = []
    for item in items:
        spec = item if isinstance(item, str) else as_object(item)
        if spec is None:
            warnings.append(
                f"mcpServers entry {item!r} is neither a server name nor a {{name: config}} mapping; it is ignored"
            )
        else:
            specs.append(spec)
    return tuple(specs)


def _mapping(fields: Mapping[str, Any], key: str) -> JsonObject | None:
    value = fields.get(key)
    if value is None:
        return None
    mapping = as_object(value)
    if mapping is None:
        raise DefinitionError(f"{key} must be a mapping")
    return mapping


def _memory(value: Any) -> MemoryScope:
    text = _text_value(value, key="memory").strip()
    for scope in MEMORY_SCOPES:
        if text == scope:
            return scope
    raise DefinitionError(f"invalid memory {text!r}; allowed: {', '.join(MEMORY_SCOPES)}")


def _effort(value: Any) -> str:
    """A level (`low` ... `max`) or an integer, as Claude Code accepts them."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = _text_value(value, key="effort").strip()
    if text.lower() in EFFORT_LEVELS:
        return text.lower()
    if re.fullmatch(r"[+-]?\d+", text):
        return text
    raise DefinitionError(f"invalid effort {text!r}; allowed: {', '.join(EFFORT_LEVELS)} or an integer")


def _isolation(value: Any) -> str:
    text = _text_value(value, key="isolation").strip()
    if text not in ISOLATION_MODES:
        raise DefinitionError(f"invalid isolation {text!r}; allowed: {', '.join(ISOLATION_MODES)}")
    return text


def _color(value: Any) -> str:
    text = _text_value(value, key="color").strip()
    if text.lower() not in COLORS:
        raise DefinitionError(f"invalid color {text!r}; allowed: {', '.join(COLORS)}")
    return text.lower()


def _flag(value: Any, *, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise DefinitionError(f"{key} must be true or false, got {value!r}")


def _text(fields: Mapping[str, Any], key: str) -> str | None:
    """A text field; YAML numbers and dates (`name: 2024`) are taken as written."""
    value = fields.get(key)
    return None if value is None else _text_value(value, key=key)


def _text_value(value: Any, *, key: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        raise DefinitionError(f"{key} must be text, not a {'list' if isinstance(value, list) else 'mapping'}")
    return str(value)


# Built once: `_build` runs for every agent file, thousands at a first start.
_MAX_TURNS = partial(_positive_int, key="maxTurns")
_SKILLS = partial(_string_list, key="skills")
_BACKGROUND = partial(_flag, key="background")
_INITIAL_PROMPT = partial(_text_value, key="initialPrompt")
_OMIT_CLAUDE_MD = partial(_flag, key="omitClaudeMd")
_CRITICAL_REMINDER = partial(_text_value, key="criticalSystemReminder_EXPERIMENTAL")
