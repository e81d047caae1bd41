"""Assembling a run: one Task request turned into a task, and, when the task runs, into the loop's `AgentRun` (which
agent, which model and effort, which tools, which checks, which limits), with what the agent file's extension points
hold open for the run. Loaded at the first Task (or by the warm-up), never on the way to the first `tools/list`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..agent.attribution import attribution_block
from ..agent.file_changes import WATCHED_WITHOUT_SCAN, ChangeWatch
from ..agent.hooks import StartAnswer
from ..agent.hooks.scripts import hook_scripts
from ..agent.loop import AgentRun, RunResult, run_agent
from ..agent.setup import AgentExtras, ModelSettings, agent_extras, model_settings, opening_message
from ..config.claude_settings import ClaudeSettings
from ..core.errors import ProviderNotConfiguredError, SubagentsError
from ..core.hook_points import ToolGate
from ..core.messages import Message, Usage, UserMessage
from ..core.names import DEFAULT_AGENT, MODEL_ALIASES, PER_RUN_TOOL_NAMES, EffortLevel
from ..core.principals import LOCAL_PRINCIPAL
from ..definitions import AgentDefinition, Catalog, missing_tools, require_some_tool
from ..definitions.trust import without_plugin_extras
from ..models.base import Model
from ..models.pricing import MeteredModel, ModelPrice
from ..models.profiles import model_profile
from ..models.providers import MISSING_PROVIDER_MESSAGE
from ..models.resolve import MainModel, ModelChoice, choose_model, main_model, resolve_model_id
from ..permissions.patterns import DomainPattern, PathPattern
from ..permissions.policy import PermissionPolicy
from ..sandbox import RunSandbox
from ..sandbox.hidden import ReadDenials
from ..sandbox.layout import resolve_setting_path
from ..sandbox.wide import too_wide
from ..tasks.record import CarriedTask, Listener, TaskBudget, TaskRecord
from ..tasks.transcripts import read_history
from ..tools import BUILTIN_TOOL_NAMES
from ..tools.base import ModelAccess, ToolContext
from .carry_on import launch_record
from .extensions import Extender, Extensions, RunPlace
from .gates import QuestionTerms, SandboxTerms, read_filter, redirect_check, run_gate
from .host import RunHost
from .policies import KEPT
from .request import TaskRequest
from .toolsets import run_toolset, select_tools
from .trust_dialog import TrustDialog


@dataclass(frozen=True, slots=True, kw_only=True)
class _Launch:
    """What a task's run needs from the moment it was launched."""

    definition: AgentDefinition
    request: TaskRequest
    roots: tuple[Path, ...]
    history: Sequence[Message]
    place: RunPlace | None
    model: ModelChoice
    effort: EffortLevel | None
    """The effort the model is asked for (None: a model that takes none, or an OpenAI endpoint not asked)."""
    carried: bool = False
    """Another replica began the run: it goes on from its conversation (no new prompt, no start hooks)."""
    turns_done: int = 0


