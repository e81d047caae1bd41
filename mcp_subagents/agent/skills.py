"""Skills, as Claude Code keeps them: `<folder>/SKILL.md` with YAML frontmatter, found in the project, the user's
folder and plugins. An agent's `skills:` are preloaded into its first message; the `Skill` tool loads one on demand.

Where skills are found, and which wins when two share a name (as in Claude Code, the user's own beat the
project's): `.claude/skills/` in the working directory and its parents up to the repository root, then
`~/.claude/skills/`; plugin skills are named `plugin:skill` and never clash.

Commands are skills too, as in Claude Code 2.1.328: each `.claude/commands/**/*.md` (project, user, a plugin's
`commands/`) is offered under its path, folders as namespaces (`ns/sub.md` is `ns:sub`); its description is the
frontmatter's or its first line. A skill beats a command of the same name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, TypeAlias

from pydantic import Field

from ..core.errors import DefinitionError, ToolError
from ..core.git import checkout_root
from ..definitions.frontmatter import has_frontmatter, read_frontmatter
from ..definitions.parse import tool_entries
from ..definitions.sources import plugin_folders
from ..permissions.skill_grants import SkillGrants
from ..tools.base import Tool, ToolAnswer, ToolContext, ToolInput

logger = logging.getLogger(__name__)

SkillSource: TypeAlias = Literal["project", "user", "plugin"]
SKILL_FILE: Final = "SKILL.md"
MAX_COMMAND_DEPTH: Final = 8
"""Folders below `commands/` that are searched for commands (namespaces nest that deep at most)."""
MAX_DESCRIPTION_CHARS: Final = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    name: str
    """`my-skill`, or `plugin:my-skill` for a plugin's skill."""
    description: str
    directory: Path
    body: str
    source: SkillSource
    model_invocable: bool = True
    """False with `disable-model-invocation: true`: only a person may run it, so it is neither preloaded nor
    offered to the Skill tool."""
    command: bool = False
    """A command file (`.claude/commands/…md`) rather than a skill folder: loaded without the folder line."""
    allowed_tools: tuple[str, ...] = ()
    """`allowed-tools`: permission rules that count once the skill is loaded (`permissions.skill_grants`)."""
    fork: bool = False
    """`context: fork`: the Skill tool runs it as a subagent of its own and answers with that agent's result."""
    fork_agent: str | None = None
    """`agent`: the agent type a forked skill runs as (general-purpose when not given)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillCatalog:
    skills: Mapping[str, Skill]

    def find(self, name: str, *, plugin: str | None = None) -> Skill | None:
        """The skill `name` names: exactly, else the agent's own plugin's, else the one plugin skill of that name."""
        name = name.strip().removeprefix("/")
        if name in self.skills:
            return self.skills[name]
        if plugin is not None and f"{plugin}:{name}" in self.skills:
            return self.skills[f"{plugin}:{name}"]
        matches = [skill for key, skill in self.skills.items() if key.rpartition(":")[2] == name]
        return matches[0] if len(matches) == 1 else None

    def invocable(self) -> list[Skill]:
        return [skill for skill in self.skills.values() if skill.model_invocable]


def load_skills(cwd: Path, *, claude_dir: Path | None, plugin_dirs: Sequence[Path] = ()) -> SkillCatalog:
    """Every skill visible from `cwd`. A broken SKILL.md is logged and skipped."""
    found: dict[str, Skill] = {}
    project_folders = list(reversed(_project_folders(cwd)))  # closer folders win
    plugins = [found_plugin for plugin_dir in plugin_dirs for found_plugin in plugin_folders(plugin_dir)]
    for scan in (_scan_commands, _scan):  # skills last: one beats a command of the same name
        kind = "commands" if scan is _scan_commands else "skills"
        for folder in project_folders:
            scan(folder / ".claude" / kind, "project", found, within=folder)
        if claude_dir is not None:
            scan(claude_dir / kind, "user", found)
        for plugin, root in plugins:
            scan(root / kind, "plugin", found, plugin=plugin, within=root)
    return SkillCatalog(skills=dict(sorted(found.items())))


def _project_folders(cwd: Path) -> list[Path]:
    """`cwd` and its parents up to the repository root; just `cwd` outside a repository."""
    root = checkout_root(cwd)
    if root is None:
        return [cwd]
    folders = [cwd, *cwd.parents]
    return folders[: folders.index(root) + 1]


def _scan(
    root: Path, source: SkillSource, found: dict[str, Skill], *, plugin: str | None = None, within: Path | None = None
) -> None:
    """Skills in `root`. With `within`, a SKILL.md whose real path leaves that folder is skipped: a cloned project
    could otherwise link one to a private file, which the model would then read."""
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path) / SKILL_FILE
        if entry.name.startswith(".") or not path.is_file():
            continue
        if within is not None and not path.resolve().is_relative_to(within.resolve()):
            logger.warning("skill %s leads out of %s through a link; skipped", path, within)
            continue
        skill = _read_skill(path, source, plugin)
        if skill is not None:
            found[skill.name] = skill


def _scan_commands(
    root: Path, source: SkillSource, found: dict[str, Skill], *, plugin: str | None = None, within: Path | None = None
) -> None:
    """Command files under `root`, each named by its path below it. With `within`, as for skills: a file whose
    real path leaves that folder is skipped."""
    for path, parts in _command_files(root, (), follow_links=within is None):
        if within is not None and not path.resolve().is_relative_to(within.resolve()):
            logger.warning("command %s leads out of %s through a link; skipped", path, within)
            continue
        skill = _read_skill(path, source, plugin, name=":".join(parts))
        if skill is not None:
            found[skill.name] = skill


def _command_files(
    folder: Path, namespace: tuple[str, ...], *, follow_links: bool
) -> list[tuple[Path, tuple[str, ...]]]:
    """Each command file below `folder` with its name's parts. A project's linked folder is not entered: it could
    lead anywhere, and walking a link to `/` costs as much as it reveals."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    files: list[tuple[Path, tuple[str, ...]]] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir(follow_symlinks=follow_links) and len(namespace) < MAX_COMMAND_DEPTH:
            files += _command_files(Path(entry.path), (*namespace, entry.name), follow_links=follow_links)
        elif entry.name.endswith(".md") and entry.is_file():
            files.append((Path(entry.path), (*namespace, entry.name.removesuffix(".md"))))
    return files


