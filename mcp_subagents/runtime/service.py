"""`Subagents`: the runtime of one server process. Resolves a Task call into a run and hands it to the TaskManager."""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import TaskGroup

from ..config.claude_settings import ClaudeSettings, ClaudeSettingsFiles, SettingsLocations
from ..config.settings import Settings
from ..config.trust import ProjectTrust
from ..core.environment import scrubbed_environment, secret_values
from ..core.errors import ConfigError, ProviderNotConfiguredError, SubagentsError, ToolError, UnknownAgentError
from ..core.principals import LOCAL_PRINCIPAL
from ..core.redaction import Redactor
from ..core.state import prepare_state_dir
from ..definitions import (
    AgentDefinition,
    Catalog,
    CatalogLoader,
    DefinitionSources,
    MissingTool,
    builtin_agents_dir,
    matching_tools,
    missing_tools,
    require_some_tool,
    tool_base_name,
)
from ..definitions.cache import CACHE_FILE as CATALOG_CACHE_FILE
from ..definitions.trust import untrusted_source, without_plugin_extras
from ..models.providers import MISSING_PROVIDER_MESSAGE, ProviderConfig, create_model, provider_config
from ..models.resolve import MODEL_ALIASES, MODEL_HINT, resolve_model_id
from ..tools import BUILTIN_TOOL_NAMES, PER_RUN_TOOL_NAMES, builtin_tools
from .request import TaskRequest

# The task engine (the manager, the loop, the conversation model, transcripts, prices) loads when a task first needs
# it, or in the warm-up after the host first lists the tools: not on the way to that first answer.
if TYPE_CHECKING:
    from ..agent.hooks import StartAnswer
    from ..agent.loop import AgentRun, RunResult
    from ..agent.setup import AgentExtras
    from ..core.hook_points import PermissionHook, ToolGate
    from ..core.messages import Message
    from ..models.base import Model
    from ..models.pricing import ModelPrice, PriceFiles
    from ..permissions.asking import Asker, Denial
    from ..permissions.policy import PermissionPolicy
    from ..permissions.rules import PermissionRules
    from ..sandbox import RunSandbox, SandboxConfig, SandboxRuntime
    from ..tasks.manager import TaskManager
    from ..tasks.record import Listener, TaskBudget, TaskObserver, TaskRecord
    from ..tools import Tool
    from ..tools.base import ModelAccess
    from .extensions import Extensions, RunPlace

logger = logging.getLogger(__name__)


class PendingScan(Protocol):
    """Another process parsing the agent files into the catalog's cache (the CLI's prescan of a first start)."""

    def wait(self) -> None:
        """Block until it is done (or given up on)."""
        ...


_KEPT_POLICIES = 64
"""Permission policies kept for reuse (agent, place and settings snapshot): more than a host launches at once."""

TASK_ENGINE_MODULES = (
    "mcp_subagents.tasks.manager",  # the manager, the loop, transcripts, the conversation model, results
    "mcp_subagents.mcp.foreground",  # the Task tool's calls
    "mcp_subagents.models.pricing",
    "mcp_subagents.tools.base",
)
"""What any task needs and start-up does without (about a third of the server's own modules' import time): loaded by
the warm-up, before the provider's SDK."""

FIRST_RUN_MODULES = (
    "mcp_subagents.agent.setup",
    "mcp_subagents.runtime.extensions",  # hooks, per-agent MCP servers, the nested Task tool
    "mcp_subagents.tools.web_search",
    "mcp_subagents.sandbox.gate",
    "mcp_subagents.permissions",
    "mcp_subagents.permissions.gate",
    "mcp_subagents.tools.shell",
    "mcp_subagents.agent.project_context",
    "yaml",  # an agent listed from the catalog cache is parsed when a Task first needs it
    "pathspec",  # path rules (Read(...), Edit(...)) compile at a run's first permission check
    "httpcore2",  # the provider SDKs' HTTP transport, which their client imports only at its first request
)
"""What the first Task imports besides the provider SDK and the tools (kept off the start-up path, loaded by the
warm-up)."""


def _import_all(names: Sequence[str]) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:  # a transport another version of the SDK does not use
            continue


def settings_locations(settings: Settings) -> SettingsLocations:
    """Where Claude Code's settings files are for these flags: the user's, the project's, `--settings`, and the
    managed policy (`--policy-file`, else its default location)."""
    return SettingsLocations(
        user=settings.user_settings_file,
        project_root=settings.working_directory,
        flag=settings.settings_file,
        managed=settings.policy_file or settings.managed_settings_file,
        managed_named=settings.policy_file is not None,
        sources=tuple(level for level in ("user", "project", "local") if level in settings.setting_sources),
    )


def definition_sources(settings: Settings, settings_files: ClaudeSettingsFiles | None = None) -> DefinitionSources:
    return DefinitionSources(
        builtin_dir=builtin_agents_dir(),
        plugin_dirs=settings.plugin_dirs,
        user_dir=settings.user_agents_dir,
        project_root=settings.working_directory,
        extra_dirs=settings.agents_dirs,
        agents_json=settings.agents_json,
        settings_files=settings_files or ClaudeSettingsFiles(settings_locations(settings)),
    )


def check_settings_files(settings_files: ClaudeSettingsFiles) -> ClaudeSettings:
    """Read the settings files once at start: a file named by a flag that is missing, not a JSON object, or holds
    a rule that does not parse stops the server. Problems in files at default locations are the caller's to log.

    Raises:
        ConfigError: one line naming the flag, the file and the problem.
    """
    snapshot = settings_files.check()
    flagged = [file for file in snapshot.files if file.level == "flag"]
    if settings_files.locations.managed_named:
        flagged += [file for file in snapshot.at("managed") if file.path == settings_files.locations.managed]
    if flagged:
        from ..permissions.rules import rules_in_file

        for file in flagged:
            _, problems = rules_in_file(file)
            if problems:
                flag = "--settings" if file.level == "flag" else "--policy-file"
                raise ConfigError(f"{flag} {problems[0]}")
    return snapshot


