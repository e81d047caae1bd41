"""Attacks on a team's replicas: one person's task stays theirs on every replica (another's TaskOutput, TaskStop and
TaskList on another replica see nothing of it), task ids that are not ids reach neither the database nor the disk,
and notifications that do not fit what replicas send are ignored while the replica goes on serving."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from tests.fakes.fake_llm import FakeLLM
from tests.security.http_harness import ALICE_TOKEN, BOB_TOKEN, mcp_client, token_file
from tests.support import matched, text_of
from tests.team.replicas import Signal, replica
from tests.team.test_replicas import BACKGROUND, BYPASS, output, run_once_then_answer

pytestmark = pytest.mark.anyio
NEVER = "0123456789abcdef0123456789abcdef"


async def test_a_person_s_task_is_theirs_alone_on_every_replica(tmp_path: Path, database_url: str) -> None:
    marker, started = tmp_path / "ran", Signal(tmp_path / "started")
    (tmp_path / "keys").mkdir()
    tokens = {"MCP_SUBAGENTS_AUTH_TOKEN_FILE": str(token_file(tmp_path / "keys", alice=ALICE_TOKEN, bob=BOB_TOKEN))}
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"{started.command()}; sleep 300")
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **BYPASS, **tokens) as a,
            replica(tmp_path / "b", project, database_url, fake, **BYPASS, **tokens) as b,
        ):
            async with mcp_client(a.url, token=ALICE_TOKEN) as alice:
                task_id = matched(r"task_id: (\w+)", text_of(await alice.call_tool("Task", BACKGROUND)))
            await started.wait()
            async with mcp_client(b.url, token=BOB_TOKEN) as bob:
                peek = await bob.call_tool("TaskOutput", {"task_id": task_id, "block": False})
                unknown = await bob.call_tool("TaskOutput", {"task_id": NEVER, "block": False})
                stop = await bob.call_tool("TaskStop", {"task_id": task_id})
                listed = await bob.call_tool("TaskList", {})
                strange = [
                    await bob.call_tool("TaskOutput", {"task_id": weird, "block": False})
                    for weird in ("../../etc/passwd", "x' OR '1'='1", task_id + "%", "")
                ]
            async with mcp_client(b.url, token=ALICE_TOKEN) as alice:
                mine = await alice.call_tool("TaskList", {})
                stopped = await alice.call_tool("TaskStop", {"task_id": task_id})
    assert peek.is_error and stop.is_error, (text_of(peek), text_of(stop))
    # Word for word what a task that never existed gets: nothing says the id is someone's.
    assert text_of(peek).replace(task_id, "ID") == text_of(unknown).replace(NEVER, "ID")
    assert task_id not in text_of(listed) and task_id not in json.dumps(listed.structured_content)
    assert all(result.is_error for result in strange), [text_of(result) for result in strange]
    assert task_id in text_of(mine)
    assert not stopped.is_error, text_of(stopped)


async def test_notifications_that_are_not_the_team_s_are_ignored(tmp_path: Path, database_url: str) -> None:
    marker = tmp_path / "ran"
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, "echo still-serving")
        project = tmp_path / "project"
        async with replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as connection:
                for payload in (
                    "not json",
                    "[1, 2]",
                    json.dumps({"stop": ["a", "list"]}),
                    json.dumps({"answer": {"task_id": 1, "question_id": None}}),
                    json.dumps(
                        {
                            "answer": {
                                "task_id": "x" * 5000,
                                "question_id": "q",
                                "choice": "allow",
                                "by": "me",
                                "via": "v",
                            }
                        }
                    ),
                    json.dumps(
                        {"answer": {"task_id": "t", "question_id": "q", "choice": "root", "by": "me", "via": "v"}}
                    ),
                    json.dumps({"ended": {"nested": True}, "asked": 7}),
                ):
                    await connection.execute("SELECT pg_notify('mcp_subagents', %s)", (payload,))
            async with mcp_client(a.url) as client:
                launched = await client.call_tool("Task", BACKGROUND)
            answer = await output(a.url, matched(r"task_id: (\w+)", text_of(launched)))
            assert a.process.returncode is None
    assert "still-serving" in answer, answer
