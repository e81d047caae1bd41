"""The host's MCP roots join the subagents' allowed area, and pick the working directory when --cwd is not set."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mcp_types as types
import pytest
from pydantic import FileUrl

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import connected, last_results, make_settings, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "read", "prompt": "Read it.", "subagent_type": "general-purpose"}


def roots_callback(*folders: Path):
    async def list_roots(_context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(f"file://{folder}")) for folder in folders])

    return list_roots


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    results = last_results(request)
    return text(" | ".join(result.content for result in results))


async def test_files_in_a_host_root_are_readable_and_outside_ones_are_not(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "doc.txt").write_text("shared text\n", encoding="utf-8")
    private = tmp_path / "private.txt"
    private.write_text("private text\n", encoding="utf-8")
    model = ScriptedModel(
        [
            tool_call("Read", {"file_path": str(shared / "doc.txt")}),
            echo_tool_results,
            tool_call("Read", {"file_path": str(private)}),
            echo_tool_results,
        ]
    )
    async with connected(
        make_settings(tmp_path), mode="legacy", model=model, list_roots_callback=roots_callback(shared)
    ) as client:
        allowed = text_of(await client.call_tool("Task", TASK))
        refused = text_of(await client.call_tool("Task", TASK))
    assert "shared text" in allowed
    assert "private text" not in refused and "outside" in refused


async def test_without_cwd_the_first_root_is_the_working_directory(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    model = ScriptedModel([lambda request: text(request.system)])
    settings = replace(make_settings(tmp_path), cwd=None)
    async with connected(settings, mode="legacy", model=model, list_roots_callback=roots_callback(project)) as client:
        result = text_of(await client.call_tool("Task", TASK))
    assert f"Working directory: {project.resolve()}" in result


async def test_a_host_without_roots_changes_nothing(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    model = ScriptedModel([lambda request: text(request.system)])
    async with connected(settings, mode="auto", model=model) as client:
        result = text_of(await client.call_tool("Task", TASK))
    assert f"Working directory: {settings.cwd}" in result


async def test_2026_the_first_task_asks_for_roots_before_it_launches(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "doc.txt").write_text("shared text\n", encoding="utf-8")
    settings = replace(make_settings(tmp_path), cwd=None)
    model = ScriptedModel([tool_call("Read", {"file_path": "doc.txt"}), echo_tool_results])
    async with connected(settings, mode="auto", model=model, list_roots_callback=roots_callback(shared)) as client:
        first = await client.session.call_tool("Task", TASK, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)  # roots first: no task exists yet
        assert first.input_requests is not None and list(first.input_requests) == ["roots"]
        assert isinstance(first.input_requests["roots"], types.ListRootsRequest)
        assert model.requests == [] and not any((settings.state_dir / "tasks").glob("*.jsonl"))
        result = await client.call_tool("Task", TASK)  # the SDK client answers the round trip itself
    assert "shared text" in text_of(result)  # the first root became the working directory
    assert f"Working directory: {shared.resolve()}" in model.requests[0].system


async def test_2026_roots_outside_the_allowed_area_stay_out(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    private = tmp_path / "private.txt"
    private.write_text("private text\n", encoding="utf-8")
    model = ScriptedModel([tool_call("Read", {"file_path": str(private)}), echo_tool_results])
    async with connected(
        make_settings(tmp_path), mode="auto", model=model, list_roots_callback=roots_callback(shared)
    ) as client:
        refused = text_of(await client.call_tool("Task", TASK))
    assert "private text" not in refused and "outside" in refused
