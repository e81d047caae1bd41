"""The App view's answer buttons, refused to the model. The model of a host acts for the same principal as the view
that host shows, and it can know a waiting task's id and its question's id (the task's text and a 2026-era input
request name them). The attack: that model calls the app-only `TaskAnswer` itself to allow its own subagent's call,
with no token, with the token of another question, with another principal's token or with one it made up; or it
calls `TaskList` from a host without MCP Apps to read a token. Each is refused and the question stays open; another
principal cannot answer even with the owner's token; and no text or structured content of `Task`, `TaskOutput` or
`TaskList` carries a token. Over real HTTP, with two principals, in both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp.client.extension import advertise

from mcp_subagents.mcp.answer_tokens import ANSWER_TOKENS_META
from mcp_subagents.mcp.app_view import APP_MIME_TYPE, EXTENSION_ID
from mcp_subagents.models.base import ModelRequest, ModelResponse
from mcp_subagents.models.scripted import FunctionModel, text, tool_call
from mcp_subagents.permissions.asking import OpenQuestion
from mcp_subagents.runtime.service import Subagents

from ..support import MODES, text_of
from .http_harness import ALICE_TOKEN, BACKGROUND_TASK, BOB_TOKEN, http_settings, mcp_client, serving, token_file

pytestmark = pytest.mark.anyio

APPS = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]


def ask_then_finish(request: ModelRequest) -> ModelResponse:
    """Each task asks to run one command, then ends."""
    return tool_call("Bash", {"command": "make first"}) if len(request.messages) == 1 else text("done")


async def question_of(app: Subagents, task_id: str) -> OpenQuestion:
    record = app.tasks.live(task_id)
    assert record is not None
    with anyio.fail_after(15):
        return await app.tasks.root(record).resources.questions.wait_for_new()


def launched_id(launch_text: str) -> str:
    return launch_text.split("task_id: ")[1].split()[0]


@pytest.mark.parametrize("mode", MODES)
async def test_the_model_cannot_answer_for_the_person(tmp_path: Path, mode: str) -> None:
    tokens_file = token_file(tmp_path, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    settings = http_settings(tmp_path, "streamable-http", auth_token_file=tokens_file, ask_timeout=120)
    async with serving(settings, model=FunctionModel(ask_then_finish)) as served:
        app, seen = served.app, ""
        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode) as model:  # a host without MCP Apps
            launches = [text_of(await model.call_tool("Task", BACKGROUND_TASK)) for _ in range(2)]
            mine, other = (launched_id(launch) for launch in launches)
            asked, asked_too = await question_of(app, mine), await question_of(app, other)
            seen += "".join(launches) + text_of(await model.call_tool("TaskOutput", {"task_id": mine, "block": False}))
            plain_listing = await model.call_tool("TaskList", {})
        async with mcp_client(served.url, token=BOB_TOKEN, mode=mode, extensions=APPS) as bob:
            bobs = launched_id(text_of(await bob.call_tool("Task", BACKGROUND_TASK)))
            bobs_question = await question_of(app, bobs)
            bobs_tokens = (await bob.call_tool("TaskList", {})).meta or {}
        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode, extensions=APPS) as view:
            listing = await view.call_tool("TaskList", {})
        tokens = (listing.meta or {})[ANSWER_TOKENS_META]

        answer = {"task_id": mine, "question_id": asked.id, "choice": "allow"}
        attempts = {
            "no token": answer,
            "another question's token": {**answer, "token": tokens[asked_too.id]},
            "another principal's token": {**answer, "token": bobs_tokens[ANSWER_TOKENS_META][bobs_question.id]},
            "a made-up token": {**answer, "token": "A" * 43},
        }
        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode) as model:
            refused = {why: await model.call_tool("TaskAnswer", attempt) for why, attempt in attempts.items()}
            still_waiting = text_of(await model.call_tool("TaskOutput", {"task_id": mine, "block": False}))
        async with mcp_client(served.url, token=BOB_TOKEN, mode=mode, extensions=APPS) as bob:
            foreign = await bob.call_tool("TaskAnswer", {**answer, "token": tokens[asked.id]})
        board = app.tasks.root(app.tasks.get(mine, principal="token:alice")).resources.questions
        open_after_attacks = board.get(asked.id) is not None

        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode, extensions=APPS) as view:
            taken = await view.call_tool("TaskAnswer", {**answer, "token": tokens[asked.id]})
        seen += still_waiting

    assert all(result.is_error for result in refused.values())
    assert "missing required parameter 'token'" in text_of(refused["no token"])
    for why in ("another question's token", "another principal's token", "a made-up token"):
        assert f"'token' does not match question {asked.id}" in text_of(refused[why]), why
        assert "the question is still open" in text_of(refused[why])
    assert foreign.is_error and text_of(foreign) == f"No task found with ID: {mine}"
    assert open_after_attacks and "<status>waiting</status>" in still_waiting
    assert not taken.is_error and text_of(taken).startswith("Allowed once: Subagent 'general-purpose' asks to run Bash")

    assert plain_listing.meta is None or ANSWER_TOKENS_META not in plain_listing.meta  # no token without the view
    assert asked.id in text_of(listing) or asked.id in json.dumps(listing.structured_content)
    readable = seen + text_of(plain_listing) + text_of(listing) + json.dumps(listing.structured_content)
    readable += json.dumps(plain_listing.structured_content)
    assert not [token for token in tokens.values() if token in readable]
