"""Permission rules as Claude Code writes them in a settings file: the grammar, parsing, and loading.

A rule is `Tool` (the whole tool) or `Tool(specifier)`: `Read(./src/**)`, `Edit(**/*.env)`, `Bash(git status)`,
`Bash(npm run test:*)`, `Bash(git diff *)`, `WebFetch(domain:example.com)`, `mcp__server`, `mcp__server__*`,
`mcp__server__tool`, `Task(Name)` / `Agent(Name)`. `Tool(*)` means the whole tool.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

from ..config.claude_settings import ClaudeSettings, SettingsFile
from ..core.errors import ConfigError
from ..core.names import AGENT_TOOLS
from .modes import MODE_ALIASES, MODES
from .patterns import (
    CommandPattern,
    DomainPattern,
    PathPattern,
    PatternError,
    compile_command_pattern,
    compile_domain_pattern,
    compile_path_pattern,
)

RuleKind: TypeAlias = Literal["tool", "path", "command", "domain", "agent", "mcp", "other"]
RuleList: TypeAlias = Literal["allow", "ask", "deny"]
RULE_LISTS: tuple[RuleList, ...] = ("allow", "ask", "deny")

READ_TOOLS = frozenset({"Read", "Glob", "Grep", "NotebookRead", "LS"})
"""Tools a `Read(...)` rule covers."""
EDIT_TOOLS = frozenset({"Edit", "Write", "NotebookEdit", "MultiEdit"})
"""Tools an `Edit(...)` rule covers."""
PATH_TOOLS = READ_TOOLS | EDIT_TOOLS
MODE_NAMES = frozenset({*MODES, *MODE_ALIASES})

_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


class RuleError(ConfigError):
    """A permission rule that cannot be parsed; the message quotes it and says what is wrong."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRule:
    """One parsed rule."""

    text: str
    """The rule as written, without surrounding whitespace."""
    tool: str
    """The tool name before the parentheses (`mcp__server__*` keeps its `__*`)."""
    specifier: str | None = None
    """The text inside the parentheses; None for a whole-tool rule (`Tool` or `Tool(*)`)."""
    source: str = ""
    """Where the rule was written (a settings file path), for messages."""
    matcher: PathPattern | CommandPattern | DomainPattern | None = field(default=None, compare=False, repr=False)

    @property
    def kind(self) -> RuleKind:
        if self.tool in AGENT_TOOLS:
            return "agent"
        if self.tool.startswith("mcp__"):
            return "mcp"
        if self.specifier is None:
            return "tool"
        if isinstance(self.matcher, PathPattern):
            return "path"
        if isinstance(self.matcher, CommandPattern):
            return "command"
        if isinstance(self.matcher, DomainPattern):
            return "domain"
        return "other"

    def applies_to(self, tool: str) -> bool:
        """Whether this rule is about `tool` at all (its content is checked separately).

        `Read` rules cover every read tool and `Edit` rules every editing tool. Agent rules (`Task(X)`) never
        apply to tool calls: they remove agents from the catalog instead.
        """
        if self.tool in AGENT_TOOLS:
            return False
        if self.tool.startswith("mcp__"):
            name = self.tool.removesuffix("__*")
            if name.count("__") == 1:
                return tool == name or tool.startswith(name + "__")
            return tool == name
        if self.tool == "Read":
            return tool in READ_TOOLS
        if self.tool == "Edit":
            return tool in EDIT_TOOLS
        return tool == self.tool

    def where(self, rule_list: RuleList) -> str:
        """`"Bash(rm *)" in permissions.deny of /path/settings.json`."""
        origin = f" of {self.source}" if self.source else ""
        return f'"{self.text}" in permissions.{rule_list}{origin}'


def parse_rule(text: str, *, source: str = "") -> PermissionRule:
    """Parse one rule as written in a settings file's `permissions.allow`, `ask` or `deny` list.

    Raises:
        RuleError: the rule is empty, has unbalanced parentheses, a bad tool name, or content the tool's rules
            cannot hold (such as a WebFetch rule without `domain:`).
    """
    stripped = text.strip()

    def fail(problem: str) -> RuleError:
        return RuleError(f"Invalid permission rule {json.dumps(stripped)}: {problem}")

    if not stripped:
        raise fail("it is empty")
    name, parenthesis, rest = stripped.partition("(")
    name = name.strip()
    specifier: str | None = None
    if parenthesis:
        if not rest.endswith(")"):
            raise fail('it must end with ")"')
        specifier = rest[:-1].strip()
        if not specifier:
            raise fail(f'the parentheses are empty; write "{name}" for the whole tool, or put a pattern inside')
    elif ")" in stripped:
        raise fail('it has ")" without "("')
    _check_name(name, has_specifier=specifier is not None, fail=fail)
    if specifier == "*":
        specifier = None
    try:
        matcher = _compile(name, specifier)
    except PatternError as exc:
        raise fail(str(exc)) from None
    return PermissionRule(text=stripped, tool=name, specifier=specifier, source=source, matcher=matcher)


def _check_name(name: str, *, has_specifier: bool, fail: Callable[[str], RuleError]) -> None:
    if name.startswith("mcp__"):
        if has_specifier:
            raise fail("MCP rules take no parentheses: write mcp__server, mcp__server__* or mcp__server__tool")
        if not _TOOL_NAME.fullmatch(name.removesuffix("__*")) or name in ("mcp__", "mcp__*"):
            raise fail("an MCP rule names a server (mcp__server or mcp__server__*) or a tool (mcp__server__tool)")
        return
    if not name:
        raise fail("it has no tool name before the parentheses")
    if not _TOOL_NAME.fullmatch(name):
        raise fail(f"'{name}' is not a tool name (such as Bash, Read, Edit, WebFetch or mcp__server__tool)")


