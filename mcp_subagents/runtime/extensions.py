"""Where a run works and what its agent file's extension points add to it for the run's lifetime: its worktree,
its MCP servers' tools, its nested Task tool and its hooks. `service` opens them around each run (`Extender`)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..agent.hooks import AgentHooks, HookIdentity, HookSet, hooks_for_run
from ..agent.mcp_servers.problem import ServerProblem
from ..agent.skills import ForkRunner, Skill, fork_prompt
from ..agent.worktrees import Worktree, create_worktree, finish_worktree
from ..config.claude_settings import ClaudeSettings
from ..core.errors import SubagentsError, ToolError
from ..core.names import EFFORT_LEVELS
from ..definitions import AgentDefinition, tools_summary
from ..definitions.trust import untrusted_source
from ..tasks.outcome import TaskOutcome
from ..tasks.record import TaskRecord
from ..tools.base import Tool
from .nesting import NESTED_TOOL_NAME, Launcher, NestedTaskInput, launchable_agents, nested_task_tool, wants_task_tool
from .request import TaskRequest

if TYPE_CHECKING:
    from .host import RunHost

logger = logging.getLogger(__name__)

NESTED_STOP_GRACE_S = 10.0
"""How long a stopped parent waits for the nested task it launched to clean up."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlace:
    """Where a run works."""

    project: Path
    """The project folder: its settings files, `.mcp.json`, skills, memory and trust."""
    cwd: Path
    """The agent's working directory: the project, or a git worktree of it."""
    worktree: Worktree | None = None
    """The run's own worktree (`isolation: worktree`)."""
    inside_worktree: Path | None = None
    """The worktree the run works in, its own or the one of the task that launched it: the allowed area is the
    worktree alone, not the host's roots."""

    def isolated(self, worktree: Worktree) -> RunPlace:
        return RunPlace(project=self.project, cwd=worktree.cwd, worktree=worktree, inside_worktree=worktree.path)

    def for_child(self) -> RunPlace:
        """A nested task works where its parent works (its own worktree, if it asks for one, comes on top)."""
        return RunPlace(project=self.project, cwd=self.cwd, inside_worktree=self.inside_worktree)


@dataclass(slots=True, kw_only=True)
class Extensions:
    """What the agent file's extension points give one run."""

    tools: dict[str, Tool] = field(default_factory=lambda: {})
    """MCP servers' tools (`mcp__server__tool`) and the nested `Task` tool, before `tools:` selects among them."""
    unavailable: dict[str, str] = field(default_factory=lambda: {})
    """Tool name prefixes of servers that did not start -> what the model reads when it calls one."""
    server_problems: list[ServerProblem] = field(default_factory=lambda: [])
    hooks: AgentHooks | None = None
    context: list[str] = field(default_factory=lambda: [])
    """Blocks for the start of the conversation (a server that did not start)."""
    claude_settings: ClaudeSettings | None = None
    """The settings files the run's extension points were read from; the run uses the same."""
    fork: ForkRunner | None = None
    """Runs the agent's `context: fork` skills as nested tasks (None at the depth limit: they load inline)."""


def server_notes(problems: list[ServerProblem]) -> tuple[dict[str, str], list[str]]:
    """(prefix -> reason for calls of a missing server's tools, a context block telling the agent at start)."""
    from ..agent.mcp_servers import server_prefix

    unavailable = {
        server_prefix(p.name): f"the MCP server '{p.name}' that provides it is not running ({p.reason})"
        for p in problems
    }
    if not problems:
        return unavailable, []
    lines = "\n".join(f"- {p.name}: {p.reason}" for p in problems)
    block = (
        "<system-reminder>\nThese MCP servers of yours are not available in this run, so their tools are missing:\n"
        f"{lines}\nSay so in your report if the task needed them.\n</system-reminder>"
    )
    return unavailable, [block]


def merged(*groups: Mapping[str, Tool]) -> dict[str, Tool]:
    """Tool maps joined; an earlier map's tool keeps its name (built-in tools win over an MCP tool's)."""
    joined: dict[str, Tool] = {}
    for group in groups:
        for name, tool in group.items():
            joined.setdefault(name, tool)
    return joined


