"""Each principal sees only its own tasks. Before, every client could read, resume (getting the whole
conversation) or stop every other client's tasks."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_subagents.models.scripted import ScriptedModel, text

from ..support import MODES, text_of
from .http_harness import (
    ALICE_TOKEN,
    BACKGROUND_TASK,
    BOB_TOKEN,
    TRANSPORTS,
    http_settings,
    mcp_client,
    raw_request,
    serving,
    token_file,
)

pytestmark = pytest.mark.anyio

SECRET_ANSWER = "Alice's private finding: the launch code is 0000."


def launched_id(launch_text: str) -> str:
    return launch_text.split("task_id: ")[1].split()[0]


async def answers_for(client: Client, task_id: str) -> list[tuple[str, bool]]:
    """What a client gets for an id from TaskOutput, TaskStop and Task resume: (text, is_error) each."""
    calls = [
        ("TaskOutput", {"task_id": task_id, "block": False}),
        ("TaskStop", {"task_id": task_id}),
        ("Task", {"description": "peek", "prompt": "Go on.", "subagent_type": "general-purpose", "resume": task_id}),
    ]
    answers: list[tuple[str, bool]] = []
    for name, arguments in calls:
        result = await client.call_tool(name, arguments)
        answers.append((text_of(result), bool(result.is_error)))
    return answers


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_another_principals_task_is_answered_exactly_like_a_missing_one(
    tmp_path: Path, transport: str, mode: str
) -> None:
    tokens = token_file(tmp_path, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    settings = http_settings(tmp_path, transport, auth_token_file=tokens)
    model = ScriptedModel([text(SECRET_ANSWER)])
    async with serving(settings, model=model) as served:
        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode) as alice:
            task_id = launched_id(text_of(await alice.call_tool("Task", BACKGROUND_TASK)))
            own = text_of(await alice.call_tool("TaskOutput", {"task_id": task_id}))
        never_existed = secrets.token_hex(16)
        async with mcp_client(served.url, token=BOB_TOKEN, mode=mode) as bob:
            foreign = await answers_for(bob, task_id)
            missing = await answers_for(bob, never_existed)
        async with mcp_client(served.url, token=ALICE_TOKEN, mode=mode) as alice:
            still_hers = text_of(await alice.call_tool("TaskOutput", {"task_id": task_id}))
    assert SECRET_ANSWER in own and SECRET_ANSWER in still_hers
    assert foreign[0] == (f"No task found with ID: {task_id}", True)
    for (foreign_text, foreign_error), (missing_text, missing_error) in zip(foreign, missing, strict=True):
        assert foreign_text.replace(task_id, "ID") == missing_text.replace(never_existed, "ID")
        assert foreign_error == missing_error
    assert len(model.requests) == 1  # bob's resume never reached the model


async def test_tasks_of_a_previous_server_keep_their_owner(tmp_path: Path) -> None:
    tokens = token_file(tmp_path, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    settings = http_settings(tmp_path, "streamable-http", auth_token_file=tokens)
    async with serving(settings, model=ScriptedModel([text(SECRET_ANSWER)])) as served:
        async with mcp_client(served.url, token=ALICE_TOKEN) as alice:
            task_id = launched_id(text_of(await alice.call_tool("Task", BACKGROUND_TASK)))
            await alice.call_tool("TaskOutput", {"task_id": task_id})
    async with serving(settings, model=ScriptedModel([text("Resumed for Alice.")])) as served:
        async with mcp_client(served.url, token=BOB_TOKEN) as bob:
            foreign = await answers_for(bob, task_id)
        async with mcp_client(served.url, token=ALICE_TOKEN) as alice:
            own = text_of(await alice.call_tool("TaskOutput", {"task_id": task_id}))
            resumed = text_of(
                await alice.call_tool("Task", {**BACKGROUND_TASK, "run_in_background": False, "resume": task_id})
            )
    assert [answer for answer, _ in foreign] == [f"No task found with ID: {task_id}"] * 3
    assert SECRET_ANSWER in own
    assert "Resumed for Alice." in resumed


async def test_a_tokenless_loopback_server_has_one_owner_the_local_user(tmp_path: Path) -> None:
    settings = http_settings(tmp_path, "streamable-http")
    async with serving(settings, model=ScriptedModel([text("Done.")])) as served:
        async with mcp_client(served.url) as first:
            task_id = launched_id(text_of(await first.call_tool("Task", BACKGROUND_TASK)))
        async with mcp_client(served.url, mode="legacy") as second:
            seen = text_of(await second.call_tool("TaskOutput", {"task_id": task_id}))
    assert "Done." in seen


async def test_a_session_cannot_be_used_with_another_principals_token(tmp_path: Path) -> None:
    tokens = token_file(tmp_path, alice=ALICE_TOKEN, bob=BOB_TOKEN)
    settings = http_settings(tmp_path, "streamable-http", auth_token_file=tokens)
    async with serving(settings) as served:
        opened = await raw_request(served.url, headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
        session = opened.headers["mcp-session-id"]
        listing = b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
        common = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        with anyio.fail_after(10):
            hijack = await raw_request(
                served.url, headers={**common, "Authorization": f"Bearer {BOB_TOKEN}"}, body=listing
            )
            owner = await raw_request(
                served.url, headers={**common, "Authorization": f"Bearer {ALICE_TOKEN}"}, body=listing
            )
    assert opened.status_code == 200
    assert hijack.status_code == 404
    assert owner.status_code == 200 and "TaskOutput" in owner.text
