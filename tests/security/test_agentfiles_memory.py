"""Attack: the agent's memory folder must stay where it belongs. An agent name cannot steer it elsewhere, and a
symlinked memory folder or MEMORY.md in a project cannot expose or overwrite files outside the working directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.agent.memory import memory_allow_rules, prepare_memory
from mcp_subagents.definitions import AgentDefinition
from mcp_subagents.definitions.model import MemoryScope
from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.support import connected, make_settings, provider_environment, write_agent

pytestmark = pytest.mark.anyio


def agent(name: str, scope: MemoryScope = "project") -> AgentDefinition:
    return AgentDefinition(name=name, description="d", prompt="p", memory=scope, source="project")


def test_an_agent_name_cannot_move_the_memory_folder(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    for name in ("../../../escape", "a/../../x", "..", "plugin:agent"):
        memory = prepare_memory(agent(name), cwd=cwd, claude_dir=tmp_path / "home")
        assert memory is not None and memory.writable
        assert memory.directory.parent == cwd / ".claude" / "agent-memory"
        assert ".." not in memory.directory.name and "/" not in memory.directory.name
    assert not (tmp_path / "escape").exists()


def test_a_memory_folder_linked_out_of_the_project_is_neither_used_nor_granted(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    outside = tmp_path / "outside"
    (cwd / ".claude").mkdir(parents=True)
    outside.mkdir()
    (outside / "reviewer").mkdir()
    (outside / "reviewer" / "MEMORY.md").write_text("OUTSIDE-CONTENT\n", encoding="utf-8")
    (cwd / ".claude" / "agent-memory").symlink_to(outside)

    memory = prepare_memory(agent("reviewer"), cwd=cwd, claude_dir=None)

    assert memory is not None and not memory.writable
    assert "OUTSIDE-CONTENT" not in memory.prompt and "read-only" in memory.prompt
    assert memory_allow_rules(memory) == ()


def test_a_symlinked_memory_index_in_a_project_is_not_read(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    folder = cwd / ".claude" / "agent-memory" / "reviewer"
    folder.mkdir(parents=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN\n", encoding="utf-8")
    (folder / "MEMORY.md").symlink_to(secret)

    memory = prepare_memory(agent("reviewer"), cwd=cwd, claude_dir=None)

    assert memory is not None and "SECRET-TOKEN" not in memory.prompt


async def test_the_memory_grant_covers_only_the_agents_own_folder(tmp_path: Path, fake: FakeLLM) -> None:
    settings = make_settings(tmp_path)
    assert settings.cwd is not None and settings.claude_dir is not None
    write_agent(settings.cwd / ".claude" / "agents", "memgrep", extra="tools: Grep\nmemory: user\n")
    sibling = settings.claude_dir / "agent-memory" / "memgrep-other" / "x.md"
    parent = settings.claude_dir / "agent-memory" / "planted.md"
    escape = settings.claude_dir / "agent-memory" / "memgrep" / ".." / "dotdot.md"
    fake.push(
        turn(
            tool_use("Write", {"file_path": str(sibling), "content": "no"}),
            tool_use("Write", {"file_path": str(parent), "content": "no"}),
            tool_use("Write", {"file_path": str(escape), "content": "no"}),
        ),
        turn(text("ok")),
    )
    environ = provider_environment(fake, "sk-ant-mem-0123456789")

    async with connected(settings, environ=environ) as client:
        await client.call_tool("Task", {"description": "d", "prompt": "p", "subagent_type": "memgrep"})

    results = fake.requests[1]["body"]["messages"][-1]["content"]
    assert [r["is_error"] for r in results] == [True, True, True]
    assert not sibling.exists() and not parent.exists() and not (parent.parent / "dotdot.md").exists()
