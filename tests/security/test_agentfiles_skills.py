"""Attack: skills are instructions handed to the model, so a project's skill must not expose private files: a
SKILL.md linked out of the project is skipped, and the Skill tool loads only catalogued skills, never a path."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.agent.skills import load_skills, skill_tool
from mcp_subagents.core.errors import ToolError
from mcp_subagents.tools import ToolContext

pytestmark = pytest.mark.anyio


def catalog_with_a_linked_skill(tmp_path: Path) -> tuple[Path, Path]:
    secret = tmp_path / "secret.md"
    secret.write_text("---\ndescription: harmless\n---\nSECRET-CONTENT\n", encoding="utf-8")
    project = tmp_path / "work"
    skill = project / ".claude" / "skills" / "innocent"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").symlink_to(secret)
    honest = project / ".claude" / "skills" / "honest"
    honest.mkdir()
    (honest / "SKILL.md").write_text("---\ndescription: fine\n---\nHONEST\n", encoding="utf-8")
    return project, secret


def test_a_project_skill_linked_outside_is_skipped(tmp_path: Path) -> None:
    project, _ = catalog_with_a_linked_skill(tmp_path)

    catalog = load_skills(project, claude_dir=None)

    assert list(catalog.skills) == ["honest"]


@pytest.mark.parametrize("name", ["../../secret.md", str(Path("/etc/passwd")), "innocent", "honest/../innocent"])
async def test_the_skill_tool_loads_only_catalogued_skills(tmp_path: Path, name: str) -> None:
    project, _ = catalog_with_a_linked_skill(tmp_path)
    tool = skill_tool(load_skills(project, claude_dir=None))
    ctx = ToolContext(cwd=project, allowed_roots=(project,), env={})

    with pytest.raises(ToolError, match="cannot be loaded: there is no such skill") as caught:
        await tool.run(ctx, tool.validate({"skill": name}))
    assert "SECRET-CONTENT" not in caught.value.message


def test_a_project_command_linked_outside_or_in_a_linked_folder_is_skipped(tmp_path: Path) -> None:
    """Commands are skills now: the same attack through `.claude/commands/`, a file link and a folder link."""
    project, secret = catalog_with_a_linked_skill(tmp_path)
    commands = project / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "innocent.md").symlink_to(secret)
    (commands / "ns").symlink_to(tmp_path, target_is_directory=True)  # ns:secret would be the private file
    (commands / "fine.md").write_text("---\ndescription: fine\n---\nFINE\n", encoding="utf-8")

    catalog = load_skills(project, claude_dir=None)

    assert sorted(catalog.skills) == ["fine", "honest"]
    assert all("SECRET-CONTENT" not in skill.body for skill in catalog.skills.values())
