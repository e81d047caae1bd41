"""One frozen `Settings`, built from command-line flags with `MCP_SUBAGENTS_*` environment fallbacks."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, cast

from ..core.errors import ConfigError
from ..core.names import PERMISSION_MODES
from ..core.state import default_state_dir
from .claude_settings import SELECTABLE_LEVELS, default_managed_settings_file
from .option_values import (
    Transport,
    boolean,
    database_url,
    host_name,
    http_url,
    non_negative_int,
    non_negative_seconds,
    path,
    port_number,
    positive_int,
    seconds,
    setting_sources,
    transport,
    usd,
)

TRANSPORTS: tuple[Transport, ...] = ("stdio", "sse", "streamable-http")
TRANSPORT_NAMES = ("stdio", "http", "streamable-http", "sse")
"""What `--transport` accepts: `http` is what Claude Code's `.mcp.json` and the MCP Inspector call streamable HTTP."""
PROVIDERS = ("anthropic", "openai")

ENV_PREFIX = "MCP_SUBAGENTS_"
AGENT_SERVER_MARKER = "MCP_SUBAGENTS_AGENT_SERVER"
"""Set in the environment of every MCP server an agent starts: an mcp-subagents that finds it refuses to run, so a
server list that names this server (directly or through a wrapper script) cannot make it start itself over and
over."""


MAX_MODEL_PROCESSES = 4


def default_model_processes() -> int:
    """Two fewer than the CPUs this process may use, up to `MAX_MODEL_PROCESSES`: one core for the event loop and
    one for the host and the rest of the machine. On two cores a model process only competed for them (measured:
    `bench/concurrency.py`), so there are none."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(0, min(MAX_MODEL_PROCESSES, cpus - 2))


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Everything the command line and the `MCP_SUBAGENTS_*` variables configure; the defaults are the flags'."""

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
    user_settings_file: Path | None = field(default_factory=lambda: Path.home() / ".claude" / "settings.json")
    """Claude Code's user settings (`~/.claude/settings.json`)."""
    managed_settings_file: Path | None = field(default_factory=default_managed_settings_file)
    """Where the managed policy is looked for when `--policy-file` does not name one."""
    setting_sources: tuple[str, ...] = SELECTABLE_LEVELS
    """Which of the user, project and local settings files are read (`--setting-sources`)."""
    model: str = "sonnet"
    main_model: str | None = None
    """The person's main model (`--main-model`): what agents with `model: inherit` or no model run on."""
    anthropic_model: str | None = None
    """`ANTHROPIC_MODEL` from the environment (Claude Code's main model when it started this server)."""
    provider: str | None = None
    state_dir: Path = field(default_factory=lambda: default_state_dir(os.environ))
    max_turns: int = 50
    max_result_chars: int = 80_000
    max_tokens: int | None = None
    """Output token limit per request; None means the model's own (128000 on Claude 5.x, 16384 when unknown)."""
    compact_threshold: int | None = None
    """Summarise a conversation once a request uses this many tokens; None means 80% of the model's window."""
    claude_dir: Path | None = field(default_factory=lambda: Path.home() / ".claude")
    """The user's Claude Code folder: `~/.claude/CLAUDE.md`, `skills/` and `agent-memory/` are read from it."""
    max_concurrent: int = 10
    task_timeout: float = 1800.0
    idle_timeout: float = 600.0
    stall_after: float = 120.0
    """Seconds without a model reply or tool result after which a running task is shown as stalled (0: never)."""
    stall_timeout: float = 0.0
    """Seconds a task may stay stalled (silent, or repeating one tool call) before it is stopped (0: never)."""
    foreground_deadline: float = 45.0
    ask_timeout: float = 3600.0
    """Seconds a permission question waits for the person's answer before the call is denied: long enough for work in
    the background, whose person comes back later. The task's own time limits stop meanwhile."""
    model_deadline: float = 900.0
    max_retries: int = 10
    """Retries of a model request that failed for a passing reason (overload, rate limit, 5xx, connection)."""
    model_processes: int = field(default_factory=default_model_processes)
    """Processes that send model requests beside the server's own when many tasks run at once (0: none)."""
    permission_mode: str | None = None
    """`--permission-mode`; None means the settings files' `permissions.defaultMode`, else default."""
    watch_interval: float = 2.0
    """Seconds between checks of the agent files for changes (0 turns the check off)."""
    log_level: str = "INFO"
    # Serving HTTP to a team (README "Serving a team"). MCP_SUBAGENTS_AUTH_TOKEN is read by transports, never kept.
    auth_token_file: Path | None = None
    oauth_issuer: str | None = None
    oauth_audience: str | None = None
    oauth_scopes: tuple[str, ...] = ()
    public_url: str | None = None
    """The URL clients use for the MCP endpoint: the OAuth resource and the default token audience."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (besides loopback) that HTTP requests may address: DNS-rebinding protection stays on."""
    allowed_roots: tuple[Path, ...] = ()
    """Folders an HTTP client's roots may name, besides the working directory."""
    trust_client_roots: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # Agent extension points (README "Hooks", "MCP servers", "Worktrees", "Nested subagents", "Project trust").
    claude_config_file: Path | None = field(default_factory=lambda: Path.home() / ".claude.json")
    """Claude Code's global state file, where it records which projects the person trusted."""
    trust_projects: tuple[Path, ...] = ()
    """`--trust-project`: project folders whose hooks and MCP servers run even if Claude Code never trusted them."""
    max_depth: int = 3
    """How deep subagents may nest: a task at this depth gets no Task tool (1 = no nesting)."""
    mcp_start_timeout: float = 30.0
    """Seconds an agent's MCP server may take to start and list its tools."""
    max_budget_usd: float | None = None
    """USD one task may spend on its model's tokens; an agent's `maxBudgetUsd` can only lower it."""
    otel: bool = False
    """OpenTelemetry traces of tasks, model requests and tool calls (the `otel` extra)."""
    dashboard: bool = False
    """Serve the browser dashboard next to the MCP server (on 127.0.0.1)."""
    dashboard_port: int = 0
    no_warm: bool = False
    """Read by the program's entry before the settings exist (`cli.warm_wire.warm_disabled`); kept for `--help`."""
    sandbox: str = "auto"
    """Bash sandbox: auto (on wherever bubblewrap works), auto-allow (auto, and sandboxed commands run without asking,
    as `sandbox.autoAllowBashIfSandboxed: true` says), on (refuse to start without it), off."""
    keep_days: int = 30
    """Task files older than this many days are removed at start (0 keeps everything)."""
    database_url: str | None = None
    """A team's Postgres database (`postgresql://...`): tasks kept there, any replica serves any task."""

    @property
    def working_directory(self) -> Path:
        """`--cwd`, or the process's working directory, resolved."""
        return (self.cwd or Path.cwd()).resolve()