def _compile(tool: str, specifier: str | None) -> PathPattern | CommandPattern | DomainPattern | None:
    if specifier is None:
        return None
    if tool in PATH_TOOLS:
        return compile_path_pattern(specifier)
    if tool == "Bash":
        return compile_command_pattern(specifier)
    if tool == "WebFetch":
        return compile_domain_pattern(specifier)
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRules:
    """The rules in effect, by list, with what could not be used."""

    allow: tuple[PermissionRule, ...] = ()
    ask: tuple[PermissionRule, ...] = ()
    deny: tuple[PermissionRule, ...] = ()
    errors: tuple[str, ...] = ()
    """Entries that could not be used, each with its file and reason. Never fatal here."""
    bypass_disabled: bool = False
    """`permissions.disableBypassPermissionsMode: "disable"`: bypassPermissions acts as default."""
    deny_instead_of_prompting: bool = False
    """`permissions.denyInsteadOfPrompting: true`: a call that would ask is denied."""
    managed_only: bool = False
    """`allowManagedPermissionRulesOnly`: only the managed policy's rules count, so no answer can add one."""
    withheld_allow: tuple[PermissionRule, ...] = ()
    """Allow rules of an untrusted project's own settings files. They allow nothing: `decide` only names the one that
    would have allowed a call it asks about or denies, with `why_withheld`."""
    why_withheld: str = ""
    """Why those rules do not count, and how to trust the project."""

    @classmethod
    def of(
        cls, *, allow: Iterable[str] = (), ask: Iterable[str] = (), deny: Iterable[str] = (), source: str = ""
    ) -> PermissionRules:
        """Rules from lists of rule strings.

        Raises:
            RuleError: an entry does not parse.
        """
        return cls(
            allow=tuple(parse_rule(text, source=source) for text in allow),
            ask=tuple(parse_rule(text, source=source) for text in ask),
            deny=tuple(parse_rule(text, source=source) for text in deny),
        )

    def listed(self, rule_list: RuleList) -> tuple[PermissionRule, ...]:
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}[rule_list]


def rules_from_settings(settings: ClaudeSettings) -> PermissionRules:
    """The permission rules of every settings file in effect, each rule knowing its file.

    Rules add up across levels: since deny beats ask beats allow whatever the level, a deny anywhere applies.
    With `allowManagedPermissionRulesOnly` in the managed policy, only the policy's own rules count. Bad entries
    are reported in `errors` and skipped.
    """
    files = settings.at("managed") if settings.managed_rules_only else settings.files
    lists: dict[RuleList, list[PermissionRule]] = {name: [] for name in RULE_LISTS}
    errors: list[str] = []
    for file in files:
        found, problems = rules_in_file(file)
        for name in RULE_LISTS:
            lists[name] += found[name]
        errors += problems
    withheld = [] if settings.managed_rules_only else [rules_in_file(file)[0]["allow"] for file in settings.withheld]
    return PermissionRules(
        allow=tuple(lists["allow"]),
        ask=tuple(lists["ask"]),
        deny=tuple(lists["deny"]),
        errors=tuple(errors),
        bypass_disabled=settings.bypass_disabled,
        deny_instead_of_prompting=settings.deny_instead_of_prompting,
        managed_only=settings.managed_rules_only,
        withheld_allow=tuple(rule for rules in withheld for rule in rules),
        why_withheld=settings.why_withheld,
    )


def rules_in_file(file: SettingsFile) -> tuple[dict[RuleList, list[PermissionRule]], list[str]]:
    """The rules one settings file lists, and what is wrong in its `permissions` block."""
    source = str(file.path)
    lists: dict[RuleList, list[PermissionRule]] = {name: [] for name in RULE_LISTS}
    permissions = file.data.get("permissions")
    if permissions is None:
        return lists, []
    if not isinstance(permissions, Mapping):
        return lists, [f"{source}: 'permissions' must be an object"]
    section = cast("Mapping[str, Any]", permissions)
    errors: list[str] = []
    for name in RULE_LISTS:
        entries = section.get(name)
        if entries is None:
            continue
        if not isinstance(entries, list):
            errors.append(f"{source}: permissions.{name} must be a list of rule strings")
            continue
        for index, entry in enumerate(cast("list[Any]", entries)):
            if not isinstance(entry, str):
                errors.append(f"{source}: permissions.{name}[{index}] must be a string, not {type(entry).__name__}")
                continue
            try:
                lists[name].append(parse_rule(entry, source=source))
            except RuleError as exc:
                errors.append(f"{source}: permissions.{name}[{index}]: {exc.message}")
    default_mode = section.get("defaultMode")
    if default_mode is not None and (not isinstance(default_mode, str) or default_mode not in MODE_NAMES):
        errors.append(f"{source}: permissions.defaultMode {default_mode!r} is not a permission mode")
    directories = section.get("additionalDirectories")
    if directories is not None and not (
        isinstance(directories, list) and all(isinstance(item, str) for item in cast("list[Any]", directories))
    ):
        errors.append(f"{source}: permissions.additionalDirectories must be a list of folder paths")
    return lists, errors
