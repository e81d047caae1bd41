"""Claude Code's `sandbox` settings block, parsed into a frozen `SandboxConfig`.

```json
{"sandbox": {
  "enabled": true, "autoAllowBashIfSandboxed": false, "allowUnsandboxedCommands": true,
  "excludedCommands": ["docker *"], "failIfUnavailable": false,
  "network": {"allowedDomains": ["pypi.org", "*.pythonhosted.org"], "deniedDomains": [], "allowLocalBinding": false,
              "allowUnixSockets": [], "allowAllUnixSockets": false},
  "filesystem": {"allowWrite": ["~/.cache/pip"], "denyWrite": [], "denyRead": ["~/.kube"], "allowRead": []},
  "credentials": {"envVars": [{"name": "STRIPE_KEY", "mode": "deny"}], "files": [{"path": "~/.pgpass", "mode": "deny"}],
                  "allowEnvVars": ["GITHUB_TOKEN"]}
}}
```

`credentials.allowEnvVars` is ours: secret-looking variables that commands may still see (Claude Code passes every
variable on, so it has no such key). Keys Claude Code has but this server does not use are accepted and reported.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ..config.claude_settings import merge_settings
from ..core.errors import ConfigError


class SandboxConfigError(ConfigError):
    """The `sandbox` block has values that do not fit; the message names each field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkConfig:
    allowed_domains: tuple[str, ...] = ()
    """Hosts commands may reach through the proxy: `example.com`, `*.example.com` (its subdomains), `host:port`."""
    denied_domains: tuple[str, ...] = ()
    """Hosts that stay unreachable even when `allowed_domains` matches them."""
    allow_local_binding: bool = False
    allow_unix_sockets: tuple[str, ...] = ()
    """Socket paths under /run (or elsewhere hidden) that commands may still connect to."""
    allow_all_unix_sockets: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FilesystemConfig:
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()
    """Paths inside a hidden one that commands may read anyway."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CredentialsConfig:
    deny_env_vars: tuple[str, ...] = ()
    deny_files: tuple[str, ...] = ()
    allow_env_vars: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    enabled: bool | None = None
    """None: not set, so the server's `--sandbox` mode decides (auto: on wherever bubblewrap works)."""
    auto_allow_bash_if_sandboxed: bool = False
    """True: a sandboxed command no rule decided runs without asking in default and acceptEdits mode. False by
    default, as in Claude Code; a project's own settings cannot turn it on until the project is trusted."""
    allow_unsandboxed_commands: bool = True
    """False refuses every `dangerouslyDisableSandbox` call."""
    excluded_commands: tuple[str, ...] = ()
    """Commands that run outside the sandbox (with the normal permission check): `docker`, `docker *`, `git:*`."""
    fail_if_unavailable: bool = False
    network: NetworkConfig = field(default_factory=NetworkConfig)
    filesystem: FilesystemConfig = field(default_factory=FilesystemConfig)
    credentials: CredentialsConfig = field(default_factory=CredentialsConfig)
    bwrap_path: str | None = None
    socat_path: str | None = None
    unused: tuple[str, ...] = ()
    """Keys that were given but that this server does not act on, for a log line."""


_UNSUPPORTED = {
    "ignoreViolations": "violations are always reported",
    "enableWeakerNestedSandbox": "the sandbox always mounts its own /proc",
    "enableWeakerNetworkIsolation": "",
    "enabledPlatforms": "",
    "allowAppleEvents": "macOS only",
    "allowNestedUserNamespaces": "",
    "ripgrep": "Grep and Glob run outside the sandbox with their own path checks",
    "network.httpProxyPort": "commands always use this server's own proxy",
    "network.socksProxyPort": "commands always use this server's own HTTP proxy",
    "network.allowMachLookup": "macOS only",
    "network.allowManagedDomainsOnly": "",
    "network.tlsTerminate": "",
    "network.strictAllowlist": "",
    "filesystem.allowManagedReadPathsOnly": "",
    "filesystem.disabled": "",
    "credentials.allowPlaintextInject": "",
    "credentials.awsPairs": "",
    "credentials.sigv4": "",
}
_HOST_PATTERN = re.compile(r"(\*\.)?[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.?|\*|\[[0-9A-Fa-f:.]+\]")