class RunAssembly:
    """Turns Task requests into tasks and, when each runs, into its run. One per runtime."""

    def __init__(self, host: RunHost) -> None:
        self._host = host
        self._plugin_runs: dict[int, tuple[AgentDefinition, AgentDefinition]] = {}
        """Plugin agents' definitions (by identity) and the ones their tasks run (`_as_it_runs`)."""
        self._trust = TrustDialog(host)

    def launch(
        self,
        request: TaskRequest,
        *,
        catalog: Catalog | None = None,
        roots: tuple[Path, ...] = (),
        principal: str = LOCAL_PRINCIPAL,
        parent: TaskRecord | None = None,
        place: RunPlace | None = None,
        trace_meta: Mapping[str, Any] | None = None,
        carried: CarriedTask | None = None,
    ) -> TaskRecord:
        """Start a task; returns at once (see `Subagents.launch`). `carried`: a task taken over from another
        replica of a team, which goes on from its conversation under its own id."""
        host = self._host
        definition, history = self._agent_and_history(request, principal, catalog, carried)
        if not host.model_configured:
            raise ProviderNotConfiguredError(MISSING_PROVIDER_MESSAGE)
        project = place.project if place is not None else self._working_directory(roots)
        choice = self._model_choice(definition, request, project)  # an alias an OpenAI endpoint lacks: refused now
        model_id = choice.model_id
        self._refuse_without_tools(definition)
        effort = self._model_settings(definition, request, model_id).effort
        launched = _Launch(
            definition=definition,
            request=request,
            roots=roots,
            history=history,
            place=place,
            model=choice,
            effort=effort,
            carried=carried is not None and bool(history),
            turns_done=carried.turns if carried is not None else 0,
        )

        async def job(record: TaskRecord, listener: Listener) -> RunResult:
            return await self._run(launched, record, listener)

        budget = self._budget(definition, parent)
        return host.tasks.start(
            agent=definition.name,
            description=request.description,
            job=job,
            background=parent is None and (request.run_in_background or definition.background),
            resumed_from=request.resume,
            history=history,
            owner=principal,
            parent=parent,
            model=model_id,
            effort=effort,
            model_note=choice.override,
            price=self._price(model_id, budget),
            budget=budget,
            turns=request.max_turns,
            trace_meta=trace_meta,
            launch=launch_record(request, roots, principal, project) if host.tasks.team is not None else None,
            carried=carried,
        )

    def _agent_and_history(
        self, request: TaskRequest, principal: str, catalog: Catalog | None, carried: CarriedTask | None
    ) -> tuple[AgentDefinition, list[Message]]:
        """The agent the task runs and the conversation it goes on from (a resumed or carried-on task's)."""
        if carried is not None:
            definition, history = self._host.definition(carried.agent, catalog), list(carried.history)
        elif request.resume:
            definition, history = self._resumed(request.resume, request.agent, principal, catalog)
        else:
            definition, history = self._host.definition(request.agent or DEFAULT_AGENT, catalog), []
        return self._as_it_runs(definition), history

    def _resumed(
        self, task_id: str, agent: str | None, principal: str, catalog: Catalog | None
    ) -> tuple[AgentDefinition, list[Message]]:
        """The agent and the conversation of the finished task `task_id`, which `agent` (when given) must have run.

        Raises:
            TaskNotFoundError, UnknownAgentError, SubagentsError: as `Subagents.launch` says.
        """
        tasks = self._host.tasks
        previous = tasks.get(task_id, principal=principal)
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
        return self._host.definition(previous.agent, catalog), read_history(tasks.transcript_path(previous.id))

    def _as_it_runs(self, definition: AgentDefinition) -> AgentDefinition:
        """The definition a task runs: a plugin agent's without the fields Claude Code ignores in plugin agents (the
        same object while the catalog keeps the file's, so what is cached on it is reused)."""
        kept = self._plugin_runs.get(id(definition))
        if kept is not None and kept[0] is definition:
            return kept[1]
        runs, warning = without_plugin_extras(definition)
        if warning is None:
            return definition
        self._host.warn_once(warning)
        if len(self._plugin_runs) >= KEPT:
            self._plugin_runs.clear()
        self._plugin_runs[id(definition)] = (definition, runs)
        return runs

    async def _run(self, launched: _Launch, record: TaskRecord, listener: Listener) -> RunResult:
        """One run, with what the agent file's extension points hold open for it (its worktree, its MCP servers),
        closed when it ends, fails or is stopped."""
        host, definition, request = self._host, launched.definition, launched.request
        model = await host.model()
        await host.sandbox_ready()  # what runs next takes its environment from the sandbox settings
        project = self._working_directory(launched.roots)
        place = launched.place or RunPlace(project=project, cwd=project)
        # Before anything the folder brings is loaded: trusting it now gives this very run its hooks and servers.
        await self._trust.settle(record, definition, place.project, agent=self._asking_name(definition, record))
        settings = host.settings
        extras = agent_extras(
            definition,
            cwd=place.project,
            claude_dir=settings.claude_dir,
            plugin_dirs=settings.plugin_dirs,
            project_trusted=host.trust.is_trusted(place.project),
        )
        extender = Extender(host, definition, request, record)
        async with AsyncExitStack() as held:
            place = await extender.isolate(place, held)
            extensions = await extender.open(launched.roots, place, held)
            run = self._agent_run(launched, record, model, extras, place, extensions, held)
            watch = self._change_watch(launched, record, place, run)
            watch.start()  # the first scan goes on while the model answers the first request
            try:
                if extensions.hooks is not None:
                    await watch.first_scan_done()  # a start hook's changes come after the first scan
                hooks = extensions.hooks if not launched.carried else None  # its start hooks ran where it began
                start = await hooks.subagent_start() if hooks is not None else None
                if start is not None and start.stop is not None:
                    return _stopped_at_start(start)
                credit = self._credit(run, place, extensions)
                prompt = (
                    None if launched.carried else await self._prompt(request, extras, place, extensions, start, credit)
                )
                run = replace(run, watch=watch)
                return await run_agent(
                    run,
                    prompt,
                    model=model,
                    history=launched.history,
                    on_event=listener,
                    turns_done=launched.turns_done,
                )
            finally:
                record.resources.file_changes = await watch.finish()

    def _change_watch(self, launched: _Launch, record: TaskRecord, place: RunPlace, run: AgentRun) -> ChangeWatch:
        """The run's watch over the files it changes: the project (or its worktree) is scanned when a tool that
        says nothing of what it writes (Bash, an MCP server's, a hook) may run."""
        earlier = None
        if launched.request.resume:  # a resumed task keeps the list of its earlier runs
            with contextlib.suppress(SubagentsError):
                previous = self._host.tasks.get(launched.request.resume, principal=record.owner).outcome
                earlier = previous.files if previous is not None else None
        hooks = run.hooks is not None
        scan = hooks or any(name not in WATCHED_WITHOUT_SCAN for name in run.tools)
        root = place.inside_worktree or place.project
        allowed = run.context.allowed_roots
        state = self._host.tasks.output_dir.parent  # the task's own transcript and output grow there
        return ChangeWatch(
            root=root, allowed=allowed, scan=scan, unseen_writes=hooks, skipped=(state,), earlier=earlier
        )

    async def _prompt(
        self,
        request: TaskRequest,
        extras: AgentExtras,
        place: RunPlace,
        extensions: Extensions,
        start: StartAnswer | None,
        credit: str | None,
    ) -> str | UserMessage:
        """The task's first message: the prompt, with the project's context and what the hooks added."""
        context = (*extensions.context, *(start.context if start is not None else ()))
        if request.resume:  # a resumed conversation already starts with the project's context: not twice
            return UserMessage(content=request.prompt, context=context) if context else request.prompt
        settings = self._host.settings
        opening = await opening_message(
            request.prompt,
            extras=extras,
            cwd=place.cwd,
            claude_dir=settings.claude_dir,
            managed_dir=settings.policy_file.parent if settings.policy_file else None,
            env=self._host.tool_environment(),
            attribution=credit,
        )
        return replace(opening, context=(*opening.context, *context))

    def _credit(self, run: AgentRun, place: RunPlace, extensions: Extensions) -> str | None:
        """The commit-attribution reminder, for an agent that can commit (it has Bash), as Claude Code adds it."""
        if "Bash" not in run.tools:
            return None
        claude_settings = extensions.claude_settings or self._host.run_settings(place.project)
        return attribution_block(claude_settings.credit, model_profile(run.model_id))

    def _working_directory(self, roots: tuple[Path, ...]) -> Path:
        # Without --cwd, the host's first root is the project: hosts often start servers in / or $HOME.
        settings = self._host.settings
        return settings.cwd or (roots[0] if roots else settings.working_directory)

    def _agent_run(
        self,
        launched: _Launch,
        record: TaskRecord,
        model: Model,
        extras: AgentExtras,
        place: RunPlace,
        extensions: Extensions,
        held: AsyncExitStack,
    ) -> AgentRun:
        """The loop's run of one task; what it opens for the run (its sandbox) closes with `held`."""
        host, definition, request = self._host, launched.definition, launched.request
        claude_settings = extensions.claude_settings or host.run_settings(place.project)
        allowed = self._allowed_roots(launched.roots, place, extras, claude_settings)
        tools = self._tools(definition, extras, extensions)
        model_id = launched.model.model_id
        profile = model_profile(model_id)
        chosen = self._model_settings(definition, request, model_id)
        policy = host.policies.policy(
            definition,
            place,
            allowed,
            claude_settings,
            extra_allow=extras.allow_rules,
            hook_files=self._hook_files(extensions, place),
        )
        sandbox = self._run_sandbox(policy, place.cwd, allowed)
        if sandbox is not None:
            held.callback(sandbox.close)
        limits = [host.settings.max_turns, definition.max_turns, request.max_turns]
        return AgentRun(
            agent=definition.name,
            system=extras.system_prompt(
                cwd=place.cwd, model=profile, tool_names=list(tools), worktree=place.worktree is not None
            ),
            model_id=model_id,
            tools=tools,
            context=self._tool_context(place.cwd, allowed, record, model, model_id, policy, sandbox, extensions),
            max_turns=min(limit for limit in limits if limit is not None),
            max_tokens=chosen.max_tokens,
            thinking=chosen.thinking,
            effort=chosen.effort,
            compact_threshold=chosen.compact_threshold,
            gate=self._gate(definition, record, policy, sandbox, extensions, place.project, extras),
            hooks=extensions.hooks,
            unavailable_tools=extensions.unavailable,
        )

    def _allowed_roots(
        self, roots: tuple[Path, ...], place: RunPlace, extras: AgentExtras, claude_settings: ClaudeSettings
    ) -> tuple[Path, ...]:
        """The folders the run's file tools may use: its working directory, the host's roots (not from inside a
        worktree: isolation keeps the person's checkout out of reach), `additionalDirectories`, the agent's own."""
        additional = self._host.policies.additional_directories(claude_settings, place.project)
        host_roots = () if place.inside_worktree is not None else roots
        return tuple(dict.fromkeys((place.cwd, *host_roots, *additional, *extras.extra_roots)))

    def _tools(self, definition: AgentDefinition, extras: AgentExtras, extensions: Extensions) -> dict[str, Any]:
        """The run's tools, as the agent file chooses them among every source's."""
        host = self._host
        run_only = extras.tools(host.provider_name, fork=extensions.fork)
        available = run_toolset(host.tools, run_only, extensions.tools).tools()
        selection = select_tools(definition, available, granted=extras.granted_tools)
        require_some_tool(definition, selection.missing, granted=bool(extras.granted_tools))
        for item in selection.missing:
            host.warn_once(f"agent {definition.name}: tool {item.entry!r} is left out: {item.reason}")
        return selection.tools

    def _tool_context(
        self,
        cwd: Path,
        allowed: tuple[Path, ...],
        record: TaskRecord,
        model: Model,
        model_id: str,
        policy: PermissionPolicy,
        sandbox: RunSandbox | None,
        extensions: Extensions,
    ) -> ToolContext:
        return ToolContext(
            cwd=cwd,
            allowed_roots=allowed,
            env=self._host.tool_environment(),
            processes=record.resources.processes,
            models=self._model_access(model, model_id, record),
            readable=read_filter(policy),
            sandbox=sandbox,
            check_url=redirect_check(policy),
            tool_responses=extensions.hooks is not None and extensions.hooks.hooks.listens("PostToolUse"),
        )

    def _gate(
        self,
        definition: AgentDefinition,
        record: TaskRecord,
        policy: PermissionPolicy,
        sandbox: RunSandbox | None,
        extensions: Extensions,
        project: Path,
        extras: AgentExtras,
    ) -> ToolGate:
        terms = None
        if sandbox is not None:
            wide = self._too_wide(sandbox)
            if wide is not None:
                self._host.warn_too_wide(wide)
            terms = SandboxTerms(auto_allow=self._host.sandbox_auto_allow, too_wide=wide)
        return run_gate(
            policy,
            sandbox,
            terms,
            agent=self._asking_name(definition, record),
            ask=partial(self._host.tasks.ask, record),
            denials=record.resources.denials,
            permission_hook=extensions.hooks,
            answers=QuestionTerms(project=project, session_rules=self._host.session_rules),
            skill_grants=extras.grants,
        )

    def _too_wide(self, sandbox: RunSandbox) -> str | None:
        """Why the run's sandbox cannot confine writes to a project (its working directory, a root or an
        `allowWrite` folder is /, the home directory or holds it), or None."""
        home = sandbox.runtime.home
        allow_write = self._host.sandbox.config.filesystem.allow_write
        folders = [
            ("the project folder", sandbox.cwd),
            *(("the allowed folder", root) for root in sandbox.roots),
            *(
                (
                    "the sandbox.filesystem.allowWrite folder",
                    resolve_setting_path(entry, home=home, project=sandbox.cwd),
                )
                for entry in allow_write
            ),
        ]
        for label, folder in folders:
            reason = too_wide(folder, home)
            if reason is not None:
                return f"{label} {reason}"
        return None

    def _run_sandbox(self, policy: PermissionPolicy, cwd: Path, allowed: tuple[Path, ...]) -> RunSandbox | None:
        deny = policy.rules.listed("deny")
        patterns = tuple(
            rule.matcher for rule in deny if rule.applies_to("Read") and isinstance(rule.matcher, PathPattern)
        )
        domains = [
            rule.matcher.host
            for rule in policy.rules.listed("allow")
            if rule.applies_to("WebFetch") and isinstance(rule.matcher, DomainPattern)
        ]
        return self._host.sandbox.for_run(
            cwd=cwd,
            roots=allowed,
            read_denials=ReadDenials(patterns, policy.bases, allowed) if patterns else None,
            extra_domains=domains,
            protected_files=[Path(path) for path in policy.protected.files],  # as the policy has just listed them
        )

    def _hook_files(self, extensions: Extensions, place: RunPlace) -> tuple[Path, ...]:
        """The files the run's hook commands name: hooks run outside the sandbox, so those stay out of reach."""
        if extensions.hooks is None:
            return ()
        home = Path(self._host.environ.get("HOME") or Path.home())
        return hook_scripts(extensions.hooks.hooks, project=place.project, home=home)

    def _model_choice(self, definition: AgentDefinition, request: TaskRequest, project: Path) -> ModelChoice:
        """The model the task runs on, and why.

        Raises:
            ProviderNotConfiguredError: an OpenAI-compatible endpoint and no model it serves.
        """
        return choose_model(
            task_model=request.model,
            definition_model=definition.model,
            main=self._main_model(project),
            default_model=self._host.settings.model,
            provider=self._host.provider_name,
        )

    def _main_model(self, project: Path) -> MainModel | None:
        """The person's main model: `--main-model`, else (with the Anthropic provider, whose models these name)
        `ANTHROPIC_MODEL`, else the `model` of Claude Code's settings for the project."""
        settings = self._host.settings
        if settings.main_model:
            return main_model(settings.main_model, "--main-model")
        if self._host.provider_name != "anthropic":
            return None
        found = main_model(settings.anthropic_model, "ANTHROPIC_MODEL")
        configured = self._host.run_settings(project).model if found is None else None
        if configured is not None:
            found = main_model(configured[0], f"model in {configured[1].path}")
        return found

    def _model_settings(self, definition: AgentDefinition, request: TaskRequest, model_id: str) -> ModelSettings:
        settings = self._host.settings
        return model_settings(
            model_profile(model_id),
            provider=self._host.provider_name,
            file_effort=definition.effort,
            task_effort=request.effort,
            max_tokens=settings.max_tokens,
            compact_threshold=settings.compact_threshold,
        )

    def _refuse_without_tools(self, definition: AgentDefinition) -> None:
        """Refuse, before a task exists, an agent whose `tools` line names only tools that do not exist here.

        Skill counts as existing: whether skills are installed is known only when the run is prepared.

        Raises:
            AgentToolsError: naming each entry and why it gives no tool.
        """
        available = {*BUILTIN_TOOL_NAMES, *PER_RUN_TOOL_NAMES}
        if self._host.provider_name != "anthropic":
            available.discard("WebSearch")
        require_some_tool(definition, missing_tools(definition, available), granted=definition.memory is not None)

    def _asking_name(self, definition: AgentDefinition, record: TaskRecord) -> str:
        """The agent as a permission question names it: a nested one says which agent launched it."""
        lineage = self._host.tasks.lineage(record)
        if len(lineage) == 1:
            return definition.name
        return f"{definition.name} (launched by {' < '.join(r.agent for r in lineage[1:])})"

    def _budget(self, definition: AgentDefinition, parent: TaskRecord | None) -> TaskBudget | None:
        """The lowest of `--max-budget-usd`, the agent's `maxBudgetUsd` and, for a nested task, what remains of each
        ancestor's own budget; and where it was set."""
        candidates = [
            TaskBudget(usd=usd, source=source)
            for usd, source in (
                (self._host.settings.max_budget_usd, "--max-budget-usd"),
                (definition.max_budget_usd, f"maxBudgetUsd of agent {definition.name}"),
            )
            if usd is not None
        ]
        for holder in self._host.tasks.lineage(parent) if parent is not None else ():
            budget = holder.budget
            if budget is not None and budget.holder is None:
                left = max(budget.usd - (holder.cost_usd() or 0.0), 0.0)
                candidates.append(TaskBudget(usd=left, source=budget.source, holder=holder.id))
        return min(candidates, key=lambda budget: budget.usd, default=None)

    def _price(self, model_id: str, budget: TaskBudget | None) -> ModelPrice | None:
        """The model's price; under a budget, a model without one counts at the dearest price known."""
        table = self._host.prices.table()
        price = table.price(model_id)
        return table.ceiling() if price is None and budget is not None else price

    def _model_access(self, model: Model, model_id: str, record: TaskRecord) -> ModelAccess | None:
        """What WebFetch and WebSearch may ask of the provider (priced into the task's cost); None for scripted
        models, which have no pages."""
        if model.provider not in ("anthropic", "openai"):
            return None
        settings = self._host.settings
        # Without --model, an OpenAI-compatible endpoint has only the task's own model to read pages with.
        default = model_id if settings.model in MODEL_ALIASES else settings.model
        fast = resolve_model_id(
            task_model="haiku", definition_model=None, default_model=default, provider=model.provider
        )
        table = self._host.prices.table()
        unpriced = table.ceiling() if record.budget is not None else None
        metered = MeteredModel(model, table, record.resources.side_spend, unpriced=unpriced)
        return ModelAccess(model=metered, main_model_id=model_id, fast_model_id=fast)


def _stopped_at_start(start: StartAnswer) -> RunResult:
    """A SubagentStart hook said `continue: false`: the agent never runs."""
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