@dataclass(frozen=True, slots=True)
class Option:
    flag: str
    dest: str
    help: str
    convert: Callable[[str], Any] = str
    repeat: bool = False
    choices: Sequence[str] | None = None
    serve_only: bool = False
    switch: bool = False
    """A flag without a value (`store_true`); its variable takes 1/true/yes or 0/false/no."""
    metavar: str | None = None
    separator: str = os.pathsep
    """Between the items of a repeatable option's variable."""

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag.removeprefix("--").upper().replace("-", "_")


SOURCE_OPTIONS: tuple[Option, ...] = (
    Option("--cwd", "cwd", "subagents' working directory (default: the host's roots, else the current dir)", path),
    Option("--agents-dir", "agents_dirs", "extra folder of agent .md files (repeatable)", path, repeat=True),
    Option(
        "--plugin-dir",
        "plugin_dirs",
        "Claude Code plugin folder, or a folder of plugins (repeatable)",
        path,
        repeat=True,
    ),
    Option("--agents", "agents_json", 'agents as JSON: {"name": {"description", "prompt", ...}}'),
    Option(
        "--settings",
        "settings_file",
        "one more Claude Code settings file, above the user, project and local ones (must exist)",
        path,
    ),
    Option(
        "--policy-file",
        "policy_file",
        "the managed policy file to use instead of the default location; its rules and agents win (must exist)",
        path,
    ),
    Option(
        "--setting-sources",
        "setting_sources",
        "which settings files to read: a comma-separated list of user, project, local (default: all three)",
        setting_sources,
    ),
    Option(
        "--managed-settings-file",
        "managed_settings_file",
        f"where the managed policy is looked for (default: {default_managed_settings_file()})",
        path,
    ),
    Option(
        "--trust-project",
        "trust_projects",
        "run the hooks and MCP servers of this project's files even if Claude Code never trusted it (repeatable)",
        path,
        repeat=True,
    ),
)

