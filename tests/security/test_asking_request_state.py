"""Attacks on the 2026-era round trip: the `requestState` a host hands back names a task and its open permission
questions, so a forged, altered, replayed, re-targeted or foreign state must never answer a question.

The first test speaks raw JSON-RPC to a real stdio server, performing the whole round trip by hand as Claude Code
does (roots first, then one permission form per round), and tries every bad state along the way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.fakes.fake_llm import FakeLLM, tool_use, turn
from tests.fakes.fake_llm import text as fake_text
from tests.stdio_modern import ModernStdioServer
from tests.support import make_settings, running_app, server_environment, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "change things", "prompt": "Do it.", "subagent_type": "general-purpose"}
INVALID_STATE = -32602


def only_request(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    assert result["resultType"] == "input_required", result
    [(key, request)] = result["inputRequests"].items()  # one question per round
    return key, request


def tampered(state: str) -> str:
    middle = len(state) // 2
    return state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1 :]


async def test_the_round_trip_by_hand_and_every_bad_state_on_the_way(tmp_path: Path, fake: FakeLLM) -> None:
    project = tmp_path / "project"
    project.mkdir()
    fake.push(
        turn(tool_use("Write", {"file_path": "a.txt", "content": "A"})),
        turn(tool_use("Bash", {"command": "touch b.txt"})),
        turn(fake_text("done")),
    )
    environ = server_environment(tmp_path, fake=fake, sandbox="off", MCP_SUBAGENTS_ASK_TIMEOUT="60")
    with anyio.fail_after(60):
        server = await ModernStdioServer.start(environ)
        try:
            # Round 1: the host's roots, before any task exists.
            first = (await server.call_tool("Task", TASK, progress_token="p1"))["result"]
            key, request = only_request(first)
            assert (key, request["method"]) == ("roots", "roots/list")
            roots = {"roots": {"roots": [{"uri": f"file://{project}"}]}}
            second = await server.call_tool("Task", TASK, input_responses=roots, request_state=first["requestState"])
            write_id, write_form = only_request(second["result"])
            assert write_form["method"] == "elicitation/create" and write_form["params"]["mode"] == "form"
            assert "asks to run Write" in write_form["params"]["message"]
            assert "File:\na.txt" in write_form["params"]["message"]
            assert write_form["params"]["requestedSchema"]["properties"]["allow"]["type"] == "boolean"
            write_state = second["result"]["requestState"]

            # Bad states for the open Write question: none may answer it.
            allow = {write_id: {"action": "accept", "content": {"allow": True}}}
            attacks = [
                ("v1.forged", TASK),
                (tampered(write_state), TASK),
                ('{"v":1,"task":"x","questions":["' + write_id + '"]}', TASK),  # plaintext, unsealed
                (write_state, {**TASK, "prompt": "Do something else."}),  # bound to the call's arguments
            ]
            for state, arguments in attacks:
                refused = await server.call_tool("Task", arguments, input_responses=allow, request_state=state)
                assert refused["error"]["code"] == INVALID_STATE, (state, refused)
            assert not (project / "a.txt").exists()

            # Round 3: the person allows the Write; the task goes on and asks the next question in a new round.
            third = await server.call_tool("Task", TASK, input_responses=allow, request_state=write_state)
            bash_id, bash_form = only_request(third["result"])
            assert bash_id != write_id and "Command:\ntouch b.txt" in bash_form["params"]["message"]
            assert (project / "a.txt").read_text(encoding="utf-8") == "A"

            # Replaying the used Write state (say, to slip an "allow" in again) finds its question closed: the allow
            # answers nothing, and the call goes back to waiting on the task, which still asks about the Bash command.
            replay = await server.call_tool("Task", TASK, input_responses=allow, request_state=write_state)
            replayed_id, _ = only_request(replay["result"])
            assert replayed_id == bash_id and not (project / "b.txt").exists()
            # An answer keyed to the Write question does not answer the Bash question either.
            wrong_key = await server.call_tool(
                "Task", TASK, input_responses=allow, request_state=third["result"]["requestState"]
            )
            still_id, _ = only_request(wrong_key["result"])
            assert still_id == bash_id and not (project / "b.txt").exists()

            # Round 5: the person declines; the task finishes and the result says so.
            decline = {bash_id: {"action": "decline"}}
            final = await server.call_tool(
                "Task",
                TASK,
                input_responses=decline,
                request_state=wrong_key["result"]["requestState"],
                progress_token="p5",
            )
        finally:
            await server.close()
    body = final["result"]["content"][0]["text"]
    assert final["result"].get("isError") is not True and body.startswith('<task_result agent="general-purpose">done')
    assert 'touch b.txt"}: The person denied this call' in body and not (project / "b.txt").exists()
    # Turns, tool calls and questions so far: it keeps rising across rounds.
    assert [p["progress"] for p in server.progress if p["progressToken"] == "p5"] == [7]


async def never_asked(context: object, params: types.ElicitRequestParams) -> types.ElicitResult:
    raise AssertionError("a 2026-era host is asked through input requests, never through elicitation/create")


async def test_a_state_from_another_server_process_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel([tool_call("Bash", {"command": "make"}), text("done")])
    async with running_app(make_settings(tmp_path), model=model) as app:
        async with (
            Client(build_server(app), elicitation_callback=never_asked) as client,
            Client(build_server(app)) as other_server,  # same tasks, another process's key
        ):
            asked = await client.session.call_tool("Task", TASK, allow_input_required=True)
            assert isinstance(asked, types.InputRequiredResult) and asked.input_requests is not None
            [question_id] = asked.input_requests
            answer: types.InputResponses = {question_id: types.ElicitResult(action="accept", content={"allow": True})}
            with pytest.raises(MCPError) as refused:
                await other_server.session.call_tool(
                    "Task", TASK, input_responses=answer, request_state=asked.request_state, allow_input_required=True
                )
            assert refused.value.error.code == INVALID_STATE
            decline: types.InputResponses = {question_id: types.ElicitResult(action="decline")}
            result = await client.session.call_tool(
                "Task", TASK, input_responses=decline, request_state=asked.request_state
            )
    assert "The person denied this call" in text_of(result)
