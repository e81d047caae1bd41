"""What an agent file adds to a run beyond its body and tool list, as Claude Code adds it: the model settings
(adaptive thinking, effort, output limit, compaction threshold), the agent's memory, its skills and the Skill and
WebSearch tools, and the first message with the project context (CLAUDE.md, git status) and preloaded skills.

`service` calls these while it resolves a Task call into a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..core.messages import UserMessage
from ..core.names import EFFORT_LEVELS, EffortLevel
from ..definitions import AgentDefinition
from ..models.profiles import ModelProfile
from ..permissions.skill_grants import SkillGrants
from ..tools.base import Tool
from .memory import MEMORY_TOOLS, AgentMemory, memory_allow_rules, prepare_memory
from .project_context import claude_md_block, git_status, git_status_block, instruction_files
from .prompts import system_prompt
from .skills import ForkRunner, SkillCatalog, load_skills, preloaded_skills, skill_tool, skills_listing


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    thinking: bool
    effort: EffortLevel | None
    max_tokens: int
    compact_threshold: int


def model_settings(
    profile: ModelProfile,
    *,
    provider: str,
    file_effort: str | None,
    task_effort: str | None,
    max_tokens: int | None,
    compact_threshold: int | None,
) -> ModelSettings:
    """Task `effort` > the file's `effort` > `medium`, as Claude Code sends it to models that take one.

    An OpenAI-compatible endpoint gets `reasoning_effort` only when a level was asked for (models without reasoning
    reject it) and no thinking setting (it has none). `max_tokens` and `compact_threshold` override the model's
    output limit and 80% of its context window.
    """
    asked = task_effort or (file_effort if file_effort in EFFORT_LEVELS else None)
    level = cast(EffortLevel | None, asked)
    if provider == "openai":
        thinking, effort = False, level
    else:
        thinking, effort = profile.adaptive_thinking, profile.effort_for(level or "medium")
    return ModelSettings(
        thinking=thinking,
        effort=effort,
        max_tokens=max_tokens or profile.max_output_tokens,
        compact_threshold=compact_threshold or profile.compact_threshold(),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentExtras:
    """The agent's memory and the skills it can see, resolved for one run."""

    definition: AgentDefinition
    memory: AgentMemory | None
    skills: SkillCatalog
    grants: SkillGrants
    """What loaded skills' `allowed-tools` allow for the rest of the run (the permission check reads it)."""

    def tools(self, provider: str, *, fork: ForkRunner | None = None) -> dict[str, Tool]:
        """Tools that exist for this run only: WebSearch with the Anthropic provider, Skill when skills exist (`fork`
        runs its `context: fork` skills)."""
        tools: dict[str, Tool] = {}
        if provider == "anthropic":
            from ..tools.web_search import WEBSEARCH

            tools["WebSearch"] = WEBSEARCH
        if self.skills.invocable():
            tools["Skill"] = skill_tool(self.skills, plugin=self.definition.plugin, grants=self.grants, fork=fork)
        return tools

    @property
    def granted_tools(self) -> tuple[str, ...]:
        """Tools the agent gets even when its `tools:` leaves them out: Read, Write and Edit for its memory."""
        return MEMORY_TOOLS if self.memory is not None else ()

    @property
    def extra_roots(self) -> tuple[Path, ...]:
        """Folders the file tools may reach beyond the project: the memory folder (outside it for `user`)."""
        return (self.memory.directory,) if self.memory is not None and self.memory.writable else ()

    @property
    def allow_rules(self) -> tuple[str, ...]:
        return memory_allow_rules(self.memory) if self.memory is not None else ()

    def system_prompt(
        self, *, cwd: Path, model: ModelProfile, tool_names: Sequence[str], worktree: bool = False
    ) -> str:
        """The agent's system prompt, with its memory section and (when Skill is granted) the skills listing."""
        return system_prompt(
            self.definition.prompt,
            cwd=cwd,
            critical_reminder=self.definition.critical_reminder,
            model=model,
            memory=self.memory.prompt if self.memory is not None else None,
            skills=skills_listing(self.skills) if "Skill" in tool_names else None,
            worktree=worktree,
        )


def agent_extras(
    definition: AgentDefinition,
    *,
    cwd: Path,
    claude_dir: Path | None,
    plugin_dirs: Sequence[Path],
    project_trusted: bool = True,
) -> AgentExtras:
    """Create the memory folder (if the agent has memory) and find the skills visible from `cwd`. The project's own
    skills grant their `allowed-tools` only in a project the person trusted, as its settings' allow rules count; a
    `context: fork` skill grants nothing to the agent that launches it (its work happens in another task)."""
    skills = load_skills(cwd, claude_dir=claude_dir, plugin_dirs=plugin_dirs)

    def granted_by(name: str) -> tuple[str, ...]:
        skill = skills.find(name, plugin=definition.plugin)
        if skill is None or not skill.model_invocable or skill.fork:
            return ()
        return () if skill.source == "project" and not project_trusted else skill.allowed_tools

    return AgentExtras(
        definition=definition,
        memory=prepare_memory(definition, cwd=cwd, claude_dir=claude_dir),
        skills=skills,
        grants=SkillGrants(granted_by),
    )


async def opening_message(
    prompt: str,
    *,
    extras: AgentExtras,
    cwd: Path,
    claude_dir: Path | None,
    managed_dir: Path | None,
    env: Mapping[str, str],
    attribution: str | None = None,
) -> UserMessage:
    """A new run's first message: CLAUDE.md and git status before the prompt (unless `omitClaudeMd`), then the
    commit-attribution reminder (`attribution_block`, for an agent with Bash), the agent's `skills:` after it."""
    definition = extras.definition
    context: list[str] = []
    if not definition.omit_claude_md:
        files = instruction_files(cwd, claude_dir=claude_dir, managed_dir=managed_dir)
        block = claude_md_block(files)
        if block is not None:
            context.append(block)
        status = await git_status(cwd, dict(env))
        if status is not None:
            context.append(git_status_block(status))
    if attribution is not None:
        context.append(attribution)
    skills = preloaded_skills(definition.skills, extras.skills, agent=definition.name, plugin=definition.plugin)
    return UserMessage(content=prompt, context=tuple(context), attachments=tuple(skills))