class _Reader:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.unused: list[str] = []

    def table(self, raw: Any, where: str) -> Mapping[str, Any]:
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.problems.append(f"{where} must be an object, got {_kind(raw)}")
            return {}
        return cast("Mapping[str, Any]", raw)

    def flag(self, table: Mapping[str, Any], key: str, where: str, default: bool) -> bool:
        value = table.get(key, default)
        if isinstance(value, bool):
            return value
        self.problems.append(f"{where}.{key} must be true or false, got {_kind(value)}")
        return default

    def strings(self, table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = table.get(key)
        if value is None:
            return ()
        if isinstance(value, str):  # a lone string is read as a one-item list
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in cast("list[Any]", value)):
            self.problems.append(f"{where}.{key} must be a list of strings, got {_kind(cast(object, value))}")
            return ()
        items = tuple(item.strip() for item in cast("list[str]", value))
        if any(not item for item in items):
            self.problems.append(f"{where}.{key} has an empty entry")
        return tuple(item for item in items if item)

    def note_unknown(self, table: Mapping[str, Any], known: Sequence[str], where: str) -> None:
        for key in table:
            path = f"{where}.{key}".removeprefix("sandbox.")
            if key in known:
                continue
            if path in _UNSUPPORTED:
                reason = _UNSUPPORTED[path]
                self.unused.append(f"sandbox.{path} is not used by this server" + (f" ({reason})" if reason else ""))
            else:
                self.unused.append(f"sandbox.{path} is not a sandbox setting this server knows")


def parse_sandbox_config(raw: Mapping[str, Any] | None) -> SandboxConfig:
    """Parse the raw `sandbox` object of a settings file (None or {} gives the defaults).

    Raises:
        SandboxConfigError: a value has the wrong type or form; every bad field is named.
    """
    reader = _Reader()
    top = reader.table(raw, "sandbox")
    enabled_raw = top.get("enabled")
    enabled: bool | None = None
    if enabled_raw is not None:
        enabled = reader.flag(top, "enabled", "sandbox", False)
    network = _network(reader, reader.table(top.get("network"), "sandbox.network"))
    filesystem = _filesystem(reader, reader.table(top.get("filesystem"), "sandbox.filesystem"))
    credentials = _credentials(reader, reader.table(top.get("credentials"), "sandbox.credentials"))
    config = SandboxConfig(
        enabled=enabled,
        auto_allow_bash_if_sandboxed=reader.flag(top, "autoAllowBashIfSandboxed", "sandbox", False),
        allow_unsandboxed_commands=reader.flag(top, "allowUnsandboxedCommands", "sandbox", True),
        excluded_commands=reader.strings(top, "excludedCommands", "sandbox"),
        fail_if_unavailable=reader.flag(top, "failIfUnavailable", "sandbox", False),
        network=network,
        filesystem=filesystem,
        credentials=credentials,
        bwrap_path=_optional_string(reader, top, "bwrapPath"),
        socat_path=_optional_string(reader, top, "socatPath"),
    )
    known = (
        "enabled",
        "autoAllowBashIfSandboxed",
        "allowUnsandboxedCommands",
        "excludedCommands",
        "failIfUnavailable",
        "network",
        "filesystem",
        "credentials",
        "bwrapPath",
        "socatPath",
    )
    reader.note_unknown(top, known, "sandbox")
    if reader.problems:
        raise SandboxConfigError("invalid sandbox settings: " + "; ".join(reader.problems))
    return replace(config, unused=tuple(reader.unused))


def _optional_string(reader: _Reader, table: Mapping[str, Any], key: str) -> str | None:
    value = table.get(key)
    if value is None or (isinstance(value, str) and value.strip()):
        return value.strip() if isinstance(value, str) else None
    reader.problems.append(f"sandbox.{key} must be a path, got {_kind(value)}")
    return None


def _network(reader: _Reader, table: Mapping[str, Any]) -> NetworkConfig:
    where = "sandbox.network"
    allowed = reader.strings(table, "allowedDomains", where)
    denied = reader.strings(table, "deniedDomains", where)
    for key, hosts in (("allowedDomains", allowed), ("deniedDomains", denied)):
        for host in hosts:
            if not _valid_host_entry(host):
                reader.problems.append(
                    f"{where}.{key}: '{host}' is not a host name (write example.com, *.example.com or host:port)"
                )
    reader.note_unknown(
        table,
        ("allowedDomains", "deniedDomains", "allowLocalBinding", "allowUnixSockets", "allowAllUnixSockets"),
        where,
    )
    return NetworkConfig(
        allowed_domains=allowed,
        denied_domains=denied,
        allow_local_binding=reader.flag(table, "allowLocalBinding", where, False),
        allow_unix_sockets=reader.strings(table, "allowUnixSockets", where),
        allow_all_unix_sockets=reader.flag(table, "allowAllUnixSockets", where, False),
    )


