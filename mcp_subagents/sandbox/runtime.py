"""The sandbox of one server process (`SandboxRuntime`) and of one run (`RunSandbox`, what Bash calls through).

`SandboxRuntime` decides once whether the sandbox is on: the `--sandbox` mode (auto, on, off), the settings'
`sandbox.enabled`, and whether bubblewrap works here. `RunSandbox` answers, for each Bash call, where it runs (in
the sandbox, outside it, or nowhere) and wraps it: the bwrap command line, the environment inside, the seccomp
filter that closes Unix sockets, and, when `allowedDomains` names hosts, a filtering proxy for the duration of the
command. When the command ends, what it created among the guarded names is moved aside (`guarded`).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Container, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Literal, TypeAlias

import anyio

from ..core.errors import ConfigError
from ..permissions.patterns import compile_command_pattern
from .config import SandboxConfig
from .domains import DomainRules
from .explain import moved_aside_note, notes
from .guarded import GuardedTree, moved_aside, named_by_git
from .hidden import ReadDenials
from .layout import (
    PROXY_SOCKET,
    Layout,
    absent_guarded,
    bwrap_arguments,
    existing,
    make_absent_folders,
    real,
    remove_placeholder,
    resolve_setting_path,
    secret_paths,
    top_level_guarded,
)
from .platform import Availability, ProbeStop, probe
from .proxy import FilteringProxy
from .seccomp import APPLY_AND_EXEC, unix_socket_filter
from .wide import too_wide

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
_RELAY_THEN_FILTER_AND_RUN = _RELAY_THEN_RUN.replace(
    'exec {shell} -c "$1"', 'exec {python} -I -S -c "$2" "$3" {shell} -c "$1"'
)
QUARANTINE_FOLDER = "moved-aside"
"""Under the state directory: where guarded entries that sandboxed commands created are moved."""


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
        secret_files: Sequence[Path] = (),
        probe_stop: ProbeStop | None = None,
    ) -> None:
        """`secret_files`: the server's own secrets that flags point at (token files, TLS keys), hidden from commands
        like the state directory. `probe_stop`: lets the server end the bubblewrap probe when it shuts down.

        Raises:
            ConfigError: the mode is "on" but the sandbox cannot run here.
            ProbeStopped: `probe_stop` ended the probe.
        """
        self.config = config
        self.state_dir = state_dir
        self.home = home
        self.secret_files = tuple(secret_files)
        self.availability = Availability(None, "turned off") if mode == "off" else availability
        self.state: Literal["on", "off", "required"]
        self.reason = ""
        self._base: Path | None = None
        self._masks: dict[Path, int] = {}
        """The placeholders standing in for missing guarded names, with the number of commands using each."""
        self._trees: dict[Path, GuardedTree] = {}
        self._trees_lock = threading.Lock()
        if mode == "off":
            self.state, self.reason = "off", "turned off with --sandbox off"
        elif mode == "auto" and config.enabled is False:
            self.state, self.reason = "off", "turned off by sandbox.enabled: false in the settings"
        else:
            found = availability or probe(config.bwrap_path, config.socat_path, stop=probe_stop)
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
            return f"Bash sandbox on (bubblewrap; {network}; {self.unix_sockets_text()})"
        if self.state == "required":
            return (
                f"Bash sandbox unavailable and required (sandbox.failIfUnavailable), so Bash is refused: {self.reason}"
            )
        return f"Bash sandbox off: {self.reason}; commands run unconfined (permission rules still apply)"

    def unix_sockets_text(self) -> str:
        network = self.config.network
        if network.allow_all_unix_sockets:
            return "Unix sockets open (sandbox.network.allowAllUnixSockets)"
        if network.allow_unix_sockets:
            return (
                "Unix sockets open, since sandbox.network.allowUnixSockets names some and Linux cannot open single "
                "ones: a command can connect to any socket it can see outside /run"
            )
        if self.seccomp_filter is None:
            return "Unix sockets open: no seccomp filter is written for this machine's architecture"
        return "Unix sockets closed"

    @cached_property
    def seccomp_filter(self) -> bytes | None:
        """The filter that closes Unix sockets, or None when they stay open (the settings, or an architecture the
        filter is not written for)."""
        network = self.config.network
        if network.allow_all_unix_sockets or network.allow_unix_sockets:
            return None
        return unix_socket_filter()

    def base_dir(self) -> Path:
        if self._base is None:
            base = Path(tempfile.mkdtemp(prefix="mcp-subagents-sandbox-"))
            placeholder = base / "hidden"
            placeholder.touch(mode=0o000)
            placeholder.chmod(0o000)
            mask = base / "mask"
            mask.touch(mode=0o444)
            mask.chmod(0o444)
            (base / "mask-folder").mkdir(mode=0o555)
            self._base = base
        return self._base

    def guarded_tree(self, area: Path) -> GuardedTree:
        """The search for guarded names in one project area, shared by every run working there."""
        with self._trees_lock:
            tree = self._trees.get(area)
            if tree is None:
                tree = self._trees[area] = GuardedTree(area)
            return tree

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
        with self._trees_lock:
            for tree in self._trees.values():
                tree.close()
            self._trees.clear()
        if self._base is not None:
            (self._base / "mask-folder").chmod(0o755)
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
    pass_fds: tuple[int, ...] = ()
    """File descriptors the bwrap process must inherit (the seccomp filter's)."""
    moved: list[tuple[Path, Path]] = field(default_factory=lambda: list[tuple[Path, Path]]())
    """Guarded entries the command created, moved aside when it ended: (where, where to)."""
    settle: Callable[[], Awaitable[None]] | None = None
    """Set by `RunSandbox.wrap`: undo what the command's sandbox put in place and move aside what it created."""

    async def conclude(self, output: str, *, failed: bool) -> list[str]:
        """After the command ended: settle its sandbox, then what the model should know about what it blocked."""
        if self.settle is not None:
            with anyio.CancelScope(shield=True):
                await self.settle()
        return self.explain(output, failed=failed)

    def explain(self, output: str, *, failed: bool) -> list[str]:
        found = notes(
            output,
            failed=failed,
            writable=self.writable,
            network_refusals=self.proxy.refusals if self.proxy else (),
            network_allowed=self.network_allowed,
            hidden=self.hidden,
            truncated_hidden=self.truncated_hidden,
        )
        if self.moved:
            found.append(moved_aside_note(self.moved))
        return found


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one command's sandbox is made of, found before it starts."""

    layout: Layout
    hidden: dict[Path, str]
    truncated_hidden: bool
    areas: tuple[Path, ...]
    """The project areas searched for guarded names (the writable working directory and roots)."""
    guarded: frozenset[Path]
    """What the search found before the command."""


@dataclass(slots=True)
class RunSandbox:
    runtime: SandboxRuntime
    cwd: Path
    roots: tuple[Path, ...]
    read_denials: ReadDenials | None
    domains: DomainRules
    protected_files: tuple[Path, ...] = ()
    """Files outside the guarded names that stay read-only: the settings files, the scripts hooks run."""
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
        """The command, wrapped to run in the sandbox. Once it has run, `Wrapped.conclude` (or the end of the block,
        however it ends) takes the placeholders away and moves aside the guarded entries the command created."""
        plan = await self._plan(cwd, env)
        masked = (*plan.layout.masked, *plan.layout.masked_folders)
        self.runtime.hold_masks(masked)
        held = [True]

        async def settle(wrapped: Wrapped | None) -> None:
            if held[0]:
                held[0] = False
                self.runtime.release_masks(masked)
                moved = await anyio.to_thread.run_sync(self._move_aside_created, plan)
                if wrapped is not None:
                    wrapped.moved += moved

        wrapped: Wrapped | None = None
        try:
            async with self._wrapped(command, env, plan) as wrapped:
                wrapped.settle = partial(settle, wrapped)
                yield wrapped
        finally:
            with anyio.CancelScope(shield=True):
                await settle(wrapped)

    @asynccontextmanager
    async def _wrapped(self, command: str, env: Mapping[str, str], plan: _Plan) -> AsyncGenerator[Wrapped]:
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
        layout = plan.layout
        seccomp = self.runtime.seccomp_filter
        filter_fd: int | None = None
        async with anyio.create_task_group() as group:
            proxy: FilteringProxy | None = None
            if network:
                self._commands += 1
                socket_path = self.runtime.base_dir() / f"proxy-{os.getpid()}-{id(self)}-{self._commands}.sock"
                proxy = FilteringProxy(self.domains, socket_path)
                await group.start(proxy.serve)
                layout = replace(layout, proxy_socket=socket_path)
                inner_env |= dict.fromkeys(_PROXY_VARIABLES, f"http://127.0.0.1:{PROXY_PORT}")
                inner_env |= {"NO_PROXY": _NO_PROXY, "no_proxy": _NO_PROXY}
                if seccomp is None:
                    script = _RELAY_THEN_RUN.format(socat=availability.socat, shell=shell)
                    tail = [shell, "-c", script, "mcp-subagents-sandbox", command]
                else:  # the relay needs a Unix socket: it starts first, and the filter goes on the command alone
                    python = _interpreter()
                    layout = replace(layout, readable_system=_interpreter_folders(python))
                    script = _RELAY_THEN_FILTER_AND_RUN.format(socat=availability.socat, shell=shell, python=python)
                    tail = [shell, "-c", script, "mcp-subagents-sandbox", command, APPLY_AND_EXEC, seccomp.hex()]
            else:
                if seccomp is not None:
                    filter_fd = _filter_descriptor(seccomp)
                    layout = replace(layout, seccomp_fd=filter_fd)
                tail = [shell, "-c", command]
            argv = [availability.bwrap, *bwrap_arguments(layout), "--", *tail]
            try:
                yield Wrapped(
                    argv=argv,
                    env=inner_env,
                    writable=layout.writable,
                    hidden=plan.hidden,
                    truncated_hidden=plan.truncated_hidden,
                    network_allowed=network,
                    proxy=proxy,
                    pass_fds=() if filter_fd is None else (filter_fd,),
                )
            finally:
                if filter_fd is not None:
                    os.close(filter_fd)
                group.cancel_scope.cancel()
                if proxy is not None:
                    proxy.socket_path.unlink(missing_ok=True)

    async def _plan(self, cwd: Path, env: Mapping[str, str]) -> _Plan:
        found: list[Path] = []
        truncated = False
        if self.read_denials is not None:
            found, truncated = await self.read_denials.paths(dict(env))
        areas = self._project_areas()
        make_absent_folders(areas)
        guarded = await anyio.to_thread.run_sync(self._guarded_now, areas)
        layout, hidden = self._layout_with(cwd, found, areas, guarded)
        return _Plan(layout, hidden, truncated, areas, guarded)

    def _project_areas(self) -> tuple[Path, ...]:
        """The working directory and the roots that commands may write in: existing, each once, and none that is
        too wide to be a project (`/`, the home directory or above it)."""
        home = self.runtime.home
        candidates = existing(dict.fromkeys([real(self.cwd), *map(real, self.roots)]))
        return tuple(area for area in candidates if too_wide(area, home) is None)

    def _guarded_now(self, areas: Sequence[Path]) -> frozenset[Path]:
        found: set[Path] = set()
        for area in areas:
            found |= self.runtime.guarded_tree(area).snapshot()
        named = named_by_git(found, areas, self.runtime.home)
        return frozenset(found | {path for path in named if any(path.is_relative_to(area) for area in areas)})

    def _move_aside_created(self, plan: _Plan) -> list[tuple[Path, Path]]:
        """Move the guarded entries that appeared while the command ran (not another command's placeholders)."""
        runtime = self.runtime
        if not plan.areas or not all(runtime.guarded_tree(area).complete for area in plan.areas):
            return []
        created = self._guarded_now(plan.areas) - plan.guarded
        masked = runtime.masked_now()
        moved: list[tuple[Path, Path]] = []
        for area in plan.areas:
            mine = sorted(entry for entry in created if entry.is_relative_to(area) and entry not in masked)
            if mine:
                folder = runtime.state_dir / QUARANTINE_FOLDER / area.name
                moved += moved_aside(mine, area=area, quarantine=folder)
        for entry, target in moved:
            logger.warning("a sandboxed command created %s; moved aside to %s", entry, target)
        return moved

    def _layout_with(
        self, cwd: Path, denied_by_rules: Sequence[Path], areas: Sequence[Path], guarded: frozenset[Path]
    ) -> tuple[Layout, dict[Path, str]]:
        runtime = self.runtime
        settings = runtime.config.filesystem
        home = runtime.home

        def setting(entry: str) -> Path:
            return resolve_setting_path(entry, home=home, project=self.cwd)

        masked, masked_folders = absent_guarded(areas, masked_now=runtime.masked_now())
        extra = [path for path in existing(map(setting, settings.allow_write)) if too_wide(path, home) is None]
        writable = [*areas, *extra]
        hidden: dict[Path, str] = {}
        for path in secret_paths(home):
            hidden[path] = "credentials and keys are hidden from sandboxed commands"
        for entry in (*settings.deny_read, *runtime.config.credentials.deny_files):
            hidden[setting(entry)] = "sandbox.filesystem.denyRead"
        hidden[real(runtime.state_dir)] = "the server's state directory"
        hidden[real(runtime.base_dir())] = "the sandbox's own files"
        for path in runtime.secret_files:
            hidden[real(path)] = "the server's own secrets (token file, TLS key)"
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
            *existing(real(path) for path in guarded),
            *existing(map(real, top_level_guarded(extra))),
            *existing(map(real, self.protected_files)),
        ]
        read_only = [
            path
            for path in dict.fromkeys(read_only)
            if path not in masked and any(path.is_relative_to(area) for area in writable)
        ]
        layout = Layout(
            cwd=cwd,
            private_tmp=self._private_tmp(),
            placeholder_file=runtime.base_dir() / "hidden",
            mask_file=runtime.base_dir() / "mask",
            mask_folder=runtime.base_dir() / "mask-folder",
            writable=tuple(writable),
            read_only=tuple(read_only),
            hidden=tuple(hidden),
            readable_again=tuple(existing(map(setting, settings.allow_read))),
            masked=tuple(masked),
            masked_folders=tuple(masked_folders),
            unix_sockets=tuple(existing(map(setting, runtime.config.network.allow_unix_sockets))),
            hide_run=not runtime.config.network.allow_all_unix_sockets,
        )
        return layout, hidden


def _filter_descriptor(program: bytes) -> int:
    """A pipe's read end holding the filter, for bwrap's `--seccomp` (a program fits in the pipe's buffer)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, program)
    finally:
        os.close(write_end)
    return read_end


def _interpreter() -> str:
    """The Python interpreter that puts the filter on inside the sandbox: this server's own, resolved (a virtual
    environment's `python` is a link to it)."""
    return os.path.realpath(sys.executable)


def _interpreter_folders(python: str) -> tuple[Path, ...]:
    """What the interpreter needs that the private /tmp would hide: its installation, when it lies under /tmp."""
    folders = {Path(os.path.realpath(sys.base_prefix)), Path(python).parent}
    return tuple(sorted(folder for folder in folders if folder.is_relative_to("/tmp")))


def _shell() -> str:
    if os.path.exists("/bin/bash"):
        return "/bin/bash"
    return shutil.which("bash") or "/bin/sh"