def _read_skill(path: Path, source: SkillSource, plugin: str | None, *, name: str | None = None) -> Skill | None:
    """The skill in `path`: a SKILL.md named by its folder, or (with `name`) a command file."""
    try:
        text = path.read_text(encoding="utf-8")
        if has_frontmatter(text):
            frontmatter = read_frontmatter(text, path)
            fields, body = frontmatter.fields, frontmatter.body
        else:
            fields, body = {}, text.strip()
    except (OSError, UnicodeDecodeError) as exc:
        logger.warning("skill %s cannot be read: %s", path, exc)
        return None
    except DefinitionError as exc:
        logger.warning("skill %s skipped: %s", path, exc.message)
        return None
    own_name = path.parent.name if name is None else name
    description = fields.get("description") or fields.get("when_to_use") or _first_line(body)
    invocation = fields.get("disable-model-invocation")
    return Skill(
        name=f"{plugin}:{own_name}" if plugin else own_name,
        description=" ".join(str(description).split())[:MAX_DESCRIPTION_CHARS],
        directory=path.parent,
        body=body,
        source=source,
        model_invocable=not (invocation is True or str(invocation).strip().lower() == "true"),
        command=name is not None,
        allowed_tools=tool_entries(fields.get("allowed-tools")),
        fork=str(fields.get("context", "")).strip().lower() == "fork",
        fork_agent=str(fields["agent"]).strip() or None if isinstance(fields.get("agent"), str) else None,
    )


def _first_line(body: str) -> str:
    return next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")


