"""Attacks on isolation: an agent in its own worktree must not reach back into the person's checkout."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.agent.test_worktrees import isolated_agent, repository, task
from tests.mcp.test_roots import roots_callback
from tests.support import connected, last_results, text_of

pytestmark = pytest.mark.anyio


def quote_results(request: ModelRequest) -> ModelResponse:
    results = last_results(request)
    return text(" || ".join(f"{'ERR' if r.is_error else 'OK'}: {r.content}" for r in results))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_an_isolated_agent_cannot_write_into_the_persons_checkout(tmp_path: Path, mode: str) -> None:
    settings = repository(tmp_path)
    assert settings.cwd is not None
    isolated_agent(settings)
    main_notes = settings.cwd / "notes.txt"
    model = ScriptedModel(
        [
            tool_call("Write", {"file_path": str(main_notes), "content": "overwritten"}),
            tool_call("Bash", {"command": f"echo overwritten > {main_notes}"}),
            tool_call("Write", {"file_path": "inside.txt", "content": "fine"}),
            quote_results,
        ]
    )
    # The host shares the checkout as a root: without isolation, acceptEdits would let the agent edit it.
    shared = roots_callback(settings.cwd)
    async with connected(settings, mode=mode, model=model, list_roots_callback=shared) as client:
        body = text_of(await client.call_tool("Task", task("isolated")))
    assert main_notes.read_text(encoding="utf-8") == "one\n"
    assert "[Permission denied for 2 tool call(s):" in body
    assert "OK: File created" in body  # inside the worktree, where the agent works, writes go through
