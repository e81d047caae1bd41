"""An agent's `mcpServers`, resolved into servers to start: inline entries, and names looked up where Claude Code
keeps its server list (`.mcp.json`, `~/.claude.json`, the settings files' `mcpServers`).

```yaml
mcpServers:
  - github                                  # by name
  - files: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", "."]}
  - docs: {type: http, url: "https://docs.example.com/mcp", headers: {Authorization: "Bearer ${DOCS_TOKEN}"}}
```

`${VAR}` and `${VAR:-default}` expand from the server's environment in `command`, `args`, `env`, `cwd`, `url` and
`headers`, as in `.mcp.json`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from ...config.claude_settings import ClaudeSettings
from ...core.json_values import JsonObject
from ...definitions import AgentDefinition
from .problem import ServerProblem

_OWN_NAMES = frozenset({"mcp-subagents", "mcp_subagents"})
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")


class ServerConfigError(ValueError):
    """A server entry that cannot be started as written; the message names the server and the field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioServer:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=lambda: {})
    cwd: Path | None = None
    origin: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpServer:
    name: str
    transport: Literal["http", "sse"]
    url: str
    headers: Mapping[str, str] = field(default_factory=lambda: {})
    origin: str = ""


ServerConfig: TypeAlias = StdioServer | HttpServer


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedServers:
    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[ServerProblem, ...] = ()


@dataclass(frozen=True, slots=True)
class _Listed:
    raw: object
    origin: str
    needs_trust: bool


class ServerDirectory:
    """Servers configured by name, in Claude Code's order: the managed and command-line settings, then the local
    scope (`~/.claude.json` for this project, `.claude/settings.local.json`), then the project's (`.mcp.json`,
    `.claude/settings.json`), then the user's (`~/.claude.json`, `~/.claude/settings.json`)."""

    def __init__(self, *, project: Path, settings: ClaudeSettings, claude_config_file: Path | None) -> None:
        self._entries: dict[str, _Listed] = {}
        self.problems: list[str] = []
        """Server lists that exist but could not be read."""
        user_state = self._read(claude_config_file)
        projects = _object(user_state.get("projects"))
        project_state = _object(projects.get(str(project)) or projects.get(os.path.realpath(project)))
        by_level = {file.level: file for file in settings.files}
        layers: list[tuple[Mapping[str, Any], str, bool]] = []
        for level in ("managed", "flag"):
            layers += [(_servers(file.data), str(file.path), False) for file in settings.at(level)]
        layers.append((_servers(project_state), f"{claude_config_file} (this project)", False))
        if "local" in by_level:
            layers.append((_servers(by_level["local"].data), str(by_level["local"].path), True))
        mcp_json = project / ".mcp.json"
        layers.append((_servers(self._read(mcp_json)), str(mcp_json), True))
        if "project" in by_level:
            layers.append((_servers(by_level["project"].data), str(by_level["project"].path), True))
        layers.append((_servers(user_state), str(claude_config_file), False))
        if "user" in by_level:
            layers.append((_servers(by_level["user"].data), str(by_level["user"].path), False))
        for servers, origin, needs_trust in layers:
            for name, raw in servers.items():
                self._entries.setdefault(name, _Listed(raw, origin, needs_trust))

    def get(self, name: str) -> _Listed | None:
        return self._entries.get(name)

    def _read(self, path: Path | None) -> JsonObject:
        if path is None:
            return {}
        try:
            with open(path, encoding="utf-8") as file:
                data: object = json.load(file)
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            self.problems.append(f"{path} could not be read ({exc})")
            return {}
        if not isinstance(data, dict):
            self.problems.append(f"{path} does not hold a JSON object")
            return {}
        return cast("JsonObject", data)


def resolve_servers(
    definition: AgentDefinition,
    directory: ServerDirectory,
    *,
    environ: Mapping[str, str],
    project: Path,
    trusted: Callable[[], bool],
    definition_trusted: bool,
    why_untrusted: str,
) -> ResolvedServers:
    """The servers `definition.mcp_servers` names, ready to start, and the ones that cannot start.

    Inline entries of a project agent, and named entries found only in project files, need the project's trust.
    """
    servers: list[ServerConfig] = []
    problems: list[ServerProblem] = []
    seen: set[str] = set()
    for spec in definition.mcp_servers:
        entries: Sequence[tuple[str, object, str, bool]]
        if isinstance(spec, str):
            listed = directory.get(spec)
            if listed is None:
                unread = "".join(f"; {problem}" for problem in directory.problems)
                reason = f"no server of that name in .mcp.json, ~/.claude.json or the settings files{unread}"
                problems.append(ServerProblem(spec, reason))
                continue
            entries = [(spec, listed.raw, listed.origin, listed.needs_trust)]
        else:
            origin = f"agent {definition.name}"
            entries = [(name, raw, origin, not definition_trusted) for name, raw in spec.items()]
        for name, raw, origin, needs_trust in entries:
            if name in seen:
                continue
            seen.add(name)
            if needs_trust and not trusted():
                problems.append(ServerProblem(name, f"not started: {why_untrusted}"))
                continue
            try:
                servers.append(server_config(name, raw, environ=environ, project=project, origin=origin))
            except ServerConfigError as exc:
                problems.append(ServerProblem(name, str(exc)))
    return ResolvedServers(servers=tuple(servers), problems=tuple(problems))