def _valid_host_entry(entry: str) -> bool:
    host, port = split_host_port(entry)
    return port != -1 and bool(_HOST_PATTERN.fullmatch(host))


def split_host_port(entry: str) -> tuple[str, int | None]:
    """`host`, `host:443`, `[::1]:80` -> (host, port or None); a port that is not a number gives -1."""
    text = entry.strip().lower()
    if text.startswith("[") and "]" in text:
        host, _, rest = text.partition("]")
        host += "]"
        port_text = rest.removeprefix(":") if rest.startswith(":") else None
    elif text.count(":") == 1:
        host, _, port_text = text.partition(":")
    else:
        host, port_text = text, None
    if port_text is None:
        return host, None
    return (host, int(port_text)) if port_text.isdigit() and 0 < int(port_text) < 65536 else (host, -1)


def _filesystem(reader: _Reader, table: Mapping[str, Any]) -> FilesystemConfig:
    where = "sandbox.filesystem"
    reader.note_unknown(table, ("allowWrite", "denyWrite", "denyRead", "allowRead"), where)
    return FilesystemConfig(
        allow_write=reader.strings(table, "allowWrite", where),
        deny_write=reader.strings(table, "denyWrite", where),
        deny_read=reader.strings(table, "denyRead", where),
        allow_read=reader.strings(table, "allowRead", where),
    )


def _credentials(reader: _Reader, table: Mapping[str, Any]) -> CredentialsConfig:
    where = "sandbox.credentials"
    reader.note_unknown(table, ("envVars", "files", "allowEnvVars"), where)
    return CredentialsConfig(
        deny_env_vars=_denied_entries(reader, table, "envVars", "name", where),
        deny_files=_denied_entries(reader, table, "files", "path", where),
        allow_env_vars=reader.strings(table, "allowEnvVars", where),
    )


def _denied_entries(reader: _Reader, table: Mapping[str, Any], key: str, name_key: str, where: str) -> tuple[str, ...]:
    """`[{"name": "X", "mode": "deny"}]`: "deny" and "mask" both hide the credential here (no proxy injection)."""
    value = table.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        reader.problems.append(f"{where}.{key} must be a list of objects, got {_kind(value)}")
        return ()
    names: list[str] = []
    for index, entry in enumerate(cast("list[Any]", value)):
        item = reader.table(entry, f"{where}.{key}[{index}]")
        name = item.get(name_key)
        mode = item.get("mode", "deny")
        if not isinstance(name, str) or not name.strip():
            reader.problems.append(f"{where}.{key}[{index}].{name_key} must be a non-empty string")
        elif mode not in ("deny", "mask"):
            reader.problems.append(f'{where}.{key}[{index}].mode must be "deny" or "mask", got {mode!r}')
        else:
            names.append(name.strip())
    return tuple(names)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


PROJECT_LEVELS = ("project", "local")
"""Settings levels a repository ships with itself (`.claude/settings.json`, `.claude/settings.local.json`)."""
_TIGHTENING_LISTS = (("network", "deniedDomains"), ("filesystem", "denyRead"), ("filesystem", "denyWrite"))
_TIGHTENING_FLAGS = {
    "enabled": True,
    "failIfUnavailable": True,
    "allowUnsandboxedCommands": False,
    "autoAllowBashIfSandboxed": False,
}


def sandbox_block(layers: Sequence[tuple[str, Mapping[str, Any]]], *, project_trusted: bool) -> dict[str, Any]:
    """The `sandbox` block of the settings hierarchy, merged lowest level first (`layers`: (level, settings)).

    A project's own files (the project and local levels) can only confine more until the project is trusted: their
    denied domains and denied paths count, as does a setting that turns the sandbox on or asks more often; what
    would loosen it (`enabled: false`, allowed domains or writes, excluded commands, credentials) is left out.
    """
    blocks: list[Mapping[str, Any]] = []
    for level, settings in layers:
        raw = settings.get("sandbox")
        if not isinstance(raw, Mapping):
            continue
        block = cast("Mapping[str, Any]", raw)
        blocks.append(block if project_trusted or level not in PROJECT_LEVELS else _tightening_part(block))
    return merge_settings(blocks)


def _tightening_part(block: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {key: block[key] for key, value in _TIGHTENING_FLAGS.items() if block.get(key) is value}
    for section, key in _TIGHTENING_LISTS:
        table = block.get(section)
        entries = cast("Mapping[str, Any]", table).get(key) if isinstance(table, Mapping) else None
        if isinstance(entries, list):
            kept.setdefault(section, {})[key] = entries
    return kept
