"""`Subagents`: the runtime of one server process. Resolves a Task call into a run and hands it to the TaskManager."""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from .definitions import (
    AgentDefinition,
    Catalog,
    CatalogLoader,
    DefinitionSources,
    builtin_agents_dir,
    tool_base_name,
)
from .definitions.validate import NEVER_GRANTED
from .errors import ConfigError, ProviderNotConfiguredError, SubagentsError, UnknownAgentError
from .loop import AgentRun, RunResult, ToolGate, run_agent
from .messages import Message, UserMessage
from .models.base import Model
from .models.providers import MISSING_PROVIDER_MESSAGE, ProviderConfig, create_model, provider_config
from .models.resolve import resolve_model_id
from .permissions.asking import Asker, Denial
from .pricing import MeteredModel, PriceFiles
from .principals import LOCAL_PRINCIPAL
from .settings import Settings
from .task_record import Listener, TaskBudget, TaskLimits, TaskObserver, TaskRecord
from .tasks import TaskManager
from .tools import Tool, ToolContext, builtin_tools
from .tools.base import ModelAccess
from .transcripts import read_history

if TYPE_CHECKING:
    from .agent_setup import AgentExtras
    from .permissions.policy import PermissionPolicy

logger = logging.getLogger(__name__)


FIRST_RUN_MODULES = (
    "jsonschema",
    "mcp_subagents.agent_setup",
    "mcp_subagents.permissions",
    "mcp_subagents.permissions.gate",
    "mcp_subagents.tools.shell",
    "mcp_subagents.project_context",
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


def definition_sources(settings: Settings) -> DefinitionSources:
    return DefinitionSources(
        builtin_dir=builtin_agents_dir(),
        plugin_dirs=settings.plugin_dirs,
        user_dir=settings.user_agents_dir,
        project_root=settings.working_directory,
        extra_dirs=settings.agents_dirs,
        agents_json=settings.agents_json,
        policy_file=settings.policy_file,
        settings_file=settings.settings_file,
    )


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values that must never be written anywhere: the provider keys this process can see."""
    names = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
    return [environ[name] for name in names if len(environ.get(name, "")) >= 8]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskArguments:
    """A validated Task call."""

    description: str
    prompt: str
    subagent_type: str
    model: str | None = None
    resume: str | None = None
    run_in_background: bool = False
    max_turns: int | None = None
    effort: str | None = None


def select_tools(
    definition: AgentDefinition, available: Mapping[str, Tool], granted: Sequence[str] = ()
) -> tuple[dict[str, Tool], list[str]]:
    """Apply `disallowedTools` first, then `tools` plus `granted` (tools the agent's features need, such as its
    memory's Read/Write/Edit); Task/Agent are never granted. Returns (tools, unknown names)."""

    disallowed = {tool_base_name(entry) for entry in definition.disallowed_tools}
    listed = [tool_base_name(entry) for entry in definition.tools] if definition.tools is not None else []
    wanted = list(available) if definition.tools is None else [*listed, *granted]
    chosen: dict[str, Tool] = {}
    unknown: list[str] = []
    for name in wanted:
        if name in NEVER_GRANTED or name in disallowed or name in chosen:
            continue
        tool = available.get(name)
        if tool is None:
            unknown.append(name)
        else:
            chosen[name] = tool
    return chosen, unknown


def _missing_tool_reason(name: str) -> str:
    if name == "WebSearch":
        return "which needs the Anthropic provider (it uses the API's server-side web search)"
    if name == "Skill":
        return "but no skills are installed for it to load"
    return "which this server does not have"


def permission_gate(policy: PermissionPolicy, *, agent: str, ask: Asker, denials: list[Denial]) -> ToolGate:
    from .permissions.gate import PermissionGate  # the rule engine loads at the first run, not at start-up

    return PermissionGate(policy, agent=agent, ask=ask, denials=denials)


class Subagents:
    def __init__(
        self,
        settings: Settings,
        *,
        model: Model | None = None,
        environ: Mapping[str, str] | None = None,
        tracer_provider: Any = None,
    ):
        """`tracer_provider` (an OpenTelemetry `TracerProvider`) turns traces on, as `--otel` does with the
        process's provider."""
        self.settings = settings
        self.environ = dict(os.environ if environ is None else environ)
        self.loader = CatalogLoader(definition_sources(settings))
        self.tasks = TaskManager(
            state_dir=settings.state_dir,
            limits=TaskLimits(
                max_concurrent=settings.max_concurrent,
                task_timeout=settings.task_timeout,
                idle_timeout=settings.idle_timeout,
                max_result_chars=settings.max_result_chars,
                ask_timeout=settings.ask_timeout,
            ),
            secrets=secret_values(self.environ),
        )
        self._model = model
        self._model_lock = anyio.Lock()
        self._provider: ProviderConfig | None = provider_config(settings.provider, self.environ)
        self._warned: set[str] = set()
        self.prices = PriceFiles(settings.settings_file, settings.policy_file)
        self._background: TaskGroup | None = None
        self._warming = False
        self.model_ready = anyio.Event()
        """Set once the model provider is built (by the warm-up or by the first Task)."""
        if settings.otel or tracer_provider is not None:
            self.tasks.observer = self._task_tracer(tracer_provider)

    def _task_tracer(self, provider: Any) -> TaskObserver:
        try:
            from .telemetry import TaskTracer, install_tracer_provider
        except ImportError:
            raise ConfigError("--otel needs the OpenTelemetry SDK: pip install 'mcp-subagents[otel]'") from None
        return TaskTracer(provider or install_tracer_provider(), provider_name=self.provider_name)

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Subagents]:
        async with self.tasks.running(), anyio.create_task_group() as background:
            self._background = background
            self._open_control_channel(background)
            try:
                yield self
            finally:
                self._background = None
                background.cancel_scope.cancel()
                close = getattr(self._model, "aclose", None)
                if close is not None:
                    with anyio.CancelScope(shield=True):
                        await close()

    @property
    def provider_name(self) -> str:
        if self._model is not None:
            return self._model.provider
        return self._provider.name if self._provider else "none"

    def catalog(self) -> Catalog:
        return self.loader.load()

    def definition(self, name: str, catalog: Catalog | None = None) -> AgentDefinition:
        catalog = catalog or self.catalog()
        definition = catalog.get(name)
        if definition is None:
            raise UnknownAgentError(name, list(catalog.names()))
        return definition

    def _open_control_channel(self, group: TaskGroup) -> None:
        """Let `mcp-subagents tasks stop` and the dashboard stop this process's tasks."""
        from .control import ControlChannel

        channel = ControlChannel(self.settings.state_dir, self.tasks.stop_own)
        try:
            channel.open()
        except OSError as exc:
            logger.warning("no control channel in %s (%s): tasks stop cannot reach this server", channel.path, exc)
            return
        self.tasks.control_name = channel.name
        group.start_soon(channel.serve, name="control channel")

    def warm_up(self) -> None:
        """Build the model provider in the background, once: importing its SDK takes seconds, and a Task that comes
        a little after start-up should not wait for it. Called after the host first lists the tools, so start-up
        itself stays quick."""
        if self._warming or self._model is not None or self._provider is None or self._background is None:
            return
        self._warming = True
        self._background.start_soon(self._warm_model, name="provider warm-up")

    async def _warm_model(self) -> None:
        try:
            await self.model()
            await anyio.to_thread.run_sync(_import_all, FIRST_RUN_MODULES, abandon_on_cancel=True)
            await anyio.to_thread.run_sync(self._build_run_types, abandon_on_cancel=True)
        except Exception:  # the first Task meets the same problem again and reports it
            logger.debug("building the model provider ahead of the first Task failed", exc_info=True)

    def _build_run_types(self) -> None:
        """What a first run builds lazily: the tools, their schemas and the transcript's message encoder."""
        from .outcome import TaskOutcome, encode_outcome
        from .transcripts import encode_message

        for tool in self.tools.values():
            tool.definition()
        encode_message(UserMessage(content=""))
        encode_outcome(TaskOutcome(state="completed"))

    async def model(self) -> Model:
        async with self._model_lock:
            if self._model is None:
                self._model = await create_model(
                    self._provider, deadline=self.settings.model_deadline, max_retries=self.settings.max_retries
                )
                self.model_ready.set()
            return self._model

    def launch(
        self,
        args: TaskArguments,
        *,
        catalog: Catalog | None = None,
        roots: tuple[Path, ...] = (),
        principal: str = LOCAL_PRINCIPAL,
        trace_meta: Mapping[str, Any] | None = None,
    ) -> TaskRecord:
        """Start a task in the manager; returns at once. `catalog` saves a rescan when the caller has just loaded it.

        The task belongs to `principal`, who alone can resume it, read it and stop it.

        Raises:
            UnknownAgentError: no such subagent type.
            ProviderNotConfiguredError: no model provider is configured.
            TaskNotFoundError: `resume` names no task.
            SubagentsError: `resume` names a task that is still running.
        """
        history: list[Message] = []
        if args.resume:
            previous = self.tasks.get(args.resume, principal=principal)
            if not previous.finished:
                raise SubagentsError(
                    f"Task {previous.id} is still {previous.state}; wait for it with TaskOutput or stop it with "
                    "TaskStop before resuming it."
                )
            definition = self.definition(previous.agent, catalog)
            history = read_history(self.tasks.transcript_path(previous.id))
        else:
            definition = self.definition(args.subagent_type, catalog)
        if self._model is None and self._provider is None:
            raise ProviderNotConfiguredError(MISSING_PROVIDER_MESSAGE)
        model_id = self._model_id(definition, args)

        async def job(record: TaskRecord, listener: Listener) -> RunResult:
            from .agent_setup import agent_extras, opening_message

            model = await self.model()
            cwd = self._working_directory(roots)
            extras = agent_extras(
                definition, cwd=cwd, claude_dir=self.settings.claude_dir, plugin_dirs=self.settings.plugin_dirs
            )
            run = self._prepare_run(definition, args, roots, record, model=model, model_id=model_id, extras=extras)
            prompt: str | UserMessage = args.prompt
            if not args.resume:  # a resumed conversation already starts with the context: not twice
                prompt = await opening_message(
                    args.prompt,
                    extras=extras,
                    cwd=cwd,
                    claude_dir=self.settings.claude_dir,
                    managed_dir=self.settings.policy_file.parent if self.settings.policy_file else None,
                    env=self._tool_environment(),
                )
            return await run_agent(run, prompt, model=model, history=history, on_event=listener)

        return self.tasks.start(
            agent=definition.name,
            description=args.description,
            job=job,
            background=args.run_in_background or definition.background,
            resumed_from=args.resume,
            history=history,
            owner=principal,
            model=model_id,
            price=self.prices.table().price(model_id),
            budget=self._budget(definition),
            trace_meta=trace_meta,
        )

    def _model_id(self, definition: AgentDefinition, args: TaskArguments) -> str:
        return resolve_model_id(
            task_model=args.model,
            definition_model=definition.model,
            default_model=self.settings.model,
            provider=self.provider_name,
        )

    def _budget(self, definition: AgentDefinition) -> TaskBudget | None:
        """The lower of `--max-budget-usd` and the agent's `maxBudgetUsd`, and where it was set."""
        candidates = [
            TaskBudget(usd=usd, source=source)
            for usd, source in (
                (self.settings.max_budget_usd, "--max-budget-usd"),
                (definition.max_budget_usd, f"maxBudgetUsd of agent {definition.name}"),
            )
            if usd is not None
        ]
        return min(candidates, key=lambda budget: budget.usd, default=None)

    @cached_property
    def tools(self) -> dict[str, Tool]:
        return builtin_tools()

    def _working_directory(self, roots: tuple[Path, ...]) -> Path:
        # Without --cwd, the host's first root is the project: hosts often start servers in / or $HOME.
        return self.settings.cwd or (roots[0] if roots else self.settings.working_directory)

    def _prepare_run(
        self,
        definition: AgentDefinition,
        args: TaskArguments,
        roots: tuple[Path, ...],
        record: TaskRecord,
        *,
        model: Model,
        model_id: str,
        extras: AgentExtras,
    ) -> AgentRun:
        from .agent_setup import model_settings
        from .models.profiles import model_profile

        cwd = self._working_directory(roots)
        allowed = (cwd, *(root for root in roots if root != cwd), *extras.extra_roots)
        provider = self.provider_name
        tools, unknown = select_tools(
            definition, {**self.tools, **extras.tools(provider)}, granted=extras.granted_tools
        )
        for name in unknown:
            self._warn_once(f"agent {definition.name} lists tool {name}, {_missing_tool_reason(name)}; skipped")
        limits = [self.settings.max_turns, definition.max_turns, args.max_turns]
        profile = model_profile(model_id)
        chosen = model_settings(
            profile,
            provider=provider,
            file_effort=definition.effort,
            task_effort=args.effort,
            max_tokens=self.settings.max_tokens,
            compact_threshold=self.settings.compact_threshold,
        )
        return AgentRun(
            agent=definition.name,
            system=extras.system_prompt(cwd=cwd, model=profile, tool_names=list(tools)),
            model_id=model_id,
            tools=tools,
            context=ToolContext(
                cwd=cwd,
                allowed_roots=allowed,
                env=self._tool_environment(),
                processes=record.resources.processes,
                models=self._model_access(model, model_id, record),
            ),
            max_turns=min(limit for limit in limits if limit is not None),
            max_tokens=chosen.max_tokens,
            thinking=chosen.thinking,
            effort=chosen.effort,
            compact_threshold=chosen.compact_threshold,
            gate=permission_gate(
                self._permission_policy(definition, cwd, allowed, extra_allow=extras.allow_rules),
                agent=definition.name,
                ask=partial(self.tasks.ask, record),
                denials=record.resources.denials,
            ),
        )

    def _model_access(self, model: Model, model_id: str, record: TaskRecord) -> ModelAccess | None:
        """What WebFetch and WebSearch may ask of the provider (priced into the task's cost); None for scripted
        models, which have no pages."""
        if model.provider not in ("anthropic", "openai"):
            return None
        fast = resolve_model_id(
            task_model="haiku", definition_model=None, default_model=self.settings.model, provider=model.provider
        )
        metered = MeteredModel(model, self.prices.table(), record.resources.side_spend)
        return ModelAccess(model=metered, main_model_id=model_id, fast_model_id=fast)

    def _warn_once(self, message: str) -> None:
        """Log a configuration problem once per process, not once per Task."""
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def _tool_environment(self) -> dict[str, str]:
        from .tools.shell import sanitized_environment

        return sanitized_environment(self.environ)

    def _permission_policy(
        self, definition: AgentDefinition, cwd: Path, roots: tuple[Path, ...], extra_allow: tuple[str, ...] = ()
    ) -> PermissionPolicy:
        from .permissions import PermissionPolicy, effective_mode, load_rules
        from .permissions.rules import PermissionRules

        rules = load_rules(self.settings.settings_file, self.settings.policy_file)
        for problem in rules.errors:
            self._warn_once(f"permission rule ignored: {problem}")
        if extra_allow:  # the agent's own memory folder, which it may always read and write
            rules = rules.merged(PermissionRules.of(allow=extra_allow, source="the agent's memory folder"))
        return PermissionPolicy(
            cwd=cwd,
            mode=effective_mode(self.settings.permission_mode, definition.permission_mode),
            rules=rules,
            agent_map=definition.permission,
            roots=roots,
            project_root=self.settings.working_directory,
        )