class Extender:
    """Opens, for one run of `definition`, what its extension points hold: its worktree, its MCP servers, its
    nested Task tool, its hooks."""

    def __init__(self, app: RunHost, definition: AgentDefinition, args: TaskRequest, record: TaskRecord) -> None:
        self.app = app
        self.definition = definition
        self.args = args
        self.record = record

    async def isolate(self, place: RunPlace, held: AsyncExitStack) -> RunPlace:
        """`isolation: worktree` (the file's, or Task's): a worktree of its own, finished when `held` closes.

        Raises:
            WorktreeError: no repository to make one of, or git failed.
        """
        isolation = self.args.isolation or self.definition.isolation
        if isolation == "remote":
            self.app.warn_once(
                f"agent {self.definition.name}: isolation: remote is not supported here; it runs in place"
            )
        if isolation != "worktree":
            return place
        env = self.app.tool_environment()
        worktree = await create_worktree(place.cwd, self.record.id[:16], env)
        record = self.record

        async def finish() -> None:
            record.resources.worktree = await finish_worktree(worktree, env)

        held.push_async_callback(finish)
        return place.isolated(worktree)

    async def open(self, roots: tuple[Path, ...], place: RunPlace, held: AsyncExitStack) -> Extensions:
        """The run's MCP servers (started now, stopped when `held` closes), its nested Task tool, its hooks."""
        app, definition = self.app, self.definition
        claude_settings = app.run_settings(place.project)
        trusted = app.trust.is_trusted(place.project)
        why_untrusted = app.trust.why_untrusted(place.project)
        file_home = untrusted_source(app.trust, definition, place.project)
        file_why = None if file_home is None else app.trust.why_untrusted(file_home)
        extensions = Extensions(claude_settings=claude_settings)
        if definition.mcp_servers:
            await self._start_servers(
                extensions,
                place,
                claude_settings,
                held,
                trusted=trusted and file_why is None,
                file_trusted=file_why is None,
                why=file_why or why_untrusted,
            )
        nested = self._nested_task_tool(roots, place)
        if nested is not None:
            extensions.tools[NESTED_TOOL_NAME] = nested
        if self.record.depth < app.settings.max_depth:
            extensions.fork = self._fork_runner(roots, place)
        run_hooks = hooks_for_run(
            claude_settings,
            definition,
            project_trusted=trusted,
            why_untrusted=why_untrusted,
            agent_file_untrusted=file_why,
        )
        for problem in run_hooks.problems:
            app.warn_once(f"hooks: {problem}")
        if run_hooks.hooks:
            extensions.hooks = self._hooks(run_hooks.hooks, place, claude_settings)
        return extensions

    async def _start_servers(
        self,
        extensions: Extensions,
        place: RunPlace,
        claude_settings: ClaudeSettings,
        held: AsyncExitStack,
        *,
        trusted: bool,
        file_trusted: bool,
        why: str,
    ) -> None:
        from ..agent.mcp_servers import ServerDirectory, resolve_servers
        from ..agent.mcp_servers.toolbox import open_toolbox  # the MCP client loads when an agent has servers

        app, definition, record = self.app, self.definition, self.record
        directory = ServerDirectory(
            project=place.project, settings=claude_settings, claude_config_file=app.settings.claude_config_file
        )
        resolved = resolve_servers(
            definition,
            directory,
            environ=app.environ,
            project=place.project,
            trusted=lambda: trusted,
            definition_trusted=file_trusted,
            why_untrusted=why,
        )
        toolbox = await held.enter_async_context(
            open_toolbox(
                resolved.servers,
                cwd=place.cwd,
                env=app.tool_environment(),
                start_timeout=app.settings.mcp_start_timeout,
                log_dir=app.tasks.output_dir,
                log_prefix=record.id,
            )
        )
        extensions.tools.update(toolbox.tools)
        extensions.server_problems = [*resolved.problems, *toolbox.problems]
        record.resources.server_problems = extensions.server_problems
        extensions.unavailable, extensions.context = server_notes(extensions.server_problems)

    def _hooks(self, hooks: HookSet, place: RunPlace, claude_settings: ClaudeSettings) -> AgentHooks:
        app, definition, args, record = self.app, self.definition, self.args, self.record
        root = app.tasks.lineage(record)[-1]
        effort = args.effort or (definition.effort if definition.effort in EFFORT_LEVELS else None) or "medium"
        identity = HookIdentity(
            session_id=root.id,
            transcript_path=app.tasks.transcript_path(root.id),
            agent_id=record.id,
            agent_type=definition.name,
            agent_transcript_path=app.tasks.transcript_path(record.id),
            cwd=place.cwd,
            project_dir=place.project,
            permission_mode=app.agent_mode(definition, claude_settings, place.project),
            effort=effort,
            env=app.tool_environment(),
            home=Path(app.environ.get("HOME") or Path.home()),
        )
        return AgentHooks(hooks, identity, report=partial(app.tasks.log_line, record), denials=record.resources.denials)

    def _nested_task_tool(self, roots: tuple[Path, ...], place: RunPlace) -> Tool | None:
        """The Task tool, when the agent's tools allow it and the depth limit leaves room for one more level."""
        definition = self.definition
        if self.record.depth >= self.app.settings.max_depth or not wants_task_tool(definition):
            return None
        catalog = self.app.catalog()
        names = launchable_agents(definition, catalog.names())
        if not names:
            return None
        lines = [(d.name, d.description, tools_summary(d)) for d in (catalog.agents[name] for name in names)]
        return nested_task_tool(lines, self._launcher(roots, place, frozenset(names)))

    def _launcher(self, roots: tuple[Path, ...], place: RunPlace, allowed: frozenset[str]) -> Launcher:
        from ..render import outcome_text

        app = self.app

        async def launch(arguments: NestedTaskInput) -> str:
            if arguments.subagent_type not in allowed:
                names = ", ".join(sorted(allowed))
                raise ToolError(f"This agent may not launch '{arguments.subagent_type}'. It may launch: {names}")
            task = TaskRequest(
                description=arguments.description,
                prompt=arguments.prompt,
                subagent_type=arguments.subagent_type,
                model=arguments.model,
                max_turns=arguments.max_turns,
                effort=arguments.effort,
                isolation=arguments.isolation,
            )
            child, outcome = await self._run_child(task, roots, place)
            text = outcome_text(child, outcome, max_chars=app.settings.max_result_chars)
            if outcome.state != "completed":
                raise ToolError(text)
            return text

        return launch

    def _fork_runner(self, roots: tuple[Path, ...], place: RunPlace) -> ForkRunner:
        """`context: fork` skills: each runs as a nested task of the skill's `agent` (general-purpose by default)
        from the skill's instructions, and the Skill call answers with that task's final text."""

        async def fork(skill: Skill, arguments: str) -> tuple[str, str]:
            agent = skill.fork_agent or "general-purpose"
            prompt = fork_prompt(skill, arguments)
            task = TaskRequest(description=f"skill {skill.name}", prompt=prompt, subagent_type=agent)
            child, outcome = await self._run_child(task, roots, place)
            if outcome.state != "completed":
                why = outcome.error or outcome.failure or outcome.state
                raise ToolError(
                    f"The skill {skill.name} ran as task {child.id} ({agent}), which did not complete: {why}"
                )
            return child.id, outcome.text

        return fork

    async def _run_child(
        self, task: TaskRequest, roots: tuple[Path, ...], place: RunPlace
    ) -> tuple[TaskRecord, TaskOutcome]:
        """A nested task of this run, to its end: stopped with its parent, its tokens counted in the parent's."""
        app, parent = self.app, self.record
        try:
            child = app.launch(task, roots=roots, principal=parent.owner, parent=parent, place=place.for_child())
        except SubagentsError as exc:
            raise ToolError(exc.message) from None
        try:
            await child.done.wait()
        finally:
            if not child.done.is_set():  # the parent was stopped: its nested task goes with it
                with anyio.CancelScope(shield=True):
                    app.tasks.request_stop(child.id)
                    await app.tasks.wait(child, NESTED_STOP_GRACE_S)
        outcome = child.outcome
        assert outcome is not None
        if outcome.counts is not None:  # its tokens count in its parent's (its cost already does, as it spent)
            parent.resources.descendant_usage += outcome.counts.usage
            parent.resources.descendant_counts = parent.resources.descendant_counts.plus(outcome.counts)
        if outcome.files is not None:  # its changed files are its parent's too, marked as its
            parent.resources.child_files.append((child.id, outcome.files))
        return child, outcome