RUN_OPTIONS: tuple[Option, ...] = (
    Option(
        "--model",
        "model",
        "model for agents with model 'inherit' or none when the main model is not known (default: sonnet)",
    ),
    Option(
        "--main-model",
        "main_model",
        "the model your main session runs on: agents with model 'inherit' or none run on it "
        "(default: ANTHROPIC_MODEL, else the model in Claude Code's settings, else --model)",
    ),
    Option("--provider", "provider", "model provider (default: chosen by which API key is set)", choices=PROVIDERS),
    Option("--state-dir", "state_dir", "folder for task output files and transcripts", path),
    Option("--max-turns", "max_turns", "server cap on model round trips per task (default: 50)", positive_int),
    Option(
        "--max-tokens",
        "max_tokens",
        "output tokens per model request (default: the model's limit, 128000 on Claude 5.x; else 16384)",
        positive_int,
    ),
    Option(
        "--compact-threshold",
        "compact_threshold",
        "summarise a task's conversation when a request reaches this many tokens (default: 80%% of the window)",
        positive_int,
    ),
    Option(
        "--max-result-chars", "max_result_chars", "cut final results longer than this (default: 80000)", positive_int
    ),
    Option(
        "--max-concurrent",
        "max_concurrent",
        "subagents running at once; more wait in a queue (default: 10)",
        positive_int,
    ),
    Option("--task-timeout", "task_timeout", "wall-clock limit per task in seconds (default: 1800)", seconds),
    Option(
        "--idle-timeout", "idle_timeout", "fail a task with no progress for this many seconds (default: 600)", seconds
    ),
    Option(
        "--stall-after",
        "stall_after",
        "show a running task as stalled after this many seconds without a model reply or tool result "
        "(default: 120; 0 = never)",
        non_negative_seconds,
    ),
    Option(
        "--stall-timeout",
        "stall_timeout",
        "stop a task that has been stalled, or has repeated the same tool call 3+ times in a row, for this many "
        "seconds (default: 0 = never)",
        non_negative_seconds,
    ),
    Option(
        "--foreground-deadline",
        "foreground_deadline",
        "seconds before a foreground Task hands over to the background (default: 45)",
        seconds,
    ),
    Option(
        "--ask-timeout",
        "ask_timeout",
        "seconds a subagent's permission question waits for the person's answer, in the foreground or the background, "
        "before the call is denied; the task's time limits stop meanwhile (default: 3600)",
        seconds,
    ),
    Option(
        "--model-deadline",
        "model_deadline",
        "seconds one model request may take, retries included (default: 900)",
        seconds,
    ),
    Option(
        "--max-retries",
        "max_retries",
        "retries of a model request that failed with 429/529/5xx or a lost connection, with backoff (default: 10)",
        non_negative_int,
    ),
    Option(
        "--model-processes",
        "model_processes",
        "extra processes that send model requests when many tasks run at once, so more than one core works "
        f"(default: two fewer than the CPUs, at most {MAX_MODEL_PROCESSES}; 0 = none)",
        non_negative_int,
    ),
    Option(
        "--watch-interval",
        "watch_interval",
        "seconds between checks of agent files; hosts are told when tools change (default: 2; 0 = off)",
        non_negative_seconds,
    ),
    Option(
        "--permission-mode",
        "permission_mode",
        "default, acceptEdits, dontAsk, bypassPermissions or plan (default: the settings files' defaultMode)",
        choices=PERMISSION_MODES,
    ),
    Option(
        "--log-level", "log_level", "stderr log level (default: INFO)", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    ),
    Option(
        "--max-depth",
        "max_depth",
        "how deep subagents may launch subagents; at this depth Task is withheld (default: 3; 1 = no nesting)",
        positive_int,
    ),
    Option(
        "--mcp-start-timeout",
        "mcp_start_timeout",
        "seconds an agent's MCP server may take to start and list its tools (default: 30)",
        seconds,
    ),
    Option(
        "--otel",
        "otel",
        "send OpenTelemetry traces (GenAI conventions) where the OTEL_* variables say; needs the otel extra",
        boolean,
        switch=True,
    ),
    Option(
        "--max-budget-usd",
        "max_budget_usd",
        "USD one task may spend on tokens; it ends with an error when spent, warns at 80%% (default: no limit)",
        usd,
    ),
    Option(
        "--sandbox",
        "sandbox",
        "Bash sandbox: auto (on where bubblewrap works), auto-allow (auto, and sandboxed commands run without "
        "asking), on (required), off (default: auto)",
        choices=("auto", "auto-allow", "on", "off"),
    ),
    Option(
        "--keep-days",
        "keep_days",
        "remove task files older than this many days at start (default: 30; 0 keeps them all)",
        non_negative_int,
    ),
)

DATABASE_OPTION = Option(
    "--database-url",
    "database_url",
    "serve as one replica of a team: tasks kept in this Postgres database, any replica serves any task, a stopped "
    "replica's tasks carried on by another (pip install 'mcp-subagents[team]')",
    database_url,
    metavar="URL",
)

