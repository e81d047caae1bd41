"""The sandbox of one server process (`SandboxRuntime`) and of one run (`RunSandbox`, what Bash calls through).

`SandboxRuntime` decides once whether the sandbox is on: the `--sandbox` mode (auto, on, off), the settings'
`sandbox.enabled`, and whether bubblewrap works here. `RunSandbox` answers, for each Bash call, where it runs (in
the sandbox, outside it, or nowhere) and wraps it: the bwrap command line, the environment inside, and, when
`allowedDomains` names hosts, a filtering proxy for the duration of the command.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import AsyncGenerator, Container, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypeAlias

import anyio

from ..errors import ConfigError
from ..permissions.patterns import compile_command_pattern
from .config import SandboxConfig
from .domains import DomainRules
from .explain import notes
from .hidden import ReadDenials
from .layout import (
    PROXY_SOCKET,
    Layout,
    absent_protected_paths,
    bwrap_arguments,
    existing,
    protected_paths,
    real,
    remove_placeholder,
    resolve_setting_path,
    secret_paths,
)
from .platform import Availability, probe
from .proxy import FilteringProxy

logger = logging.getLogger(__name__)

SandboxMode: TypeAlias = Literal["auto", "on", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "on", "off")
PROXY_PORT = 3128
"""The loopback port inside the sandbox that HTTP_PROXY points at."""
_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
_NO_PROXY = "localhost,127.0.0.1,::1"

# Inside the sandbox: start socat, wait until it listens (its -d -d log says so), then become the command.
_RELAY_THEN_RUN = (
    f"exec 3< <(exec {{socat}} -d -d TCP-LISTEN:{PROXY_PORT},bind=127.0.0.1,fork,reuseaddr "
    f"UNIX-CONNECT:{PROXY_SOCKET} 2>&1)\n"
    'while IFS= read -r line <&3; do case $line in *"listening on"*) break;; esac; done\n'
    "cat <&3 >/dev/null 2>&1 &\n"
    "exec 3<&-\n"
    'exec {shell} -c "$1"\n'
)


@dataclass(frozen=True, slots=True)
class Placement:
    sandboxed: bool
    refusal: str | None = None


class SandboxRuntime:
    """Whether commands are sandboxed in this server process, and the private directory the sandbox works in."""

    def __init__(
        self,
        config: SandboxConfig,
        mode: SandboxMode = "auto",
        *,
        state_dir: Path,
        home: Path,
        availability: Availability | None = None,
    ) -> None:
        """Raises:
        ConfigError: the mode is "on" but the sandbox cannot run here.
        """
        self.config = config
        self.state_dir = state_dir
        self.home = home
        self.availability = Availability(None, "turned off") if mode == "off" else availability
        self.state: Literal["on", "off", "required"]
        self.reason = ""
        self._base: Path | None = None
        self._masks: dict[Path, int] = {}
        """The placeholders standing in for missing protected files, with the number of commands using each."""
        if mode == "off":
            self.state, self.reason = "off", "turned off with --sandbox off"
        elif mode == "auto" and config.enabled is False:
            self.state, self.reason = "off", "turned off by sandbox.enabled: false in the settings"
        else:
            found = availability or probe(config.bwrap_path, config.socat_path)
            self.availability = found
            if found.available:
                self.state = "on"
            elif mode == "on":
                raise ConfigError(f"--sandbox on: the sandbox cannot run here: {found.reason}")
            elif config.fail_if_unavailable:
                self.state, self.reason = "required", found.reason
            else:
                self.state, self.reason = "off", found.reason

    @property
    def on(self) -> bool:
        return self.state == "on"

    def describe(self) -> str:
        if self.state == "on":
            network = ", ".join(self.config.network.allowed_domains) or "no network"
            return f"Bash sandbox on (bubblewrap; {network})"
        if self.state == "required":
            return (
                f"Bash sandbox unavailable and required (sandbox.failIfUnavailable), so Bash is refused: {self.reason}"
            )
        return f"Bash sandbox off: {self.reason}; commands run unconfined (permission rules still apply)"

    def base_dir(self) -> Path:
        if self._base is None:
            self._base = Path(tempfile.mkdtemp(prefix="mcp-subagents-sandbox-"))
            placeholder = self._base / "hidden"
            placeholder.touch(mode=0o000)
            placeholder.chmod(0o000)
        return self._base

    def masked_now(self) -> Container[Path]:
        return self._masks.keys()

    def hold_masks(self, paths: Sequence[Path]) -> None:
        for path in paths:
            self._masks[path] = self._masks.get(path, 0) + 1

    def release_masks(self, paths: Sequence[Path]) -> None:
        """A command using these placeholders ended: remove those no other command uses. (Removed while a command
        still ran, a placeholder would no longer guard the path inside its sandbox.)"""
        for path in paths:
            users = self._masks.pop(path, 1) - 1
            if users > 0:
                self._masks[path] = users
            else:
                remove_placeholder(path)

    def close(self) -> None:
        if self._base is not None:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    def for_run(
        self,
        *,
        cwd: Path,
        roots: Sequence[Path],
        read_denials: ReadDenials | None = None,
        extra_domains: Sequence[str] = (),
        protected_files: Sequence[Path] = (),
    ) -> RunSandbox | None:
        """The sandbox of one run; None when commands run unconfined."""
        if self.state == "off":
            return None
        return RunSandbox(
            self,
            cwd=cwd,
            roots=tuple(roots),
            read_denials=read_denials,
            domains=DomainRules(
                [*self.config.network.allowed_domains, *extra_domains], self.config.network.denied_domains
            ),
            protected_files=tuple(protected_files),
        )


@dataclass(slots=True)
class Wrapped:
    argv: list[str]
    env: dict[str, str]
    writable: tuple[Path, ...]
    hidden: dict[Path, str]
    truncated_hidden: bool
    network_allowed: bool
    proxy: FilteringProxy | None = None

    def explain(self, output: str, *, failed: bool) -> list[str]:
        return notes(
            output,
            failed=failed,
            writable=self.writable,
            network_refusals=self.proxy.refusals if self.proxy else (),
            network_allowed=self.network_allowed,
            hidden=self.hidden,
            truncated_hidden=self.truncated_hidden,
        )


@dataclass(slots=True)
class RunSandbox:
    runtime: SandboxRuntime
    cwd: Path
    roots: tuple[Path, ...]
    read_denials: ReadDenials | None
    domains: DomainRules
    protected_files: tuple[Path, ...] = ()
    _tmp: Path | None = field(default=None, init=False)
    _commands: int = field(default=0, init=False)

    def placement(self, command: str, *, leave_requested: bool) -> Placement:
        runtime = self.runtime
        if runtime.state == "required":
            return Placement(
                False,
                "Bash is not available: the settings require the sandbox (sandbox.failIfUnavailable), and it cannot "
                f"run here: {runtime.reason}",
            )
        if leave_requested:
            if not runtime.config.allow_unsandboxed_commands:
                return Placement(
                    False,
                    "dangerouslyDisableSandbox is refused: sandbox.allowUnsandboxedCommands is false in the settings, "
                    "so every command runs in the sandbox. Run it without dangerouslyDisableSandbox.",
                )
            return Placement(False)
        return Placement(not self.excluded(command))

    def excluded(self, command: str) -> bool:
        """Whether `command` is one of `sandbox.excludedCommands` (`docker` covers `docker ps`; wildcards work as in
        Bash rules)."""
        text = " ".join(command.split())
        for entry in self.runtime.config.excluded_commands:
            plain = " ".join(entry.split())
            if "*" in plain:
                if compile_command_pattern(plain).matches(text):
                    return True
            elif text == plain or text.startswith(plain + " "):
                return True
        return False

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _private_tmp(self) -> Path:
        if self._tmp is None or not self._tmp.is_dir():
            self._tmp = Path(tempfile.mkdtemp(prefix="run-", dir=self.runtime.base_dir()))
        return self._tmp

    @asynccontextmanager
    async def wrap(self, command: str, *, env: Mapping[str, str], cwd: Path) -> AsyncGenerator[Wrapped]:
        layout, hidden, truncated = await self._layout(cwd, env)
        self.runtime.hold_masks(layout.masked)
        try:
            async with self._wrapped(command, env, layout, hidden, truncated) as wrapped:
                yield wrapped
        finally:
            self.runtime.release_masks(layout.masked)

    @asynccontextmanager
    async def _wrapped(
        self, command: str, env: Mapping[str, str], layout: Layout, hidden: dict[Path, str], truncated: bool
    ) -> AsyncGenerator[Wrapped]:
        availability = self.runtime.availability
        assert availability is not None and availability.bwrap is not None
        network = self.domains.allows_any and availability.socat is not None
        if self.domains.allows_any and availability.socat is None:
            logger.warning(
                "sandbox.network.allowedDomains is set but socat is not installed: no network in the sandbox"
            )
        inner_env = {name: value for name, value in env.items() if name not in _PROXY_VARIABLES}
        inner_env["TMPDIR"] = "/tmp"
        shell = _shell()
        async with anyio.create_task_group() as group:
            proxy: FilteringProxy | None = None
            if network:
                self._commands += 1
                socket_path = self.runtime.base_dir() / f"proxy-{os.getpid()}-{id(self)}-{self._commands}.sock"
                proxy = FilteringProxy(self.domains, socket_path)
                await group.start(proxy.serve)
                layout = _with_proxy(layout, socket_path)
                inner_env |= dict.fromkeys(_PROXY_VARIABLES, f"http://127.0.0.1:{PROXY_PORT}")
                inner_env |= {"NO_PROXY": _NO_PROXY, "no_proxy": _NO_PROXY}
                script = _RELAY_THEN_RUN.format(socat=availability.socat, shell=shell)
                tail = [shell, "-c", script, "mcp-subagents-sandbox", command]
            else:
                tail = [shell, "-c", command]
            argv = [availability.bwrap, *bwrap_arguments(layout), "--", *tail]
            try:
                yield Wrapped(
                    argv=argv,
                    env=inner_env,
                    writable=layout.writable,
                    hidden=hidden,
                    truncated_hidden=truncated,
                    network_allowed=network,
                    proxy=proxy,
                )
            finally:
                group.cancel_scope.cancel()
                if proxy is not None:
                    proxy.socket_path.unlink(missing_ok=True)

    async def _layout(self, cwd: Path, env: Mapping[str, str]) -> tuple[Layout, dict[Path, str], bool]:
        found: list[Path] = []
        truncated = False
        if self.read_denials is not None:
            found, truncated = await self.read_denials.paths(dict(env))
        layout, hidden = self._layout_with(cwd, found)
        return layout, hidden, truncated

    def _layout_with(self, cwd: Path, denied_by_rules: Sequence[Path]) -> tuple[Layout, dict[Path, str]]:
        runtime = self.runtime
        settings = runtime.config.filesystem
        home = runtime.home

        def setting(entry: str) -> Path:
            return resolve_setting_path(entry, home=home, project=self.cwd)

        project_areas = existing(dict.fromkeys([real(self.cwd), *map(real, self.roots)]))
        masked = absent_protected_paths(project_areas, masked_now=runtime.masked_now())
        writable = [*project_areas, *existing(map(setting, settings.allow_write))]
        hidden: dict[Path, str] = {}
        for path in secret_paths(home):
            hidden[path] = "credentials and keys are hidden from sandboxed commands"
        for entry in (*settings.deny_read, *runtime.config.credentials.deny_files):
            hidden[setting(entry)] = "sandbox.filesystem.denyRead"
        hidden[real(runtime.state_dir)] = "the server's state directory"
        hidden[real(runtime.base_dir())] = "the sandbox's own files"
        for path in denied_by_rules:
            hidden.setdefault(real(path), "a Read deny rule")
        # A hidden path that holds a writable area would hide the area itself: keep the area.
        hidden = {
            path: why
            for path, why in hidden.items()
            if os.path.lexists(path) and not any(area.is_relative_to(path) for area in writable)
        }
        read_only = [
            *existing(map(setting, settings.deny_write)),
            *protected_paths(writable),
            *existing(map(real, self.protected_files)),
        ]
        read_only = [
            path for path in read_only if path not in masked and any(path.is_relative_to(area) for area in writable)
        ]
        layout = Layout(
            cwd=cwd,
            private_tmp=self._private_tmp(),
            placeholder_file=runtime.base_dir() / "hidden",
            writable=tuple(writable),
            read_only=tuple(read_only),
            hidden=tuple(hidden),
            readable_again=tuple(existing(map(setting, settings.allow_read))),
            masked=tuple(masked),
            unix_sockets=tuple(existing(map(setting, runtime.config.network.allow_unix_sockets))),
            hide_run=not runtime.config.network.allow_all_unix_sockets,
        )
        return layout, hidden


def _with_proxy(layout: Layout, socket_path: Path) -> Layout:
    return replace(layout, proxy_socket=socket_path)


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "/bin/sh"