def skill_blocks(skill: Skill, arguments: str = "") -> tuple[str, str]:
    """The two text blocks a loaded skill is given as: its marker, then its folder and instructions."""
    body = skill.body.replace("${CLAUDE_SKILL_DIR}", str(skill.directory)).replace("$ARGUMENTS", arguments)
    marker = (
        f"<command-message>{skill.name}</command-message>\n"
        f"<command-name>{skill.name}</command-name>\n"
        "<skill-format>true</skill-format>"
    )
    if skill.command:  # Claude Code gives a command's text alone
        return marker, body
    return marker, f"Skill folder (paths in the skill are relative to it): {skill.directory}\n\n{body}"


def preloaded_skills(names: Sequence[str], catalog: SkillCatalog, *, agent: str, plugin: str | None) -> list[str]:
    """The blocks of an agent's `skills:`, in the order listed; a missing or person-only skill is skipped and
    logged."""
    blocks: list[str] = []
    for name in names:
        skill = catalog.find(name, plugin=plugin)
        if skill is None:
            logger.warning("agent %s lists skill %s, which was not found; skipped", agent, name)
        elif not skill.model_invocable:
            logger.warning(
                "agent %s lists skill %s, which sets disable-model-invocation and cannot be preloaded; skipped",
                agent,
                name,
            )
        else:
            blocks += skill_blocks(skill)
    return blocks


def skills_listing(catalog: SkillCatalog) -> str | None:
    """The system prompt section that tells the model which skills the Skill tool can load."""
    skills = catalog.invocable()
    if not skills:
        return None
    lines = "\n".join(f"- {skill.name}: {skill.description}" for skill in skills)
    return f"# Skills\nThe Skill tool can load these skills:\n{lines}"


class SkillInput(ToolInput):
    skill: str = Field(description='The name of the skill to load, e.g. "pdf" or "my-plugin:review"')
    args: str | None = Field(default=None, description="Optional arguments for the skill")


SKILL_DESCRIPTION = """Loads a skill: instructions, and sometimes scripts or reference files, for one kind of work.

- When the task matches one of the skills listed as available, load it with this tool before you start, then \
follow what it says.
- Give the skill's name exactly as listed; `args` is passed to skills that take arguments.
- A skill already shown in the conversation (for example preloaded with your first message) is loaded; do not \
load it again."""


ForkRunner = Callable[[Skill, str], Awaitable[tuple[str, str]]]
"""Runs a `context: fork` skill as a subagent of its own, from its instructions with the arguments put in, and
returns (that task's id, its final text); raises `ToolError` when it did not complete."""


def skill_tool(
    catalog: SkillCatalog,
    *,
    plugin: str | None = None,
    grants: SkillGrants | None = None,
    fork: ForkRunner | None = None,
) -> Tool:
    """The Skill tool over this catalog. A loaded skill's `allowed-tools` go to `grants`; a `context: fork` skill
    runs through `fork` (without one it loads inline, as any skill)."""

    async def run(_ctx: ToolContext, args: SkillInput) -> str:
        skill = catalog.find(args.skill, plugin=plugin)
        if skill is None or not skill.model_invocable:
            names = ", ".join(s.name for s in catalog.invocable()) or "none"
            why = "it can only be run by a person" if skill is not None else "there is no such skill"
            raise ToolError(f"The skill {args.skill!r} cannot be loaded: {why}. Available skills: {names}")
        if grants is not None and skill.allowed_tools:
            grants.grant(skill.name)
        if skill.fork and fork is not None:
            task_id, result = await fork(skill, args.args or "")
            forked = {"success": True, "commandName": skill.name, "status": "forked", "agentId": task_id}
            text = f"The skill {skill.name} ran as a subagent of its own (context: fork), which answered:\n\n{result}"
            return ToolAnswer(text, lambda: {**forked, "result": result})
        loaded = "\n\n".join(skill_blocks(skill, args.args or ""))
        return ToolAnswer(loaded, lambda: {"success": True, "commandName": skill.name})

    return Tool(name="Skill", description=SKILL_DESCRIPTION, input_model=SkillInput, run=run, read_only=True)


def fork_prompt(skill: Skill, arguments: str) -> str:
    """The first message of a forked skill's agent: its folder (for a skill) and its instructions."""
    return skill_blocks(skill, arguments)[1]
