"""Asking and roots over real transports (a stdio subprocess, Streamable HTTP), driven by the SDK client as a host
drives it, in both eras."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from pydantic import FileUrl

from tests.fakes.fake_llm import FakeLLM, text, tool_use, turn
from tests.support import MODES, http_server, server_environment, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "change things", "prompt": "Do it.", "subagent_type": "general-purpose"}


def environment(tmp_path: Path, fake: FakeLLM) -> dict[str, str]:
    # The sandbox is off: a sandboxed Bash command would run without a question.
    return server_environment(tmp_path, fake=fake, sandbox="off")


class Host:
    """A host with elicitation and roots: answers questions from a list and shares one project folder."""

    def __init__(self, project: Path, *answers: bool) -> None:
        self.project = project
        self.answers = list(answers)
        self.questions: list[str] = []
        self.roots_asked = 0

    async def elicit(self, context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.questions.append(params.message)
        if self.answers.pop(0):
            return types.ElicitResult(action="accept", content={"allow": True})
        return types.ElicitResult(action="decline")

    async def roots(self, context: object) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(f"file://{self.project}"))])


@pytest.mark.parametrize("mode", MODES)
async def test_a_stdio_host_is_asked_and_its_roots_are_the_project(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    host = Host(project, True, False, True)
    fake.push(
        turn(tool_use("Write", {"file_path": "allowed.txt", "content": "yes"})),
        turn(text("wrote it")),
        turn(tool_use("Bash", {"command": "touch declined.txt"})),
        turn(text("could not")),
        turn(tool_use("Write", {"file_path": "again.txt", "content": "yes"})),
        turn(text("wrote again")),
    )
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_subagents", "serve"], env=environment(tmp_path, fake)
    )
    with anyio.fail_after(60):
        async with Client(
            params,
            mode=mode,
            elicitation_callback=host.elicit,
            list_roots_callback=host.roots,
        ) as client:
            allowed = text_of(await client.call_tool("Task", TASK))
            declined = text_of(await client.call_tool("Task", TASK))
            again = text_of(await client.call_tool("Task", TASK))
    assert "wrote it" in allowed and (project / "allowed.txt").read_text(encoding="utf-8") == "yes"
    assert "could not" in declined and 'touch declined.txt"}: The person denied this call' in declined
    assert not (project / "declined.txt").exists()
    assert "wrote again" in again and (project / "again.txt").exists()
    assert len(host.questions) == 3 and "Command:\ntouch declined.txt" in host.questions[1]
    # 2026: asked once per connection, in a round trip of its first Task call; 2025: on every Task call.
    assert host.roots_asked == (1 if mode == "auto" else 3)


@pytest.mark.parametrize("mode", MODES)
async def test_a_streamable_http_host_is_asked_too(tmp_path: Path, fake: FakeLLM, mode: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    host = Host(project, True)
    fake.push(turn(tool_use("Write", {"file_path": "over-http.txt", "content": "yes"})), turn(text("wrote it")))
    # Over HTTP, client roots count only inside the configured area (issue 10): name the project's parent there.
    environ = {**environment(tmp_path, fake), "MCP_SUBAGENTS_ALLOWED_ROOT": str(tmp_path)}
    async with http_server(tmp_path, "streamable-http", environ=environ) as url:
        with anyio.fail_after(60):
            async with Client(
                url, mode=mode, elicitation_callback=host.elicit, list_roots_callback=host.roots
            ) as client:
                result = text_of(await client.call_tool("Task", TASK))
    assert "wrote it" in result and (project / "over-http.txt").read_text(encoding="utf-8") == "yes"
    assert len(host.questions) == 1 and host.roots_asked == 1