def server_config(
    name: str, raw: object, *, environ: Mapping[str, str], project: Path, origin: str = ""
) -> ServerConfig:
    """One server entry as `.mcp.json` writes it.

    Raises:
        ServerConfigError: naming the field that is wrong, or a `${VAR}` that is not set.
    """
    if not isinstance(raw, Mapping):
        raise ServerConfigError(f"{origin}: the entry must be an object with 'command' or 'url'")
    fields = cast("Mapping[str, Any]", raw)
    expand = _Expander(environ, origin)
    kind = fields.get("type", "stdio" if "command" in fields else None)
    if kind in ("http", "sse"):
        url = fields.get("url")
        if not isinstance(url, str) or not url.strip():
            raise ServerConfigError(f"{origin}: a {kind} server needs 'url'")
        headers = _text_map(fields.get("headers"), "headers", origin)
        return HttpServer(
            name=name,
            transport=kind,
            url=expand(url),
            headers={key: expand(value) for key, value in headers.items()},
            origin=origin,
        )
    if kind not in ("stdio", None):
        raise ServerConfigError(f"{origin}: server type {kind!r} is not supported here (stdio, http and sse are)")
    command = fields.get("command")
    if not isinstance(command, str) or not command.strip():
        raise ServerConfigError(f"{origin}: a stdio server needs 'command'")
    args = fields.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in cast("list[Any]", args)):
        raise ServerConfigError(f"{origin}: 'args' must be a list of strings")
    env = _text_map(fields.get("env"), "env", origin)
    cwd = fields.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ServerConfigError(f"{origin}: 'cwd' must be a folder path")
    server = StdioServer(
        name=name,
        command=expand(command),
        args=tuple(expand(arg) for arg in cast("list[str]", args)),
        env={key: expand(value) for key, value in env.items()},
        cwd=(project / expand(cwd)) if cwd else None,
        origin=origin,
    )
    if runs_this_server(server):
        raise ServerConfigError(
            f"{origin}: it runs mcp-subagents itself, which would start this server inside itself; not started"
        )
    return server


def runs_this_server(server: StdioServer) -> bool:
    """Whether the command starts mcp-subagents: `mcp-subagents ...`, `python -m mcp_subagents`, `uvx
    mcp-subagents`, or a path to the very program this process runs."""
    words = [server.command, *server.args]
    if any(os.path.basename(word) in _OWN_NAMES for word in words):
        return True
    own = shutil.which("mcp-subagents")
    resolved = shutil.which(server.command)
    return own is not None and resolved is not None and os.path.realpath(own) == os.path.realpath(resolved)


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters a model API refuses replaced by `_`, as Claude Code names them."""
    return f"mcp__{_UNSAFE_NAME.sub('_', server)}__{_UNSAFE_NAME.sub('_', tool)}"


def server_prefix(server: str) -> str:
    return f"mcp__{_UNSAFE_NAME.sub('_', server)}__"


class _Expander:
    def __init__(self, environ: Mapping[str, str], origin: str) -> None:
        self._environ = environ
        self._origin = origin

    def __call__(self, text: str) -> str:
        def value(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in self._environ:
                return self._environ[name]
            if default is not None:
                return default
            raise ServerConfigError(f"{self._origin}: ${{{name}}} is not set in the server's environment")

        return _VARIABLE.sub(value, text)


def _text_map(value: object, key: str, origin: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cast("Mapping[Any, Any]", value).items()
    ):
        raise ServerConfigError(f"{origin}: '{key}' must map names to strings")
    return dict(cast("Mapping[str, str]", value))


def _servers(data: Mapping[str, Any]) -> Mapping[str, Any]:
    return _object(data.get("mcpServers"))


def _object(value: object) -> JsonObject:
    return cast("JsonObject", value) if isinstance(value, dict) else {}
