"""`Subagents`: the runtime of one server process. Resolves a Task call into a run and hands it to the TaskManager."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from .claude_settings import ClaudeSettings, ClaudeSettingsFiles, SettingsLocations
from .definitions import (
    AgentDefinition,
    Catalog,
    CatalogLoader,
    DefinitionSources,
    builtin_agents_dir,
    tool_base_name,
)
from .definitions.cache import CACHE_FILE as CATALOG_CACHE_FILE
from .definitions.validate import NEVER_GRANTED
from .errors import ConfigError, ProviderNotConfiguredError, SubagentsError, UnknownAgentError
from .loop import AgentRun, RunResult, ToolGate, run_agent
from .messages import Message, UserMessage
from .models.base import Model
from .models.providers import MISSING_PROVIDER_MESSAGE, ProviderConfig, create_model, provider_config
from .models.resolve import resolve_model_id
from .permissions.asking import Asker, Denial
from .principals import LOCAL_PRINCIPAL
from .settings import Settings
from .task_record import Listener, TaskLimits, TaskRecord
from .tasks import TaskManager
from .tools import Tool, ToolContext, builtin_tools
from .tools.base import ModelAccess
from .transcripts import read_history

if TYPE_CHECKING:
    from .agent_setup import AgentExtras
    from .permissions.policy import PermissionPolicy
    from .permissions.rules import PermissionRules

logger = logging.getLogger(__name__)


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
        from .permissions.rules import rules_in_file

        for file in flagged:
            _, problems = rules_in_file(file)
            if problems:
                flag = "--settings" if file.level == "flag" else "--policy-file"
                raise ConfigError(f"{flag} {problems[0]}")
    return snapshot


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


def read_filter(policy: PermissionPolicy) -> Callable[[str], bool] | None:
    from .permissions.context import read_filter as policy_read_filter

    return policy_read_filter(policy)


def permission_gate(policy: PermissionPolicy, *, agent: str, ask: Asker, denials: list[Denial]) -> ToolGate:
    from .permissions.gate import PermissionGate  # the rule engine loads at the first run, not at start-up

    return PermissionGate(policy, agent=agent, ask=ask, denials=denials)


class Subagents:
    def __init__(self, settings: Settings, *, model: Model | None = None, environ: Mapping[str, str] | None = None):
        self.settings = settings
        self.environ = dict(os.environ if environ is None else environ)
        self.settings_files = ClaudeSettingsFiles(settings_locations(settings))
        self._warned: set[str] = set()
        for problem in check_settings_files(self.settings_files).problems:
            self._warn_once(f"settings file skipped or partly ignored: {problem}")
        self.loader = CatalogLoader(
            definition_sources(settings, self.settings_files), cache_file=settings.state_dir / CATALOG_CACHE_FILE
        )
        self._catalog: Catalog | None = None
        self._scan_lock = threading.Lock()
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
        self._rules: tuple[ClaudeSettings, PermissionRules] | None = None

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Subagents]:
        await self.refresh_catalog()  # parsing every agent file is no job for the event loop
        async with self.tasks.running():
            try:
                yield self
            finally:
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
        """The agents in effect, as last scanned: no file is read or stat-ed here once a scan has run. The watcher
        keeps it fresh (`rescan` in a worker thread), and a Task call rescans first when it needs to."""
        catalog = self._catalog
        return catalog if catalog is not None else self.rescan()

    def rescan(self) -> Catalog:
        """Scan every definition source and make the result current; blocking, so meant for a worker thread.

        An unchanged tree keeps the very same `Catalog` object, so what is derived from it can be cached on it."""
        with self._scan_lock:
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
        catalog = catalog or self.catalog()
        definition = catalog.get(name)
        if definition is None:
            raise UnknownAgentError(name, list(catalog.names()))
        return definition

    async def model(self) -> Model:
        async with self._model_lock:
            if self._model is None:
                self._model = await create_model(
                    self._provider, deadline=self.settings.model_deadline, max_retries=self.settings.max_retries
                )
            return self._model

    def launch(
        self,
        args: TaskArguments,
        *,
        catalog: Catalog | None = None,
        roots: tuple[Path, ...] = (),
        principal: str = LOCAL_PRINCIPAL,
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

        async def job(record: TaskRecord, listener: Listener) -> RunResult:
            from .agent_setup import agent_extras, opening_message

            model = await self.model()
            cwd = self._working_directory(roots)
            extras = agent_extras(
                definition, cwd=cwd, claude_dir=self.settings.claude_dir, plugin_dirs=self.settings.plugin_dirs
            )
            run = self._prepare_run(definition, args, roots, record, model=model, extras=extras)
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
        )

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
        extras: AgentExtras,
    ) -> AgentRun:
        from .agent_setup import model_settings
        from .models.profiles import model_profile

        cwd = self._working_directory(roots)
        claude_settings = self.settings_files.load(cwd)
        extra = (*roots, *self._additional_directories(claude_settings, cwd), *extras.extra_roots)
        allowed = tuple(dict.fromkeys((cwd, *extra)))
        provider = self.provider_name
        tools, unknown = select_tools(
            definition, {**self.tools, **extras.tools(provider)}, granted=extras.granted_tools
        )
        for name in unknown:
            self._warn_once(f"agent {definition.name} lists tool {name}, {_missing_tool_reason(name)}; skipped")
        limits = [self.settings.max_turns, definition.max_turns, args.max_turns]
        model_id = resolve_model_id(
            task_model=args.model,
            definition_model=definition.model,
            default_model=self.settings.model,
            provider=provider,
        )
        profile = model_profile(model_id)
        chosen = model_settings(
            profile,
            provider=provider,
            file_effort=definition.effort,
            task_effort=args.effort,
            max_tokens=self.settings.max_tokens,
            compact_threshold=self.settings.compact_threshold,
        )
        policy = self._permission_policy(definition, cwd, allowed, claude_settings, extra_allow=extras.allow_rules)
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
                models=self._model_access(model, model_id),
                readable=read_filter(policy),
            ),
            max_turns=min(limit for limit in limits if limit is not None),
            max_tokens=chosen.max_tokens,
            thinking=chosen.thinking,
            effort=chosen.effort,
            compact_threshold=chosen.compact_threshold,
            gate=permission_gate(
                policy,
                agent=definition.name,
                ask=partial(self.tasks.ask, record),
                denials=record.resources.denials,
            ),
        )

    def _model_access(self, model: Model, model_id: str) -> ModelAccess | None:
        """What WebFetch and WebSearch may ask of the provider; None for scripted models, which have no pages."""
        if model.provider not in ("anthropic", "openai"):
            return None
        fast = resolve_model_id(
            task_model="haiku", definition_model=None, default_model=self.settings.model, provider=model.provider
        )
        return ModelAccess(model=model, main_model_id=model_id, fast_model_id=fast)

    def _warn_once(self, message: str) -> None:
        """Log a configuration problem once per process, not once per Task."""
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def _tool_environment(self) -> dict[str, str]:
        from .tools.shell import sanitized_environment

        return sanitized_environment(self.environ)

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
                self._warn_once(f"{file.path}: permissions.additionalDirectories lists {entry}, not a folder; skipped")
        return found

    def _permission_policy(
        self,
        definition: AgentDefinition,
        cwd: Path,
        roots: tuple[Path, ...],
        claude_settings: ClaudeSettings,
        *,
        extra_allow: tuple[str, ...] = (),
    ) -> PermissionPolicy:
        from .permissions import PermissionPolicy, effective_mode, rules_from_settings
        from .permissions.protected import ProtectedPaths
        from .permissions.rules import PermissionRules

        if self._rules is None or self._rules[0] is not claude_settings:
            self._rules = (claude_settings, rules_from_settings(claude_settings))
        rules = self._rules[1]
        if extra_allow:  # the agent's own memory folder, which it may always read and write
            memory = PermissionRules.of(allow=extra_allow, source="the agent's memory folder")
            rules = replace(rules, allow=rules.allow + memory.allow)
        for problem in (*claude_settings.problems, *rules.errors):
            self._warn_once(f"settings file skipped or partly ignored: {problem}")
        default_mode = claude_settings.default_mode
        server_mode = self.settings.permission_mode or (default_mode[0] if default_mode else "default")
        return PermissionPolicy(
            cwd=cwd,
            mode=effective_mode(server_mode, definition.permission_mode),
            rules=rules,
            agent_map=definition.permission,
            roots=roots,
            project_root=self.settings.working_directory,
            protected=ProtectedPaths(
                files=tuple(os.path.abspath(path) for path in self._configuration_files(cwd)),
                # A folder holding the whole project (`--agents-dir .`) cannot be kept from every write.
                folders=tuple(str(folder) for folder in self._agent_folders() if not cwd.is_relative_to(folder)),
            ),
        )

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
