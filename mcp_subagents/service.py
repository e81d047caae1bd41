"""`Subagents`: the runtime of one server process. Resolves a Task call into a run and hands it to the TaskManager."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio

from .definitions import (
    AgentDefinition,
    Catalog,
    CatalogLoader,
    DefinitionSources,
    builtin_agents_dir,
    tool_base_name,
)
from .definitions.validate import NEVER_GRANTED
from .environment import scrubbed_environment, secret_values
from .errors import ProviderNotConfiguredError, SubagentsError, ToolError, UnknownAgentError
from .loop import AgentRun, RunResult, ToolGate, run_agent
from .messages import Message
from .models.base import Model
from .models.providers import MISSING_PROVIDER_MESSAGE, ProviderConfig, create_model, provider_config
from .models.resolve import resolve_model_id
from .permissions.asking import Asker, Denial
from .prompts import system_prompt
from .redaction import Redactor
from .sandbox import RunSandbox, SandboxConfig, SandboxConfigError, SandboxRuntime, parse_sandbox_config
from .settings import Settings
from .state import prepare_state_dir
from .task_record import Listener, TaskLimits, TaskRecord
from .tasks import TaskManager
from .tools import Tool, ToolContext, builtin_tools
from .transcripts import read_history

if TYPE_CHECKING:
    from .permissions.policy import PermissionPolicy

logger = logging.getLogger(__name__)


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


def select_tools(definition: AgentDefinition, available: Mapping[str, Tool]) -> tuple[dict[str, Tool], list[str]]:
    """Apply `disallowedTools` first, then `tools`; Task/Agent are never granted. Returns (tools, unknown names)."""

    disallowed = {tool_base_name(entry) for entry in definition.disallowed_tools}
    wanted = list(available) if definition.tools is None else [tool_base_name(entry) for entry in definition.tools]
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


def sandbox_config(settings_file: Path | None) -> SandboxConfig:
    """The `sandbox` block of the `--settings` file; a broken one is reported and the defaults apply."""
    if settings_file is None:
        return SandboxConfig()
    try:
        raw: object = json.loads(settings_file.read_text(encoding="utf-8"))
        block = cast("dict[str, Any]", raw).get("sandbox") if isinstance(raw, dict) else None
        return parse_sandbox_config(block)
    except (OSError, ValueError) as exc:
        logger.warning("sandbox settings in %s not read (%s); using the defaults", settings_file, exc)
    except SandboxConfigError as exc:
        logger.error("%s in %s; using the sandbox defaults", exc.message, settings_file)
    return SandboxConfig()


def redirect_check(policy: PermissionPolicy) -> Callable[[str], Awaitable[None]]:
    """WebFetch's check of a redirect to another host: the permission rules must allow that URL outright (nobody is
    asked in the middle of a fetch; the model can fetch the new URL itself, which asks)."""
    from .permissions import decide

    async def check(url: str) -> None:
        verdict = decide(policy, "WebFetch", {"url": url, "prompt": ""})
        if verdict.decision != "allow":
            raise ToolError(
                f"The page redirects to {url}, which this fetch may not follow: {verdict.reason} To go there, "
                "call WebFetch with that URL."
            )

    return check


def permission_gate(
    policy: PermissionPolicy, *, agent: str, asker: Callable[[], Asker | None], denials: list[Denial]
) -> ToolGate:
    from .permissions.gate import PermissionGate  # the rule engine loads at the first run, not at start-up

    return PermissionGate(policy, agent=agent, asker=asker, denials=denials)


class Subagents:
    def __init__(self, settings: Settings, *, model: Model | None = None, environ: Mapping[str, str] | None = None):
        self.settings = settings
        self.environ = dict(os.environ if environ is None else environ)
        self.redact = Redactor(secret_values(self.environ))
        """Removes this process's secrets (and their encoded forms) from text the server sends or writes."""
        self.loader = CatalogLoader(definition_sources(settings))
        self.tasks = TaskManager(
            state_dir=settings.state_dir,
            limits=TaskLimits(
                max_concurrent=settings.max_concurrent,
                task_timeout=settings.task_timeout,
                idle_timeout=settings.idle_timeout,
                max_result_chars=settings.max_result_chars,
            ),
            secrets=secret_values(self.environ),
        )
        self._model = model
        self._model_lock = anyio.Lock()
        self._provider: ProviderConfig | None = provider_config(settings.provider, self.environ)
        self._warned: set[str] = set()
        self.sandbox = SandboxRuntime(
            sandbox_config(settings.settings_file),
            "off" if settings.sandbox == "off" else "on" if settings.sandbox == "on" else "auto",
            state_dir=settings.state_dir,
            home=Path(self.environ.get("HOME") or Path.home()),
        )
        for unused in self.sandbox.config.unused:
            logger.info("%s", unused)
        chosen = self.sandbox.state == "on" or settings.sandbox == "off" or self.sandbox.config.enabled is False
        (logger.info if chosen else logger.warning)("%s", self.sandbox.describe())

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[Subagents]:
        await anyio.to_thread.run_sync(
            partial(prepare_state_dir, self.settings.state_dir, keep_days=self.settings.keep_days)
        )
        async with self.tasks.running():
            try:
                yield self
            finally:
                self.sandbox.close()
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

    async def model(self) -> Model:
        async with self._model_lock:
            if self._model is None:
                self._model = await create_model(self._provider, deadline=self.settings.model_deadline)
            return self._model

    def launch(
        self, args: TaskArguments, *, catalog: Catalog | None = None, roots: tuple[Path, ...] = ()
    ) -> TaskRecord:
        """Start a task in the manager; returns at once. `catalog` saves a rescan when the caller has just loaded it.

        Raises:
            UnknownAgentError: no such subagent type.
            ProviderNotConfiguredError: no model provider is configured.
            TaskNotFoundError: `resume` names no task.
            SubagentsError: `resume` names a task that is still running.
        """
        history: list[Message] = []
        if args.resume:
            previous = self.tasks.get(args.resume)
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
            model = await self.model()
            run, sandbox = self._prepare_run(definition, args, roots, record)
            try:
                return await run_agent(run, args.prompt, model=model, history=history, on_event=listener)
            finally:
                if sandbox is not None:
                    sandbox.close()

        return self.tasks.start(
            agent=definition.name,
            description=args.description,
            job=job,
            background=args.run_in_background or definition.background,
            resumed_from=args.resume,
            history=history,
        )

    @cached_property
    def tools(self) -> dict[str, Tool]:
        return builtin_tools()

    def _prepare_run(
        self, definition: AgentDefinition, args: TaskArguments, roots: tuple[Path, ...], record: TaskRecord
    ) -> tuple[AgentRun, RunSandbox | None]:
        # Without --cwd, the host's first root is the project: hosts often start servers in / or $HOME.
        cwd = self.settings.cwd or (roots[0] if roots else self.settings.working_directory)
        allowed = (cwd, *(root for root in roots if root != cwd))
        tools, unknown = select_tools(definition, self.tools)
        for name in unknown:
            self._warn_once(f"agent {definition.name} lists tool {name}, which this server does not have; skipped")
        limits = [self.settings.max_turns, definition.max_turns, args.max_turns]
        policy = self._permission_policy(definition, cwd, allowed)
        sandbox = self._run_sandbox(policy, cwd, allowed)
        gate = permission_gate(policy, agent=definition.name, asker=lambda: record.asker, denials=record.denials)
        if sandbox is not None:
            from .sandbox.gate import SandboxAwareGate

            sandboxed = replace(policy, bash_sandboxed=self.sandbox.config.auto_allow_bash_if_sandboxed)
            gate = SandboxAwareGate(
                sandbox=sandbox,
                gate=gate,
                sandboxed_gate=permission_gate(
                    sandboxed, agent=definition.name, asker=lambda: record.asker, denials=record.denials
                ),
                denials=record.denials,
            )
        run = AgentRun(
            agent=definition.name,
            system=system_prompt(definition.prompt, cwd=cwd, critical_reminder=definition.critical_reminder),
            model_id=resolve_model_id(
                task_model=args.model,
                definition_model=definition.model,
                default_model=self.settings.model,
                provider=self.provider_name,
            ),
            tools=tools,
            context=ToolContext(
                cwd=cwd,
                allowed_roots=allowed,
                env=self._tool_environment(),
                processes=record.processes,
                sandbox=sandbox,
                check_url=redirect_check(policy),
            ),
            max_turns=min(limit for limit in limits if limit is not None),
            max_tokens=self.settings.max_tokens,
            gate=gate,
        )
        return run, sandbox

    def _run_sandbox(self, policy: PermissionPolicy, cwd: Path, allowed: tuple[Path, ...]) -> RunSandbox | None:
        from .permissions.patterns import DomainPattern, PathPattern
        from .sandbox.hidden import ReadDenials

        deny = policy.rules.listed("deny")
        patterns = tuple(
            rule.matcher for rule in deny if rule.applies_to("Read") and isinstance(rule.matcher, PathPattern)
        )
        domains = [
            rule.matcher.host
            for rule in policy.rules.listed("allow")
            if rule.applies_to("WebFetch") and isinstance(rule.matcher, DomainPattern)
        ]
        settings_files = [path for path in (self.settings.settings_file, self.settings.policy_file) if path]
        return self.sandbox.for_run(
            cwd=cwd,
            roots=allowed,
            read_denials=ReadDenials(patterns, policy.bases, allowed) if patterns else None,
            extra_domains=domains,
            protected_files=settings_files,
        )

    def _warn_once(self, message: str) -> None:
        """Log a configuration problem once per process, not once per Task."""
        if message not in self._warned:
            self._warned.add(message)
            logger.warning("%s", message)

    def _tool_environment(self) -> dict[str, str]:
        credentials = self.sandbox.config.credentials
        return scrubbed_environment(self.environ, keep=credentials.allow_env_vars, remove=credentials.deny_env_vars)

    def _permission_policy(self, definition: AgentDefinition, cwd: Path, roots: tuple[Path, ...]) -> PermissionPolicy:
        from .permissions import PermissionPolicy, effective_mode, load_rules

        rules = load_rules(self.settings.settings_file, self.settings.policy_file)
        for problem in rules.errors:
            self._warn_once(f"permission rule ignored: {problem}")
        return PermissionPolicy(
            cwd=cwd,
            mode=effective_mode(self.settings.permission_mode, definition.permission_mode),
            rules=rules,
            agent_map=definition.permission,
            roots=roots,
            project_root=self.settings.working_directory,
        )
