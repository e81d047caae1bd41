"""One frozen `Settings`, built from command-line flags with `MCP_SUBAGENTS_*` environment fallbacks."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

from .errors import ConfigError

Transport: TypeAlias = Literal["stdio", "sse", "streamable-http"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "streamable-http")
PROVIDERS = ("anthropic", "openai")
PERMISSION_MODES = ("default", "acceptEdits", "dontAsk", "bypassPermissions", "plan")
ENV_PREFIX = "MCP_SUBAGENTS_"


def _default_state_dir(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_STATE_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".local" / "state")
    return Path(base) / "mcp-subagents"


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    cwd: Path | None = None
    """Subagents' working directory; None means the host's MCP roots, else the process's cwd."""
    agents_dirs: tuple[Path, ...] = ()
    plugin_dirs: tuple[Path, ...] = ()
    agents_json: str | None = None
    settings_file: Path | None = None
    policy_file: Path | None = None
    user_agents_dir: Path | None = field(default_factory=lambda: Path.home() / ".claude" / "agents")
    model: str = "sonnet"
    provider: str | None = None
    state_dir: Path = field(default_factory=lambda: _default_state_dir(os.environ))
    max_turns: int = 50
    max_result_chars: int = 80_000
    max_tokens: int = 16_384
    max_concurrent: int = 10
    task_timeout: float = 1800.0
    idle_timeout: float = 600.0
    foreground_deadline: float = 45.0
    model_deadline: float = 900.0
    permission_mode: str = "default"
    watch_interval: float = 2.0
    """Seconds between checks of the agent files for changes (0 turns the check off)."""
    log_level: str = "INFO"
    sandbox: str = "auto"
    """Bash sandbox: auto (on wherever bubblewrap works), on (refuse to start without it), off."""
    keep_days: int = 30
    """Task files older than this many days are removed at start (0 keeps everything)."""

    @property
    def working_directory(self) -> Path:
        return (self.cwd or Path.cwd()).resolve()


@dataclass(frozen=True, slots=True)
class _Option:
    flag: str
    dest: str
    help: str
    convert: Callable[[str], Any] = str
    repeat: bool = False
    choices: Sequence[str] | None = None
    serve_only: bool = False

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag.removeprefix("--").upper().replace("-", "_")


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError(f"must be a positive integer, got {raw}")
    return value


def _port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be a port number from 0 to 65535 (0 picks a free one), got {raw}")
    return value


def _seconds(raw: str) -> float:
    value = float(raw)
    if value <= 0:
        raise ValueError(f"must be a positive number of seconds, got {raw}")
    return value


def _non_negative_seconds(raw: str) -> float:
    value = float(raw)
    if value < 0:
        raise ValueError(f"must be 0 or a positive number of seconds, got {raw}")
    return value


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError(f"must be 0 or a positive integer, got {raw}")
    return value


def _path(raw: str) -> Path:
    return Path(raw).expanduser()


SOURCE_OPTIONS: tuple[_Option, ...] = (
    _Option("--cwd", "cwd", "subagents' working directory (default: the host's roots, else the current dir)", _path),
    _Option("--agents-dir", "agents_dirs", "extra folder of agent .md files (repeatable)", _path, repeat=True),
    _Option(
        "--plugin-dir",
        "plugin_dirs",
        "Claude Code plugin folder, or a folder of plugins (repeatable)",
        _path,
        repeat=True,
    ),
    _Option("--agents", "agents_json", 'agents as JSON: {"name": {"description", "prompt", ...}}'),
    _Option("--settings", "settings_file", "Claude Code settings JSON (permissions.allow/ask/deny)", _path),
    _Option("--policy-file", "policy_file", "managed settings JSON; its agents and deny rules win over all", _path),
)

