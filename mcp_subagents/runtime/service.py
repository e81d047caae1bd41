"""`Subagents`: the runtime of one server process, its lifecycle: the agent catalog, the model provider, the Bash
sandbox, the task manager and the warm-up that builds them ahead of the first Task. Turning a Task into a run is
`runs`; the checks before each tool call are `gates`; the permission policies, `policies`."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.abc import TaskGroup

from ..config.claude_settings import ClaudeSettings, ClaudeSettingsFiles
from ..config.settings import Settings
from ..config.trust import project_trust
from ..core.environment import scrubbed_environment, secret_values
from ..core.errors import ConfigError
from ..core.principals import LOCAL_PRINCIPAL
from ..core.redaction import Redactor
from ..core.state import prepare_state_dir
from ..definitions import (
    AgentDefinition,
    Catalog,
    CatalogLoader,
)
from ..definitions.cache import CACHE_FILE as CATALOG_CACHE_FILE
from ..models.providers import ProviderConfig, create_model, provider_config
from ..models.resolve import MODEL_ALIASES, MODEL_HINT
from ..tools import builtin_tools
from .request import TaskRequest
from .sources import check_settings_files, definition_sources, settings_locations
from .warmup import FIRST_RUN_MODULES, TASK_ENGINE_MODULES, import_all

# The task engine (the manager, the loop, the conversation model, transcripts, prices) loads when a task first needs
# it, or in the warm-up after the host first lists the tools: not on the way to that first answer.
if TYPE_CHECKING:
    from ..models.base import Model
    from ..models.pricing import PriceFiles
    from ..permissions.session_rules import SessionRules
    from ..sandbox import ProbeStop, SandboxConfig, SandboxRuntime
    from ..tasks.manager import TaskManager
    from ..tasks.record import CarriedTask, TaskObserver, TaskRecord
    from ..tools import Tool
    from .answers import QuestionAnswers
    from .extensions import RunPlace
    from .policies import RunPolicies
    from .runs import RunAssembly

logger = logging.getLogger(__name__)


class PendingScan(Protocol):
    """Another process parsing the agent files into the catalog's cache (the CLI's prescan of a first start)."""

    def wait(self) -> None:
        """Block until it is done (or given up on)."""
        ...


def _wide_warning(reason: str) -> str:
    return (
        f"Bash sandbox: {reason}; sandboxed commands are never run without asking there. Start the server with --cwd "
        "set to the project folder."
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
        if self.provider_name == "openai" and settings.model in MODEL_ALIASES:
            logger.warning(
                "an OpenAI-compatible endpoint is configured but no model: Task refuses agents whose file names "
                "none. %s.",
                MODEL_HINT,
            )
        self.trust = project_trust(settings)
        self._background: TaskGroup | None = None
        self._warming = False
        self.model_ready = anyio.Event()
        """Set once the model provider is built (by the warm-up or by the first Task)."""
        if settings.otel or tracer_provider is not None:
            self.tasks.observer = self._task_tracer(tracer_provider)

        self._prices: PriceFiles | None = None
        self._tools: dict[str, Tool] | None = None
        self._policies: RunPolicies | None = None
        self._session_rules: SessionRules | None = None
        self._answers: QuestionAnswers | None = None
        self._sandbox: SandboxRuntime | None = None
        self._sandbox_lock = threading.Lock()
        self._probe_stop: ProbeStop | None = None
        self._closing = False
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
                stall_after=settings.stall_after,
                stall_timeout=settings.stall_timeout,
            ),
            texts=OUTPUT_FILE_TEXTS,
            secrets=[*secret_values(self.environ), *secret_values({"DATABASE_URL": settings.database_url or ""})],
        )
        manager.control_name = self._control_name
        if self._task_group is not None:
            manager.serve_in(self._task_group)
        return manager

    @property
    def prices(self) -> PriceFiles:
        """The model prices a task's cost is counted in. They come from the user's, --settings and managed files,
        lowest first: a project's own files (a cloned repository's) cannot lower what a budget counts."""
        if self._prices is None:
            self._prices = self._price_files()
        return self._prices

    def _price_files(self) -> PriceFiles:
        from ..models.pricing import PriceFiles

        candidates = self.settings_files.locations.candidates(self.settings.working_directory)
        return PriceFiles(*(path for level, path, _ in candidates if level not in ("project", "local")))

    @property
    def sandbox(self) -> SandboxRuntime:
        """The Bash sandbox of this process. Built at its first use, or by the warm-up right after the host first
        lists the tools (with `--sandbox on`, at start): importing it and probing bubblewrap took 40 ms of the
        start-up. Either way before any subagent runs a tool, so no subagent can have changed what it reads."""
        return self._sandbox if self._sandbox is not None else self._sandbox_runtime()

    async def sandbox_ready(self) -> None:
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
        from ..sandbox import ProbeStop, SandboxRuntime

        settings = self.settings
        self._probe_stop = stop = ProbeStop()
        if self._closing:  # `running` ended before this build began: it could not reach this probe
            stop.stop()
        sandbox = SandboxRuntime(
            self._sandbox_config(),
            "off" if settings.sandbox == "off" else "on" if settings.sandbox == "on" else "auto",
            state_dir=settings.state_dir,
            home=self._home,
            secret_files=[path for path in (settings.auth_token_file, settings.tls_key, settings.tls_cert) if path],
            probe_stop=stop,
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
            self.warn_too_wide(f"the project folder {reason}", hosts)

    def warn_too_wide(self, reason: str, hint: str = "") -> None:
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
                        async with self._team_joined():
                            yield self
                    finally:
                        self._background = None
                        background.cancel_scope.cancel()
                        self._stop_sandbox_probe()
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

    @asynccontextmanager
    async def _team_joined(self) -> AsyncGenerator[None]:
        """With `--database-url`: this server is one replica of a team's, its tasks kept in the database."""
        url = self.settings.database_url
        if url is None:
            yield
            return
        from ..team.replica import Team
        from .carry_on import carry_on
        from .control import ControlRequests

        team = Team(url, self.tasks, self.settings.working_directory, self.tasks.redact, self.session_rules)
        async with team.serving(partial(carry_on, self), ControlRequests(self)):
            yield

    def _stop_sandbox_probe(self) -> None:
        """End a bubblewrap probe the warm-up's thread still waits for: a server closed right after the host listed
        the tools leaves no probe behind, and its killed probe is no "sandbox off" warning."""
        self._closing = True
        stop = self._probe_stop
        if stop is not None:
            stop.stop()

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
            raise catalog.unknown(name)
        return definition

    def _open_control_channel(self, group: TaskGroup) -> None:
        """Let `mcp-subagents tasks stop|answer` and the dashboard stop this process's tasks and answer their
        questions."""
        from ..tasks.control import ControlChannel
        from .control import ControlRequests

        channel = ControlChannel(self.settings.state_dir, ControlRequests(self))
        try:
            channel.open()
        except OSError as exc:
            logger.warning("no control channel in %s (%s): tasks stop cannot reach this server", channel.path, exc)
            return
        self._control_name = channel.name
        if self._tasks is not None:
            self._tasks.control_name = channel.name
        group.start_soon(channel.serve, name="control channel")

    @property
    def session_rules(self) -> SessionRules:
        """Allow rules the person added by answering "always allow" while this server runs."""
        if self._session_rules is None:
            from ..permissions.session_rules import SessionRules

            self._session_rules = SessionRules()
        return self._session_rules

    @property
    def answers(self) -> QuestionAnswers:
        """Where every place that reaches the person answers the subagents' questions."""
        if self._answers is None:
            from .answers import QuestionAnswers

            self._answers = QuestionAnswers(self.tasks, self.session_rules)
        return self._answers

    def stop_own(self, task_id: str) -> bool:
        """Stop a task this process runs, whoever started it (the control channel's request)."""
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
            await self.sandbox_ready()
        except Exception:  # the first Task meets the same problem again and reports it
            logger.debug("building the sandbox ahead of the first Task failed", exc_info=True)
        if self._tasks is None:
            await anyio.to_thread.run_sync(import_all, TASK_ENGINE_MODULES, abandon_on_cancel=True)
            if self._tasks is None:
                self._tasks = self._task_manager()
        if self._model is None and self._provider is not None:
            await self._warm_model()

    async def _warm_model(self) -> None:
        try:
            await self.model()
            await anyio.to_thread.run_sync(import_all, FIRST_RUN_MODULES, abandon_on_cancel=True)
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

    @property
    def tools(self) -> dict[str, Tool]:
        """The built-in tools, by name."""
        if self._tools is None:
            self._tools = builtin_tools()
        return self._tools

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

    @property
    def policies(self) -> RunPolicies:
        """The permission policy of each run (`policies`)."""
        if self._policies is None:
            from .policies import RunPolicies  # the rule engine loads at the first run, not at start-up

            self._policies = RunPolicies(
                self.settings, self.settings_files, self.trust, home=self._home, warn_once=self.warn_once
            )
        return self._policies

    def run_settings(self, project: Path) -> ClaudeSettings:
        """The settings a run in `project` obeys (`RunPolicies.run_settings`)."""
        return self.policies.run_settings(project)

    def agent_mode(self, definition: AgentDefinition, claude_settings: ClaudeSettings, project: Path) -> str:
        """The permission mode the agent runs in (`RunPolicies.agent_mode`)."""
        return self.policies.agent_mode(definition, claude_settings, project)

    @property
    def model_configured(self) -> bool:
        """A model provider is configured (or a model was given): tasks can run."""
        return self._model is not None or self._provider is not None

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
        carried: CarriedTask | None = None,
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
        return self._runs.launch(
            args,
            catalog=catalog,
            roots=roots,
            principal=principal,
            parent=parent,
            place=place,
            trace_meta=trace_meta,
            carried=carried,
        )

    @cached_property
    def _runs(self) -> RunAssembly:
        from .runs import RunAssembly  # the run engine loads at the first Task (or in the warm-up), not at start-up

        return RunAssembly(self)