@dataclass(frozen=True, slots=True)
class ToolSelection:
    tools: dict[str, Tool]
    """The agent's tools, by name, in the order they were chosen."""
    missing: list[MissingTool]
    """Entries of the definition's `tools` that give it no tool, and why."""


def select_tools(
    definition: AgentDefinition, available: Mapping[str, Tool], granted: Sequence[str] = ()
) -> ToolSelection:
    """Apply `disallowedTools` first, then `tools` plus `granted` (tools the agent's features need, such as its
    memory's Read/Write/Edit). `Task`/`Agent` (and `Task(a, b)`) select the nested Task tool when the run has one;
    `mcp__server__*` and `mcp__server` select every tool of that MCP server."""

    disallowed = [tool_base_name(entry) for entry in definition.disallowed_tools]
    listed = [tool_base_name(entry) for entry in definition.tools] if definition.tools is not None else []
    wanted = list(available) if definition.tools is None else [*listed, *granted]
    chosen: dict[str, Tool] = {}
    for entry in wanted:
        for name in matching_tools(entry, available) or ():
            if name not in chosen and not any(name in (matching_tools(d, available) or ()) for d in disallowed):
                chosen[name] = available[name]
    return ToolSelection(chosen, missing_tools(definition, available, mcp_tools_known=True))


def read_filter(policy: PermissionPolicy) -> Callable[[str], bool] | None:
    from ..permissions.context import read_filter as policy_read_filter

    return policy_read_filter(policy)


def redirect_check(policy: PermissionPolicy) -> Callable[[str], Awaitable[None]]:
    """WebFetch's check of a redirect to another host: the permission rules must allow that URL outright (nobody is
    asked in the middle of a fetch; the model can fetch the new URL itself, which asks)."""
    from ..permissions import decide

    async def check(url: str) -> None:
        verdict = decide(policy, "WebFetch", {"url": url, "prompt": ""})
        if verdict.decision != "allow":
            raise ToolError(
                f"The page redirects to {url}, which this fetch may not follow: {verdict.reason} To go there, "
                "call WebFetch with that URL."
            )

    return check


def permission_gate(
    policy: PermissionPolicy,
    *,
    agent: str,
    ask: Asker,
    denials: list[Denial],
    permission_hook: PermissionHook | None = None,
) -> ToolGate:
    from ..permissions.gate import PermissionGate  # the rule engine loads at the first run, not at start-up

    return PermissionGate(policy, agent=agent, ask=ask, denials=denials, permission_hook=permission_hook)


def _wide_warning(reason: str) -> str:
    return (
        f"Bash sandbox: {reason}; sandboxed commands are never run without asking there. Start the server with --cwd "
        "set to the project folder."
    )


def _stopped_at_start(start: StartAnswer) -> RunResult:
    """A SubagentStart hook said `continue: false`: the agent never runs."""
    from ..agent.loop import RunResult
    from ..core.messages import Usage

    return RunResult(
        text="",
        stop="hook_stopped",
        messages=[],
        usage=Usage(),
        turns=0,
        tool_uses=0,
        duration_s=0.0,
        stop_reason=start.stop,
    )


