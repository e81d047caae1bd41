"""Roots over HTTP do not widen the allowed area. Before, a remote client that answered `roots/list` with
`file:///` opened the whole disk to the subagents' file tools."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mcp_types as types
import pytest
from pydantic import FileUrl

from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import last_results

from ..support import text_of
from .http_harness import ALICE_TOKEN, TRANSPORTS, http_settings, mcp_client, serving, token_file

pytestmark = pytest.mark.anyio

TASK = {"description": "read", "prompt": "Read it.", "subagent_type": "general-purpose"}


def offering(*uris: str):
    async def list_roots(_context: object) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(uri)) for uri in uris])

    return list_roots


def echo_tool_results(request: ModelRequest) -> ModelResponse:
    results = last_results(request)
    return text(" | ".join(result.content for result in results))


async def read_through_roots(tmp_path: Path, transport: str, roots: list[str], **overrides: object) -> str:
    outside = tmp_path / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.txt").write_text("the secret outside the project\n", encoding="utf-8")
    model = ScriptedModel([tool_call("Read", {"file_path": str(outside / "secret.txt")}), echo_tool_results])
    tokens = token_file(tmp_path, alice=ALICE_TOKEN)
    settings = http_settings(tmp_path, transport, auth_token_file=tokens, **overrides)
    async with (
        serving(settings, model=model) as served,
        mcp_client(served.url, token=ALICE_TOKEN, mode="legacy", list_roots_callback=offering(*roots)) as client,
    ):
        return text_of(await client.call_tool("Task", TASK))


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_client_root_of_the_whole_disk_is_ignored(tmp_path: Path, transport: str) -> None:
    answer = await read_through_roots(tmp_path, transport, ["file:///"])
    assert "the secret outside the project" not in answer and "outside" in answer


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_root_inside_an_allowed_root_is_used(tmp_path: Path, transport: str) -> None:
    answer = await read_through_roots(
        tmp_path, transport, [f"file://{tmp_path}/outside", "file:///"], allowed_roots=(tmp_path / "outside",)
    )
    assert "the secret outside the project" in answer


async def test_trust_client_roots_restores_stdio_behaviour(tmp_path: Path) -> None:
    answer = await read_through_roots(tmp_path, "streamable-http", ["file:///"], trust_client_roots=True)
    assert "the secret outside the project" in answer


@pytest.mark.parametrize("inside", [True, False])
async def test_without_cwd_only_a_root_inside_the_allowed_area_becomes_the_working_directory(
    tmp_path: Path, inside: bool
) -> None:
    project = tmp_path / "projects" / "web"
    project.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    offered = project if inside else elsewhere
    model = ScriptedModel([lambda request: text(request.system)])
    settings = replace(
        http_settings(tmp_path, "sse", auth_token_file=token_file(tmp_path, alice=ALICE_TOKEN)),
        cwd=None,
        allowed_roots=(tmp_path / "projects",),
    )
    async with (
        serving(settings, model=model) as served,
        mcp_client(
            served.url, token=ALICE_TOKEN, mode="legacy", list_roots_callback=offering(f"file://{offered}")
        ) as c,
    ):
        answer = text_of(await c.call_tool("Task", TASK))
    assert (f"Working directory: {offered.resolve()}\n" in answer) == inside