SERVE_OPTIONS: tuple[Option, ...] = (
    Option(
        "--transport",
        "transport",
        "stdio (default), http (streamable HTTP, also called streamable-http) or sse",
        transport,
        choices=TRANSPORT_NAMES,
    ),
    Option("--host", "host", "address for http / sse (default: 127.0.0.1)"),
    Option("--port", "port", "port for http / sse (default: 8000; 0 = any free port)", port_number),
    Option(
        "--auth-token-file",
        "auth_token_file",
        "HTTP bearer tokens, one principal:token per line, mode 600 (MCP_SUBAGENTS_AUTH_TOKEN: one token)",
        path,
    ),
    Option("--oauth-issuer", "oauth_issuer", "accept OAuth access tokens (JWT) from this issuer", http_url),
    Option("--oauth-audience", "oauth_audience", "audience OAuth tokens must name (default: --public-url)"),
    Option(
        "--oauth-scope",
        "oauth_scopes",
        "scope every OAuth token must carry (repeatable)",
        str.strip,
        repeat=True,
        metavar="SCOPE",
        separator=",",
    ),
    Option(
        "--public-url",
        "public_url",
        "the URL clients use, e.g. https://agents.example.com/mcp (OAuth resource; default from --host/--port)",
        http_url,
    ),
    Option(
        "--allowed-host",
        "allowed_hosts",
        "host name HTTP requests may address besides loopback, e.g. agents.example.com (repeatable)",
        host_name,
        repeat=True,
        metavar="HOST",
        separator=",",
    ),
    Option(
        "--allowed-root",
        "allowed_roots",
        "folder an HTTP client's MCP roots may name, besides --cwd (repeatable)",
        path,
        repeat=True,
    ),
    Option(
        "--trust-client-roots",
        "trust_client_roots",
        "let HTTP clients' MCP roots widen the allowed area anywhere (stdio roots are always trusted)",
        boolean,
        switch=True,
    ),
    Option("--tls-cert", "tls_cert", "serve HTTPS with this certificate chain (PEM; needs --tls-key)", path),
    Option("--tls-key", "tls_key", "private key of --tls-cert (PEM)", path),
    Option(
        "--dashboard",
        "dashboard",
        "also serve the browser dashboard on 127.0.0.1 (its address, with a secret, goes to stderr)",
        boolean,
        switch=True,
    ),
    Option("--dashboard-port", "dashboard_port", "port of --dashboard (default: 0, any free port)", port_number),
    Option("--no-warm", "no_warm", "serve in this process: no warm server used or started", boolean, switch=True),
    DATABASE_OPTION,
)


def add_options(parser: argparse.ArgumentParser, options: Sequence[Option]) -> None:
    for option in options:
        help_text = f"{option.help} [env {option.env}]"
        if option.repeat:
            metavar = option.metavar or "DIR"
            parser.add_argument(option.flag, dest=option.dest, action="append", metavar=metavar, help=help_text)
        elif option.switch:
            parser.add_argument(option.flag, dest=option.dest, action="store_true", default=None, help=help_text)
        else:
            # `settings_from` checks the choices, in the same words for a flag and for its variable.
            metavar = "{" + ",".join(option.choices) + "}" if option.choices else option.metavar
            parser.add_argument(option.flag, dest=option.dest, metavar=metavar, help=help_text)


def settings_from(
    namespace: argparse.Namespace, options: Sequence[Option], environ: Mapping[str, str] | None = None
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
            given = raw.split(option.separator) if option.repeat else raw
            origin = option.env
        if given is None:
            continue
        values[option.dest] = _convert(option, given, origin)
    return _build(values, environ)


def _convert(option: Option, given: Any, origin: str) -> Any:
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
    values.setdefault("state_dir", default_state_dir(environ))
    if environ.get("ANTHROPIC_MODEL", "").strip():
        values.setdefault("anthropic_model", environ["ANTHROPIC_MODEL"].strip())
    if environ.get("CLAUDE_CONFIG_DIR"):
        values["claude_dir"] = Path(environ["CLAUDE_CONFIG_DIR"]).expanduser()
    elif "HOME" in environ:
        values.setdefault("claude_dir", Path(environ["HOME"]) / ".claude")
    if environ.get("CLAUDE_CONFIG_DIR"):  # Claude Code keeps its global state file there too
        values["claude_config_file"] = Path(environ["CLAUDE_CONFIG_DIR"]).expanduser() / ".claude.json"
    elif "HOME" in environ:
        values.setdefault("claude_config_file", Path(environ["HOME"]) / ".claude.json")
    if "claude_dir" in values:  # the user level of Claude Code's files: agents and settings live there too
        values.setdefault("user_agents_dir", Path(values["claude_dir"]) / "agents")
        values.setdefault("user_settings_file", Path(values["claude_dir"]) / "settings.json")
    if values.get("cwd") is not None:
        cwd = Path(values["cwd"]).resolve()
        if not cwd.is_dir():
            raise ConfigError(f"--cwd: {cwd} is not a directory")
        values["cwd"] = cwd
    return Settings(**values)