class Subagents:
    """The runtime of one server process: agent definitions, the model provider and the task manager.

    `launch` turns a Task call into a task; `build_server(app)` puts it behind MCP. Pass `model` (a `ScriptedModel`,
    say) to run without a provider, and `environ` to read provider keys from somewhere other than `os.environ`;
    `tracer_provider` (an OpenTelemetry `TracerProvider`) turns traces on, as `--otel` does with the process's
    provider. `catalog_prescan`: another process parsing the agent files into the cache (a first start); the
    first scan waits for it.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        model: Model | None = None,
        environ: Mapping[str, str] | None = None,
        tracer_provider: Any = None,
        catalog_prescan: PendingScan | None = None,
    ):
        self.settings = settings
        self.environ = dict(os.environ if environ is None else environ)
        self.redact = Redactor(secret_values(self.environ))
        """Removes this process's secrets (and their encoded forms) from text the server sends or writes."""
        self.settings_files = ClaudeSettingsFiles(settings_locations(settings))
        self._warned: set[str] = set()
        for problem in check_settings_files(self.settings_files).problems:
            self.warn_once(f"settings file skipped or partly ignored: {problem}")
        self.loader = CatalogLoader(
            definition_sources(settings, self.settings_files), cache_file=settings.state_dir / CATALOG_CACHE_FILE
        )
        self._catalog: Catalog | None = None
        self._scan_lock = threading.Lock()
        self._prescan = catalog_prescan
        self._tasks: TaskManager | None = None
        self._task_group: TaskGroup | None = None
        self._control_name: str | None = None
        self._model = model
        self._model_lock = anyio.Lock()
        self._provider: ProviderConfig | None = provider_config(settings.provider, self.environ)
        self._rules: tuple[ClaudeSettings, PermissionRules] | None = None
        self._untrusted_settings: tuple[ClaudeSettings, ClaudeSettings] | None = None
        """The last snapshot loaded for an untrusted project, and what a run obeys of it."""
        self._policies: dict[tuple[object, ...], tuple[ClaudeSettings, AgentDefinition, PermissionPolicy]] = {}
        self._plugin_runs: dict[int, tuple[AgentDefinition, AgentDefinition]] = {}
        """Plugin agents' definitions (by identity) and the ones their tasks run (`_as_it_runs`)."""
        if self.provider_name == "openai" and settings.model in MODEL_ALIASES:
            logger.warning(
                "an OpenAI-compatible endpoint is configured but no model: Task refuses agents whose file names "
                "none. %s.",
                MODEL_HINT,
            )
        self.trust = ProjectTrust(settings.claude_config_file, settings.trust_projects)
        self._background: TaskGroup | None = None
        self._warming = False
        self.model_ready = anyio.Event()
        """Set once the model provider is built (by the warm-up or by the first Task)."""
        if settings.otel or tracer_provider is not None:
            self.tasks.observer = self._task_tracer(tracer_provider)

        self._sandbox: SandboxRuntime | None = None
        self._sandbox_lock = threading.Lock()
        if settings.sandbox == "on":
            self._sandbox_runtime()  # `--sandbox on` refuses to start where the sandbox cannot run

    @property
    def tasks(self) -> TaskManager:
        """The task manager, built at its first use: by the warm-up right after the host first lists the tools, or
        by whatever needs it sooner. Inside `running()` it runs its tasks in the runtime's task group."""
        if self._tasks is None:
            self._tasks = self._task_manager()
        return self._tasks

    def _task_manager(self) -> TaskManager:
        from ..render.status import OUTPUT_FILE_TEXTS
        from ..tasks.manager import TaskManager
        from ..tasks.record import TaskLimits

        settings = self.settings
        manager = TaskManager(
            state_dir=settings.state_dir,
            limits=TaskLimits(
                max_concurrent=settings.max_concurrent,
                task_timeout=settings.task_timeout,
                idle_timeout=settings.idle_timeout,
                max_result_chars=settings.max_result_chars,
                ask_timeout=settings.ask_timeout,
            ),
            texts=OUTPUT_FILE_TEXTS,
            secrets=secret_values(self.environ),
        )
        manager.control_name = self._control_name
        if self._task_group is not None:
            manager.serve_in(self._task_group)
        return manager

    @cached_property
    def prices(self) -> PriceFiles:
        """The model prices a task's cost is counted in. They come from the user's, --settings and managed files,
        lowest first: a project's own files (a cloned repository's) cannot lower what a budget counts."""
        from ..models.pricing import PriceFiles

        candidates = self.settings_files.locations.candidates(self.settings.working_directory)
        return PriceFiles(*(path for level, path, _ in candidates if level not in ("project", "local")))

    @property
    def sandbox(self) -> SandboxRuntime:
        """The Bash sandbox of this process. Built at its first use, or by the warm-up right after the host first
        lists the tools (with `--sandbox on`, at start): importing it and probing bubblewrap took 40 ms of the
        start-up. Either way before any subagent runs a tool, so no subagent can have changed what it reads."""
        return self._sandbox if self._sandbox is not None else self._sandbox_runtime()

    async def _sandbox_ready(self) -> None:
        """Build the sandbox in a worker thread unless it is built: the probe runs a process, and when the warm-up
        is building it, the thread waits for it instead of the event loop."""
        if self._sandbox is None:
            await anyio.to_thread.run_sync(self._sandbox_runtime, abandon_on_cancel=True)

    def _sandbox_runtime(self) -> SandboxRuntime:
        with self._sandbox_lock:  # the warm-up builds it in a worker thread while a Task may need it
            if self._sandbox is None:
                self._sandbox = self._build_sandbox()
            return self._sandbox

    def _build_sandbox(self) -> SandboxRuntime:
        """Raises:
        ConfigError: `--sandbox on`, and the sandbox cannot run here.
        """
        from ..sandbox import SandboxRuntime

        settings = self.settings
        sandbox = SandboxRuntime(
            self._sandbox_config(),
            "off" if settings.sandbox == "off" else "on" if settings.sandbox == "on" else "auto",
            state_dir=settings.state_dir,
            home=self._home,
            secret_files=[path for path in (settings.auth_token_file, settings.tls_key, settings.tls_cert) if path],
        )
        for unused in sandbox.config.unused:
            logger.info("%s", unused)
        chosen = sandbox.state == "on" or settings.sandbox == "off" or sandbox.config.enabled is False
        (logger.info if chosen else logger.warning)("%s", sandbox.describe())
        if sandbox.on:
            self._warn_if_too_wide()
        return sandbox

    @property
    def _home(self) -> Path:
        return Path(self.environ.get("HOME") or Path.home())

    @property
    def sandbox_auto_allow(self) -> bool:
        """Whether sandboxed Bash runs without asking: `sandbox.autoAllowBashIfSandboxed: true` in the settings, or
        `--sandbox auto-allow`. Off by default, as in Claude Code."""
        return self.settings.sandbox == "auto-allow" or self.sandbox.config.auto_allow_bash_if_sandboxed

    def _warn_if_too_wide(self) -> None:
        """Say at set-up when the folder runs start in cannot be confined to: hosts start servers in / or $HOME."""
        from ..sandbox.wide import too_wide

        reason = too_wide(self.settings.working_directory, self._home)
        if reason is not None:
            hosts = "" if self.settings.cwd is not None else " (a host that sends its roots names the project instead)"
            self._warn_too_wide(f"the project folder {reason}", hosts)

    def _warn_too_wide(self, reason: str, hint: str = "") -> None:
        """Log once per folder that the sandbox cannot confine writes to it (at set-up, or for a run's roots)."""
        if reason not in self._warned:
            self._warned.add(reason)
            logger.warning("%s%s", _wide_warning(reason), hint)

    def _sandbox_config(self) -> SandboxConfig:
        """The `sandbox` block of the settings hierarchy for the working directory (read once, when the sandbox is
        built); a repository's own settings files can only confine more until the project is trusted. A broken
        block is reported and the defaults apply."""
        from ..sandbox import SandboxConfig, SandboxConfigError, parse_sandbox_config, sandbox_block

        project = self.settings.working_directory
        files = self.settings_files.load(project).files
        block = sandbox_block([(f.level, f.data) for f in files], project_trusted=self.trust.is_trusted(project))
        try:
            return parse_sandbox_config(block)
        except SandboxConfigError as exc:
            logger.error("%s in the sandbox settings; using the sandbox defaults", exc.message)
            return SandboxConfig()

    def _task_tracer(self, provider: Any) -> TaskObserver:
        try:
            from .telemetry import TaskTracer, install_tracer_provider
        except ImportError:
            raise ConfigError("--otel needs the OpenTelemetry SDK: pip install 'mcp-subagents[otel]'") from None
        return TaskTracer(provider or install_tracer_provider(), provider_name=self.provider_name)

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Subagents]:
        """Run the task manager (and close the provider's client at the end); tasks launch only inside it."""
        await anyio.to_thread.run_sync(
            partial(prepare_state_dir, self.settings.state_dir, keep_days=self.settings.keep_days)
        )
        await self.refresh_catalog()  # parsing every agent file is no job for the event loop
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            if self._tasks is not None:
                self._tasks.serve_in(task_group)
            try:
                async with anyio.create_task_group() as background:
                    self._background = background
                    self._open_control_channel(background)
                    try:
                        yield self
                    finally:
                        self._background = None
                        background.cancel_scope.cancel()
                        if self._sandbox is not None:
                            self._sandbox.close()
                        close = getattr(self._model, "aclose", None)
                        if close is not None:
                            with anyio.CancelScope(shield=True):
                                await close()
            finally:
                self._task_group = None
                if self._tasks is not None:
                    self._tasks.close()
                task_group.cancel_scope.cancel()

    @property
    def provider_name(self) -> str:
        """`anthropic`, `openai`, the injected model's provider name, or `none`."""
        if self._model is not None:
            return self._model.provider
        return self._provider.name if self._provider else "none"

    def catalog(self) -> Catalog:
        """The agents in effect, as last scanned: no file is read or stat-ed here once a scan has run. The watcher
        keeps it fresh (`rescan` in a worker thread), and a Task call rescans first when it needs to."""
        catalog = self._catalog
        return catalog if catalog is not None else self.rescan()

    def rescan(self) -> Catalog:
        """Scan every definition source and make the result current; blocking, so meant for a worker thread.

        An unchanged tree keeps the very same `Catalog` object, so what is derived from it can be cached on it."""
        with self._scan_lock:
            if self._prescan is not None:  # a first start: another process is parsing the files into the cache
                self._prescan.wait()
                self._prescan = None
            catalog = self.loader.load()
            if catalog != self._catalog:
                self._catalog = catalog
            return self._catalog or catalog

    async def refresh_catalog(self) -> Catalog:
        """`rescan` in a worker thread."""
        return await anyio.to_thread.run_sync(self.rescan)

    async def catalog_for_task(self, name: object) -> Catalog:
        """The catalog to launch agent `name` from: the current one, scanned again first (in a worker thread) when
        it has no such agent or that agent's file changed since, so a file just added or edited is used at once."""
        catalog = self.catalog()
        if not isinstance(name, str):
            return catalog
        definition = catalog.get(name)
        if definition is None or self.loader.changed_since_scan(definition):
            catalog = await self.refresh_catalog()
        return catalog

    def definition(self, name: str, catalog: Catalog | None = None) -> AgentDefinition:
        """The named agent.

        Raises:
            UnknownAgentError: no agent has that name.
        """
        catalog = catalog or self.catalog()
        definition = catalog.get(name)
        if definition is None:
            raise UnknownAgentError(name, list(catalog.names()))
        return definition

    def _open_control_channel(self, group: TaskGroup) -> None:
        """Let `mcp-subagents tasks stop` and the dashboard stop this process's tasks."""
        from ..tasks.control import ControlChannel

        channel = ControlChannel(self.settings.state_dir, self._stop_own)
        try:
            channel.open()
        except OSError as exc:
            logger.warning("no control channel in %s (%s): tasks stop cannot reach this server", channel.path, exc)
            return
        self._control_name = channel.name
        if self._tasks is not None:
            self._tasks.control_name = channel.name
        group.start_soon(channel.serve, name="control channel")

    def _stop_own(self, task_id: str) -> bool:
        return self._tasks is not None and self._tasks.stop_own(task_id)

    def warm_up(self) -> None:
        """Build the sandbox, the task manager and the model provider in the background, once: importing the
        provider's SDK takes seconds, and a Task that comes a little after start-up should not wait for it. Called
        after the host first lists the tools, so start-up itself stays quick."""
        if self._warming or self._background is None:
            return
        self._warming = True
        self._background.start_soon(self._warm, name="warm-up")

    async def _warm(self) -> None:
        try:
            await self._sandbox_ready()
        except Exception:  # the first Task meets the same problem again and reports it
            logger.debug("building the sandbox ahead of the first Task failed", exc_info=True)
        if self._tasks is None:
            await anyio.to_thread.run_sync(_import_all, TASK_ENGINE_MODULES, abandon_on_cancel=True)
            if self._tasks is None:
                self._tasks = self._task_manager()
        if self._model is None and self._provider is not None:
            await self._warm_model()

    async def _warm_model(self) -> None:
        try:
            await self.model()
            await anyio.to_thread.run_sync(_import_all, FIRST_RUN_MODULES, abandon_on_cancel=True)
            await anyio.to_thread.run_sync(self._build_run_types, abandon_on_cancel=True)
            logger.debug("ready for the first Task: the provider is built and what a run loads is loaded")
        except Exception:  # the first Task meets the same problem again and reports it
            logger.debug("building the model provider ahead of the first Task failed", exc_info=True)

    def _build_run_types(self) -> None:
        """What a first run builds lazily: the tools, their schemas and the transcript's message encoder."""
        from ..core.messages import UserMessage
        from ..tasks.outcome import TaskOutcome, encode_outcome
        from ..tasks.transcripts import encode_message
        from ..tools.base import input_schema
        from .nesting import NestedTaskInput

        for tool in self.tools.values():
            tool.definition()
        input_schema(NestedTaskInput)  # the nested Task tool is built per run, on this schema
        encode_message(UserMessage(content=""))
        encode_outcome(TaskOutcome(state="completed"))

    async def model(self) -> Model:
        """The provider's model adapter, built (and its SDK imported) on first use.

        Raises:
            ProviderNotConfiguredError: no provider is configured.
        """
        if self._model is not None:
            return self._model
        async with self._model_lock:
            if self._model is None:
                self._model = self._spread(
                    await create_model(
                        self._provider, deadline=self.settings.model_deadline, max_retries=self.settings.max_retries
                    )
                )
                self.model_ready.set()
            return self._model

    def _spread(self, model: Model) -> Model:
        """The provider's adapter, with model processes for the overflow of a busy server (`--model-processes`)."""
        if self._provider is None or self._background is None or self.settings.model_processes == 0:
            return model
        from ..models.spread import SpreadModel

        return SpreadModel(
            model,
            config=self._provider,
            deadline=self.settings.model_deadline,
            max_retries=self.settings.max_retries,
            processes=self.settings.model_processes,
            start_soon=self._background.start_soon,
            log_level=self.settings.log_level,
        )

    def launch(
        self,
        args: TaskRequest,
        *,
        catalog: Catalog | None = None,
        roots: tuple[Path, ...] = (),
        principal: str = LOCAL_PRINCIPAL,
        parent: TaskRecord | None = None,
        place: RunPlace | None = None,
        trace_meta: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        """Start a task in the manager; returns at once. `catalog` saves a rescan when the caller has just loaded it.

        The task belongs to `principal`, who alone can resume it, read it and stop it. A nested task (launched by
        the agent of `parent`) belongs to the parent's owner and works where the parent works (`place`).

        Raises:
            UnknownAgentError: no such subagent type.
            ProviderNotConfiguredError: no model provider is configured, or no model it serves.
            AgentToolsError: the agent's `tools` line names only tools that do not exist here.
            TaskNotFoundError: `resume` names no task.
            SubagentsError: `resume` names a task that is still running, or one another agent ran.
        """
        history: list[Message] = []
        if args.resume:
            definition, history = self._resumed(args.resume, args.subagent_type, principal, catalog)
        else:
            definition = self.definition(args.subagent_type, catalog)
        definition = self._as_it_runs(definition)
        if self._model is None and self._provider is None:
            raise ProviderNotConfiguredError(MISSING_PROVIDER_MESSAGE)
        model_id = self._model_id(definition, args)  # an alias an OpenAI endpoint does not serve is refused now
        self._refuse_without_tools(definition)

        async def job(record: TaskRecord, listener: Listener) -> RunResult:
            return await self._run_task(definition, args, roots, history, record, listener, place)

        budget = self._budget(definition, parent)
        return self.tasks.start(
            agent=definition.name,
            description=args.description,
            job=job,
            background=parent is None and (args.run_in_background or definition.background),
            resumed_from=args.resume,
            history=history,
            owner=principal,
            parent=parent,
            model=model_id,
            price=self._price(model_id, budget),
            budget=budget,
            turns=args.max_turns,
            trace_meta=trace_meta,
        )

    def _resumed(
        self, task_id: str, agent: str, principal: str, catalog: Catalog | None
    ) -> tuple[AgentDefinition, list[Message]]:
        """The agent and the conversation of the finished task `task_id`, which `agent` (when given) must have run.

        Raises:
            TaskNotFoundError, UnknownAgentError, SubagentsError: as `launch` says.
        """
        from ..tasks.transcripts import read_history

        previous = self.tasks.get(task_id, principal=principal)
        if not previous.finished:
            raise SubagentsError(
                f"Task {previous.id} is still {previous.state}; wait for it with TaskOutput or stop it with "
                "TaskStop before resuming it."
            )
        if agent and agent != previous.agent:  # none given (the CLI): the same
            raise SubagentsError(
                f"Task {previous.id} was run by the {previous.agent} agent, and resume continues it with that "
                f'agent, not {agent}. Call Task again with subagent_type "{previous.agent}" to '
                f"resume it, or without resume to start a new {agent} task."
            )
        return self.definition(previous.agent, catalog), read_history(self.tasks.transcript_path(previous.id))

    def _as_it_runs(self, definition: AgentDefinition) -> AgentDefinition:
        """The definition a task runs: a plugin agent's without the fields Claude Code ignores in plugin agents (the
        same object while the catalog keeps the file's, so what is cached on it is reused)."""
        kept = self._plugin_runs.get(id(definition))
        if kept is not None and kept[0] is definition:
            return kept[1]
        runs, warning = without_plugin_extras(definition)
        if warning is None:
            return definition
        self.warn_once(warning)
        if len(self._plugin_runs) >= _KEPT_POLICIES:
            self._plugin_runs.clear()
        self._plugin_runs[id(definition)] = (definition, runs)
        return runs

    async def _run_task(
        self,
        definition: AgentDefinition,
        args: TaskRequest,
        roots: tuple[Path, ...],
        history: Sequence[Message],
        record: TaskRecord,
        listener: Listener,
        inherited: RunPlace | None,
    ) -> RunResult:
        """One run, with what the agent file's extension points hold open for it (its worktree, its MCP servers),
        closed when it ends, fails or is stopped."""
        from ..agent.loop import run_agent
        from ..agent.setup import agent_extras, opening_message
        from ..core.messages import UserMessage
        from .extensions import Extender, RunPlace

        model = await self.model()
        await self._sandbox_ready()  # what runs next takes its environment from the sandbox settings
        project = self._working_directory(roots)
        place = inherited or RunPlace(project=project, cwd=project)
        extras = agent_extras(
            definition, cwd=place.project, claude_dir=self.settings.claude_dir, plugin_dirs=self.settings.plugin_dirs
        )
        extender = Extender(self, definition, args, record)
        async with AsyncExitStack() as held:
            place = await extender.isolate(place, held)
            extensions = await extender.open(roots, place, held)
            run = self._prepare_run(
                definition,
                args,
                roots,
                record,
                model=model,
                extras=extras,
                place=place,
                extensions=extensions,
                held=held,
            )
            start = await extensions.hooks.subagent_start() if extensions.hooks is not None else None
            if start is not None and start.stop is not None:
                return _stopped_at_start(start)
            context = (*extensions.context, *(start.context if start is not None else ()))
            prompt: str | UserMessage = UserMessage(content=args.prompt, context=context) if context else args.prompt
            if not args.resume:  # a resumed conversation already starts with the context: not twice
                opening = await opening_message(
                    args.prompt,
                    extras=extras,
                    cwd=place.cwd,
                    claude_dir=self.settings.claude_dir,
                    managed_dir=self.settings.policy_file.parent if self.settings.policy_file else None,
                    env=self.tool_environment(),
                )
                prompt = replace(opening, context=(*opening.context, *context))
            return await run_agent(run, prompt, model=model, history=history, on_event=listener)

    @cached_property
    def tools(self) -> dict[str, Tool]:
        """The built-in tools, by name."""
        return builtin_tools()

    def _working_directory(self, roots: tuple[Path, ...]) -> Path:
        # Without --cwd, the host's first root is the project: hosts often start servers in / or $HOME.
        return self.settings.cwd or (roots[0] if roots else self.settings.working_directory)

    def _prepare_run(
        self,
        definition: AgentDefinition,
        args: TaskRequest,
        roots: tuple[Path, ...],
        record: TaskRecord,
        *,
        model: Model,
        extras: AgentExtras,
        place: RunPlace,
        extensions: Extensions,
        held: AsyncExitStack,
    ) -> AgentRun:
        """The run of one task; what it opens for the run (its sandbox) closes with `held`."""
        from ..agent.loop import AgentRun
        from ..agent.setup import model_settings
        from ..models.profiles import model_profile
        from ..tools.base import ToolContext
        from .extensions import merged

        cwd = place.cwd
        claude_settings = extensions.claude_settings or self.run_settings(place.project)
        additional = self._additional_directories(claude_settings, place.project)
        # In a worktree the host's roots (the person's checkout) are out of reach: that is what isolation is for.
        host_roots = () if place.inside_worktree is not None else roots
        extra = (*host_roots, *additional, *extras.extra_roots)
        allowed = tuple(dict.fromkeys((cwd, *extra)))
        provider = self.provider_name
        available = merged(self.tools, extras.tools(provider), extensions.tools)
        selection = select_tools(definition, available, granted=extras.granted_tools)
        require_some_tool(definition, selection.missing, granted=bool(extras.granted_tools))
        for item in selection.missing:
            self.warn_once(f"agent {definition.name}: tool {item.entry!r} is left out: {item.reason}")
        tools = selection.tools
        limits = [self.settings.max_turns, definition.max_turns, args.max_turns]
        model_id = self._model_id(definition, args)
        profile = model_profile(model_id)
        chosen = model_settings(
            profile,
            provider=provider,
            file_effort=definition.effort,
            task_effort=args.effort,
            max_tokens=self.settings.max_tokens,
            compact_threshold=self.settings.compact_threshold,
        )
        policy = self._permission_policy(
            definition,
            place,
            allowed,
            claude_settings,
            extra_allow=extras.allow_rules,
            hook_files=self._hook_files(extensions, place),
        )
        sandbox = self._run_sandbox(policy, cwd, allowed)
        if sandbox is not None:
            held.callback(sandbox.close)
        gate = self._gate(definition, record, policy, sandbox, extensions)
        return AgentRun(
            agent=definition.name,
            system=extras.system_prompt(
                cwd=cwd, model=profile, tool_names=list(tools), worktree=place.worktree is not None
            ),
            model_id=model_id,
            tools=tools,
            context=ToolContext(
                cwd=cwd,
                allowed_roots=allowed,
                env=self.tool_environment(),
                processes=record.resources.processes,
                models=self._model_access(model, model_id, record),
                readable=read_filter(policy),
                sandbox=sandbox,
                check_url=redirect_check(policy),
            ),
            max_turns=min(limit for limit in limits if limit is not None),
            max_tokens=chosen.max_tokens,
            thinking=chosen.thinking,
            effort=chosen.effort,
            compact_threshold=chosen.compact_threshold,
            gate=gate,
            hooks=extensions.hooks,
            unavailable_tools=extensions.unavailable,
        )

    def _gate(
        self,
        definition: AgentDefinition,
        record: TaskRecord,
        policy: PermissionPolicy,
        sandbox: RunSandbox | None,
        extensions: Extensions,
    ) -> ToolGate:
        """The permission gate of a run; with the sandbox on, each Bash command is checked as the sandbox places it:
        inside (it runs unasked where the settings say autoAllowBashIfSandboxed and the sandbox confines writes to a
        project) or outside (it needs an allow rule that names it)."""

        def gate_for(checked: PermissionPolicy) -> ToolGate:
            return permission_gate(
                checked,
                agent=self._asking_name(definition, record),
                ask=partial(self.tasks.ask, record),
                denials=record.resources.denials,
                permission_hook=extensions.hooks,
            )

        if sandbox is None:
            return gate_for(policy)
        from ..sandbox.gate import SandboxAwareGate

        too_wide = self._too_wide(sandbox)
        if too_wide is not None:
            self._warn_too_wide(too_wide)
        sandboxed = replace(
            policy, bash_runs="sandboxed", sandbox_auto_allow=self.sandbox_auto_allow, sandbox_too_wide=too_wide
        )
        return SandboxAwareGate(
            sandbox=sandbox,
            gate=gate_for(policy),
            sandboxed_gate=gate_for(sandboxed),
            outside_gate=gate_for(replace(policy, bash_runs="outside_sandbox")),
            denials=record.resources.denials,
        )

    def _too_wide(self, sandbox: RunSandbox) -> str | None:
        """Why the run's sandbox cannot confine writes to a project (its working directory, a root or an
        `allowWrite` folder is /, the home directory or holds it), or None."""
        from ..sandbox.layout import resolve_setting_path
        from ..sandbox.wide import too_wide

        home = self._home
        folders = [
            ("the project folder", sandbox.cwd),
            *(("the allowed folder", root) for root in sandbox.roots),
            *(
                (
                    "the sandbox.filesystem.allowWrite folder",
                    resolve_setting_path(entry, home=home, project=sandbox.cwd),
                )
                for entry in self.sandbox.config.filesystem.allow_write
            ),
        ]
        for label, folder in folders:
            reason = too_wide(folder, home)
            if reason is not None:
                return f"{label} {reason}"
        return None

    def _run_sandbox(self, policy: PermissionPolicy, cwd: Path, allowed: tuple[Path, ...]) -> RunSandbox | None:
        from ..permissions.patterns import DomainPattern, PathPattern
        from ..sandbox.hidden import ReadDenials

        deny = policy.rules.listed("deny")
        patterns = tuple(
            rule.matcher for rule in deny if rule.applies_to("Read") and isinstance(rule.matcher, PathPattern)
        )
        domains = [
            rule.matcher.host
            for rule in policy.rules.listed("allow")
            if rule.applies_to("WebFetch") and isinstance(rule.matcher, DomainPattern)
        ]
        # The configuration files, as the policy has just listed them.
        settings_files = [Path(path) for path in policy.protected.files]
        return self.sandbox.for_run(
            cwd=cwd,
            roots=allowed,
            read_denials=ReadDenials(patterns, policy.bases, allowed) if patterns else None,
            extra_domains=domains,
            protected_files=settings_files,
        )

    def _model_id(self, definition: AgentDefinition, args: TaskRequest) -> str:
        """The model the task runs on.

        Raises:
            ProviderNotConfiguredError: an OpenAI-compatible endpoint and no model it serves.
        """
        return resolve_model_id(
            task_model=args.model,
            definition_model=definition.model,
            default_model=self.settings.model,
            provider=self.provider_name,
        )

    def _refuse_without_tools(self, definition: AgentDefinition) -> None:
        """Refuse, before a task exists, an agent whose `tools` line names only tools that do not exist here.

        Skill counts as existing: whether skills are installed is known only when the run is prepared.

        Raises:
            AgentToolsError: naming each entry and why it gives no tool.
        """
        available = {*BUILTIN_TOOL_NAMES, *PER_RUN_TOOL_NAMES}
        if self.provider_name != "anthropic":
            available.discard("WebSearch")
        require_some_tool(definition, missing_tools(definition, available), granted=definition.memory is not None)

    def _asking_name(self, definition: AgentDefinition, record: TaskRecord) -> str:
        """The agent as a permission question names it: a nested one says which agent launched it."""
        lineage = self.tasks.lineage(record)
        if len(lineage) == 1:
            return definition.name
        return f"{definition.name} (launched by {' < '.join(r.agent for r in lineage[1:])})"

    def _budget(self, definition: AgentDefinition, parent: TaskRecord | None) -> TaskBudget | None:
        """The lowest of `--max-budget-usd`, the agent's `maxBudgetUsd` and, for a nested task, what remains of each
        ancestor's own budget; and where it was set."""
        from ..tasks.record import TaskBudget

        candidates = [
            TaskBudget(usd=usd, source=source)
            for usd, source in (
                (self.settings.max_budget_usd, "--max-budget-usd"),
                (definition.max_budget_usd, f"maxBudgetUsd of agent {definition.name}"),
            )
            if usd is not None
        ]
        for holder in self.tasks.lineage(parent) if parent is not None else ():
            budget = holder.budget
            if budget is not None and budget.holder is None:
                left = max(budget.usd - (holder.cost_usd() or 0.0), 0.0)
                candidates.append(TaskBudget(usd=left, source=budget.source, holder=holder.id))
        return min(candidates, key=lambda budget: budget.usd, default=None)

    def _price(self, model_id: str, budget: TaskBudget | None) -> ModelPrice | None:
        """The model's price; under a budget, a model without one counts at the dearest price known."""
        table = self.prices.table()
        price = table.price(model_id)
        return table.ceiling() if price is None and budget is not None else price

    def _model_access(self, model: Model, model_id: str, record: TaskRecord) -> ModelAccess | None:
        """What WebFetch and WebSearch may ask of the provider (priced into the task's cost); None for scripted
        models, which have no pages."""
        if model.provider not in ("anthropic", "openai"):
            return None
        from ..models.pricing import MeteredModel
        from ..tools.base import ModelAccess

        # Without --model, an OpenAI-compatible endpoint has only the task's own model to read pages with.
        default = model_id if self.settings.model in MODEL_ALIASES else self.settings.model
        fast = resolve_model_id(
            task_model="haiku", definition_model=None, default_model=default, provider=model.provider
        )
        table = self.prices.table()
        unpriced = table.ceiling() if record.budget is not None else None
        metered = MeteredModel(model, table, record.resources.side_spend, unpriced=unpriced)
        return ModelAccess(model=metered, main_model_id=model_id, fast_model_id=fast)

    def warn_once(self, message: str) -> None:
        """Log a configuration problem once per process, not once per Task."""
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def tool_environment(self) -> dict[str, str]:
        """The environment tool processes (Bash, hooks, an agent's MCP servers) start from: secrets removed, except
        the variables `sandbox.credentials` lets through. A copy each time: callers add to it."""
        return dict(self._tool_environment)

    @cached_property
    def _tool_environment(self) -> dict[str, str]:
        # Both inputs are fixed for the server's life; checking every variable cost 0.15 ms, up to five times a Task.
        credentials = self.sandbox.config.credentials
        return scrubbed_environment(self.environ, keep=credentials.allow_env_vars, remove=credentials.deny_env_vars)

    def run_settings(self, project: Path) -> ClaudeSettings:
        """The settings a run in `project` obeys: the files as they are now, and for a project the person has not
        trusted, without what its own files grant (`ClaudeSettings.untrusted`). The same object while neither the
        files nor the trust changed, so what is derived from it is reused."""
        loaded = self.settings_files.load(project)
        if self.trust.is_trusted(project):
            return loaded
        kept = self._untrusted_settings
        if kept is None or kept[0] is not loaded:
            kept = (loaded, loaded.untrusted(self.trust.why_untrusted(project)))
            self._untrusted_settings = kept
        return kept[1]

    def _additional_directories(self, claude_settings: ClaudeSettings, project: Path) -> list[Path]:
        """`permissions.additionalDirectories`: folders file tools may use besides the working directory."""
        home = Path(self.environ.get("HOME") or Path.home())
        found: list[Path] = []
        for entry, file in claude_settings.additional_directories:
            raw = str(home) + entry[1:] if entry == "~" or entry.startswith("~/") else entry
            folder = (project / raw).resolve()
            if folder.is_dir():
                found.append(folder)
            else:
                self.warn_once(f"{file.path}: permissions.additionalDirectories lists {entry}, not a folder; skipped")
        return found

    def agent_mode(self, definition: AgentDefinition, claude_settings: ClaudeSettings, project: Path) -> str:
        """The permission mode the agent runs in: the server's, narrowed (or widened, by Claude Code's rule) by the
        file's. A file of a project nobody trusted may narrow it only."""
        from ..permissions import MODES, effective_mode, normalize_mode

        default_mode = claude_settings.default_mode
        server_mode = normalize_mode(self.settings.permission_mode or (default_mode[0] if default_mode else None))
        mode = effective_mode(server_mode, definition.permission_mode)
        untrusted = untrusted_source(self.trust, definition, project)
        if untrusted is None or MODES.index(mode) <= MODES.index(server_mode):
            return mode
        self.warn_once(
            f"agent {definition.name} ({definition.path}): permissionMode: {definition.permission_mode} is ignored "
            f"and it runs in {server_mode} mode: a project's agent file may only narrow the mode, and "
            f"{self.trust.why_untrusted(untrusted)}"
        )
        return server_mode

    def _permission_policy(
        self,
        definition: AgentDefinition,
        place: RunPlace,
        roots: tuple[Path, ...],
        claude_settings: ClaudeSettings,
        *,
        extra_allow: tuple[str, ...] = (),
        hook_files: tuple[Path, ...] = (),
    ) -> PermissionPolicy:
        # Tasks launched together share one: every input is immutable, and the settings snapshot is the same object
        # while no settings file (drop-ins included) changed.
        untrusted = untrusted_source(self.trust, definition, place.project)  # the file's mode counts once trusted
        key = (id(claude_settings), id(definition), place, roots, extra_allow, hook_files, untrusted)
        kept = self._policies.get(key)
        if kept is not None and kept[0] is claude_settings and kept[1] is definition:
            return kept[2]
        policy = self._new_permission_policy(
            definition, place, roots, claude_settings, extra_allow=extra_allow, hook_files=hook_files
        )
        if len(self._policies) >= _KEPT_POLICIES:
            self._policies.clear()
        self._policies[key] = (claude_settings, definition, policy)
        return policy

    def _new_permission_policy(
        self,
        definition: AgentDefinition,
        place: RunPlace,
        roots: tuple[Path, ...],
        claude_settings: ClaudeSettings,
        *,
        extra_allow: tuple[str, ...],
        hook_files: tuple[Path, ...],
    ) -> PermissionPolicy:
        from ..permissions import PermissionPolicy, rules_from_settings
        from ..permissions.protected import ProtectedPaths
        from ..permissions.rules import PermissionRules

        cwd = place.cwd
        if self._rules is None or self._rules[0] is not claude_settings:
            self._rules = (claude_settings, rules_from_settings(claude_settings))
        rules = self._rules[1]
        if extra_allow:  # the agent's own memory folder, which it may always read and write
            memory = PermissionRules.of(allow=extra_allow, source="the agent's memory folder")
            rules = replace(rules, allow=rules.allow + memory.allow)
        for problem in (*claude_settings.problems, *rules.errors):
            self.warn_once(f"settings file skipped or partly ignored: {problem}")
        worktree = place.inside_worktree
        return PermissionPolicy(
            cwd=cwd,
            mode=self.agent_mode(definition, claude_settings, place.project),
            rules=rules,
            agent_map=definition.permission,
            roots=roots,
            project_root=worktree or self.settings.working_directory,
            protected=ProtectedPaths(
                files=tuple(os.path.abspath(path) for path in (*self._configuration_files(place.project), *hook_files)),
                # A folder holding the whole project (`--agents-dir .`) cannot be kept from every write.
                folders=tuple(str(folder) for folder in self._agent_folders() if not cwd.is_relative_to(folder)),
                worktree=str(worktree) if worktree is not None else None,
                home=str(self._home),
            ),
        )

    def _hook_files(self, extensions: Extensions, place: RunPlace) -> tuple[Path, ...]:
        """The files the run's hook commands name: hooks run outside the sandbox, so those stay out of reach."""
        if extensions.hooks is None:
            return ()
        from ..agent.hooks.scripts import hook_scripts

        home = Path(self.environ.get("HOME") or Path.home())
        return hook_scripts(extensions.hooks.hooks, project=place.project, home=home)

    def _configuration_files(self, project: Path) -> list[Path]:
        """Every settings file of the hierarchy (present or not) and the project's `.mcp.json`."""
        return [*self.settings_files.locations.paths(project), project / ".mcp.json"]

    def _agent_folders(self) -> list[Path]:
        settings = self.settings
        folders = [*settings.agents_dirs, *settings.plugin_dirs]
        if settings.user_agents_dir is not None:
            folders.append(settings.user_agents_dir)
        managed = self.settings_files.locations.managed
        if managed is not None:
            folders.append(managed.parent / "managed-settings.d")
        return [Path(os.path.abspath(folder)) for folder in folders]