RUN_OPTIONS: tuple[_Option, ...] = (
    _Option("--model", "model", "default model for agents with model 'inherit' (default: sonnet)"),
    _Option("--provider", "provider", "model provider (default: chosen by which API key is set)", choices=PROVIDERS),
    _Option("--state-dir", "state_dir", "folder for task output files and transcripts", _path),
    _Option("--max-turns", "max_turns", "server cap on model round trips per task (default: 50)", _positive_int),
    _Option(
        "--max-result-chars", "max_result_chars", "cut final results longer than this (default: 80000)", _positive_int
    ),
    _Option(
        "--max-concurrent",
        "max_concurrent",
        "subagents running at once; more wait in a queue (default: 10)",
        _positive_int,
    ),
    _Option("--task-timeout", "task_timeout", "wall-clock limit per task in seconds (default: 1800)", _seconds),
    _Option(
        "--idle-timeout", "idle_timeout", "fail a task with no progress for this many seconds (default: 600)", _seconds
    ),
    _Option(
        "--foreground-deadline",
        "foreground_deadline",
        "seconds before a foreground Task hands over to the background (default: 45)",
        _seconds,
    ),
    _Option(
        "--model-deadline",
        "model_deadline",
        "seconds one model request may take, retries included (default: 900)",
        _seconds,
    ),
    _Option(
        "--watch-interval",
        "watch_interval",
        "seconds between checks of agent files; hosts are told when tools change (default: 2; 0 = off)",
        _non_negative_seconds,
    ),
    _Option(
        "--permission-mode",
        "permission_mode",
        "default, acceptEdits, dontAsk, bypassPermissions or plan",
        choices=PERMISSION_MODES,
    ),
    _Option(
        "--log-level", "log_level", "stderr log level (default: INFO)", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    ),
    _Option(
        "--sandbox",
        "sandbox",
        "Bash sandbox: auto (on where bubblewrap works), on (required), off (default: auto)",
        choices=("auto", "on", "off"),
    ),
    _Option(
        "--keep-days",
        "keep_days",
        "remove task files older than this many days at start (default: 30; 0 keeps them all)",
        _non_negative_int,
    ),
)

SERVE_OPTIONS: tuple[_Option, ...] = (
    _Option("--transport", "transport", "stdio (default), sse or streamable-http", choices=TRANSPORTS),
    _Option("--host", "host", "address for sse / streamable-http (default: 127.0.0.1)"),
    _Option("--port", "port", "port for sse / streamable-http (default: 8000; 0 = any free port)", _port),
)


def add_options(parser: argparse.ArgumentParser, options: Sequence[_Option]) -> None:
    for option in options:
        help_text = f"{option.help} [env {option.env}]"
        if option.repeat:
            parser.add_argument(option.flag, dest=option.dest, action="append", metavar="DIR", help=help_text)
        else:
            parser.add_argument(option.flag, dest=option.dest, choices=option.choices, help=help_text)


def settings_from(
    namespace: argparse.Namespace, options: Sequence[_Option], environ: Mapping[str, str] | None = None
) -> Settings:
    """Merge parsed flags over `MCP_SUBAGENTS_*` variables over defaults.

    Raises:
        ConfigError: a flag or variable has a value that does not fit, naming which one.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for option in options:
        given: Any = getattr(namespace, option.dest, None)
        origin = option.flag
        if given is None and option.env in environ and environ[option.env] != "":
            raw = environ[option.env]
            given = raw.split(os.pathsep) if option.repeat else raw
            origin = option.env
        if given is None:
            continue
        values[option.dest] = _convert(option, given, origin)
    return _build(values, environ)


def _convert(option: _Option, given: Any, origin: str) -> Any:
    try:
        if option.repeat:
            return tuple(option.convert(item) for item in cast("list[str]", given) if item)
        if option.choices is not None and given not in option.choices:
            raise ValueError(f"must be one of {', '.join(option.choices)}, got {given!r}")
        return option.convert(given)
    except ValueError as exc:
        raise ConfigError(f"{origin}: {exc}") from None


def _build(values: dict[str, Any], environ: Mapping[str, str]) -> Settings:
    known = {f.name for f in fields(Settings)}
    values = {k: v for k, v in values.items() if k in known}
    values.setdefault("state_dir", _default_state_dir(environ))
    if "HOME" in environ:
        values.setdefault("user_agents_dir", Path(environ["HOME"]) / ".claude" / "agents")
    if values.get("cwd") is not None:
        cwd = Path(values["cwd"]).resolve()
        if not cwd.is_dir():
            raise ConfigError(f"--cwd: {cwd} is not a directory")
        values["cwd"] = cwd
    return Settings(**values)
