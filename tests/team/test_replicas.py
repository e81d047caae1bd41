"""A team's server on several replicas over one Postgres: any replica serves any task, and a replica killed with
`kill -9` mid-task has its task carried on by another, without running a recorded tool call again."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.fakes.fake_llm import FakeLLM, Step, text, tool_use, turn
from tests.mcp.test_asking import Host
from tests.processes import wait_until_gone
from tests.security.http_harness import mcp_client
from tests.support import matched, server_environment, text_of
from tests.team.replicas import Signal, replica

pytestmark = pytest.mark.anyio


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results the request's last message carries."""
    content: Any = body["messages"][-1]["content"]
    if not isinstance(content, list):
        return []
    blocks = cast("list[dict[str, Any]]", content)
    return [str(block.get("content")) for block in blocks if block.get("type") == "tool_result"]


def run_once_then_answer(marker: Path, command: str) -> Any:
    """The model calls Bash once (which notes that it ran in `marker`, then `command`), then answers with what the
    tool said."""

    def step(body: dict[str, Any]) -> Step:
        results = tool_results(body)
        if results:
            return turn(text(f"finished; the tool said: {results[-1]}"))
        return turn(tool_use("Bash", {"command": f"echo ran >> {marker}; {command}", "description": "work"}))

    return step


BYPASS = {"MCP_SUBAGENTS_PERMISSION_MODE": "bypassPermissions"}
BACKGROUND = {"description": "work", "prompt": "Do the work", "run_in_background": True}


async def launched(url: str) -> str:
    async with mcp_client(url) as client:
        result = await client.call_tool("Task", BACKGROUND)
    assert not result.is_error, text_of(result)
    return matched(r"task_id: (\w+)", text_of(result))


@asynccontextmanager
async def asking_host(url: str, host: Any) -> AsyncGenerator[Client]:
    """A 2025-era client of the replica at `url` that shows questions to `host` (an elicitation callback)."""
    async with (
        create_mcp_http_client() as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy", elicitation_callback=host) as client,
    ):
        yield client


async def output(url: str, task_id: str, timeout_s: float = 90) -> str:
    """TaskOutput, waiting up to `timeout_s` for the task to end."""
    with anyio.fail_after(timeout_s + 30):
        async with create_mcp_http_client() as http, Client(streamable_http_client(url, http_client=http)) as client:
            result = await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": timeout_s * 1000})
    return text_of(result)


async def test_a_task_launched_on_one_replica_is_read_on_another(tmp_path: Path, database_url: str) -> None:
    marker = tmp_path / "ran"
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, "echo hello-from-bash")
        project = tmp_path / "project"
        async with (
            replica(
                tmp_path / "a", project, database_url, fake, MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions"
            ) as a,
            replica(
                tmp_path / "b", project, database_url, fake, MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions"
            ) as b,
        ):
            task_id = await launched(a.url)
            answer = await output(b.url, task_id)
    assert "hello-from-bash" in answer, answer
    assert "<status>completed</status>" in answer or "completed" in answer, answer
    assert marker.read_text() == "ran\n"


async def test_a_killed_replica_s_task_is_carried_on_by_another_without_running_its_tool_again(
    tmp_path: Path, database_url: str
) -> None:
    marker, started = tmp_path / "ran", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"{started.command()}; sleep 300")
        project = tmp_path / "project"
        async with replica(tmp_path / "b", project, database_url, fake, **BYPASS) as b:
            async with replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a:
                task_id = await launched(a.url)
                await started.wait()  # the tool runs on replica a
                a.kill()
            answer = await output(b.url, task_id)
            assert b.seen(f"carrying on task {task_id}"), b.log.text()
    assert "interrupted before this tool call finished" in answer, answer
    assert marker.read_text() == "ran\n"  # the tool call whose result was never recorded did not run again


async def test_a_stop_on_another_replica_ends_the_task_and_its_processes(tmp_path: Path, database_url: str) -> None:
    marker, pid_file, started = tmp_path / "ran", tmp_path / "pid", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"echo $$ > {pid_file}; {started.command()}; sleep 300")
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a,
            replica(tmp_path / "b", project, database_url, fake, **BYPASS) as b,
        ):
            task_id = await launched(a.url)
            await started.wait()
            shell = int(pid_file.read_text())
            async with mcp_client(b.url) as client:
                stopped = await client.call_tool("TaskStop", {"task_id": task_id})
            await wait_until_gone(shell)  # the command's processes are killed on replica a
            answer = await output(b.url, task_id)
    assert not stopped.is_error, text_of(stopped)
    assert "stopped" in text_of(stopped).lower(), text_of(stopped)
    assert "stopped" in answer, answer


def tasks_command(home: Path, database_url: str, *words: str) -> subprocess.CompletedProcess[str]:
    """`mcp-subagents tasks ...` on a machine of its own (its own home and state directory), on the team's database."""
    environ = server_environment(home) | {"MCP_SUBAGENTS_DATABASE_URL": database_url}
    command = [sys.executable, "-m", "mcp_subagents", "tasks", *words]
    return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=60, check=False)


async def test_the_tasks_command_lists_follows_and_stops_a_team_s_tasks(tmp_path: Path, database_url: str) -> None:
    marker, started = tmp_path / "ran", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        project = tmp_path / "project"
        async with replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a:
            fake.default = run_once_then_answer(marker, "echo first-task")
            first = await launched(a.url)
            assert "first-task" in await output(a.url, first)
            fake.default = run_once_then_answer(marker, f"{started.command()}; sleep 300")
            second = await launched(a.url)
            await started.wait()
            listing = await anyio.to_thread.run_sync(tasks_command, tmp_path / "cli", database_url, "list")
            shown = await anyio.to_thread.run_sync(tasks_command, tmp_path / "cli", database_url, "show", first)
            tail = await anyio.to_thread.run_sync(tasks_command, tmp_path / "cli", database_url, "tail", first)
            stop = await anyio.to_thread.run_sync(tasks_command, tmp_path / "cli", database_url, "stop", second)
            stopped = await output(a.url, second)
    assert listing.returncode == 0, listing.stderr
    rows = {line.split()[0]: line for line in listing.stdout.splitlines()[1:]}
    assert "completed" in rows[first] and "running" in rows[second], listing.stdout
    assert shown.returncode == 0 and "completed" in shown.stdout, shown.stdout + shown.stderr
    assert tail.returncode == 0 and "first-task" in tail.stdout, tail.stdout + tail.stderr
    assert stop.returncode == 0 and f"Stopped task {second}" in stop.stdout, stop.stdout + stop.stderr
    assert "stopped" in stopped, stopped


@asynccontextmanager
async def team_channel(database_url: str) -> AsyncGenerator[Callable[[str], Awaitable[object]]]:
    """Listen on the team's channel; yields a function that waits until a notification with `key` has come (since
    this block began) and returns its value: a question asked (`asked`: the task), a rule shared (`rule`), ..."""
    heard: list[dict[str, object]] = []
    news = anyio.Event()
    connection = await psycopg.AsyncConnection.connect(database_url, autocommit=True)

    async def watch() -> None:
        nonlocal news
        async for notice in connection.notifies():
            heard.append(json.loads(notice.payload))
            news.set()
            news = anyio.Event()

    async def hear(key: str) -> object:
        while not (found := [payload[key] for payload in heard if key in payload]):
            await news.wait()
        return found[0]

    try:
        await connection.execute("LISTEN mcp_subagents")
        async with anyio.create_task_group() as group:
            group.start_soon(watch)
            yield hear
            group.cancel_scope.cancel()
    finally:
        await connection.close()


ASKING = {"MCP_SUBAGENTS_ASK_TIMEOUT": "120"}


async def test_a_question_of_a_task_on_one_replica_is_answered_from_another_s_host(
    tmp_path: Path, database_url: str
) -> None:
    marker = tmp_path / "ran"
    host = Host("allow")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, "echo allowed-run")
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **ASKING) as a,
            replica(tmp_path / "b", project, database_url, fake, **ASKING) as b,
        ):
            task_id = await launched(a.url)
            with anyio.fail_after(90):
                async with asking_host(b.url, host) as client:
                    result = await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 60_000})
    assert len(host.questions) == 1 and "echo ran" in host.questions[0], host.questions
    assert "allowed-run" in text_of(result), text_of(result)
    assert marker.read_text() == "ran\n"


async def test_tasks_answer_reaches_the_replica_that_runs_the_task(tmp_path: Path, database_url: str) -> None:
    marker = tmp_path / "ran"
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, "echo answered-from-the-cli")
        project = tmp_path / "project"
        async with replica(tmp_path / "a", project, database_url, fake, **ASKING) as a:
            async with team_channel(database_url) as hear:
                task_id = await launched(a.url)
                with anyio.fail_after(60):
                    assert await hear("asked") == task_id
            answered = await anyio.to_thread.run_sync(
                tasks_command, tmp_path / "cli", database_url, "answer", task_id, "--allow"
            )
            answer = await output(a.url, task_id)
    assert answered.returncode == 0 and "Allowed" in answered.stdout, answered.stdout + answered.stderr
    assert "answered-from-the-cli" in answer, answer


async def test_a_carried_on_task_goes_on_counting_its_turns(tmp_path: Path, database_url: str) -> None:
    started = Signal(tmp_path / "started")

    def keep_working(body: dict[str, Any]) -> Step:
        if tool_results(body):
            return turn(tool_use("Bash", {"command": "echo more", "description": "more"}))
        return turn(tool_use("Bash", {"command": f"{started.command()}; sleep 300", "description": "work"}))

    with FakeLLM() as fake:
        fake.default = keep_working
        project = tmp_path / "project"
        async with replica(tmp_path / "b", project, database_url, fake, **BYPASS) as b:
            async with replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a, mcp_client(a.url) as client:
                launch = await client.call_tool("Task", {**BACKGROUND, "max_turns": 2})
                task_id = matched(r"task_id: (\w+)", text_of(launch))
                await started.wait()
                a.kill()
            answer = await output(b.url, task_id)
    assert len(fake.requests) == 2, answer  # one turn on replica a, the last allowed one on replica b
    assert "max_turns" in answer or "turn" in answer, answer


async def test_a_replica_that_cannot_see_a_task_s_project_says_so_and_does_not_run_it(
    tmp_path: Path, database_url: str
) -> None:
    marker, started = tmp_path / "ran", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"{started.command()}; sleep 300")
        async with replica(tmp_path / "a", tmp_path / "project-a", database_url, fake, **BYPASS) as a:
            task_id = await launched(a.url)
            await started.wait()
            # Replica a's project is not on replica b's machine (here: b looks for it under another path).
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as connection:
                await connection.execute(
                    "UPDATE mcp_subagents.tasks SET project = %s WHERE id = %s", (str(tmp_path / "elsewhere"), task_id)
                )
                await connection.execute(
                    "UPDATE mcp_subagents.replicas SET project = %s", (str(tmp_path / "elsewhere"),)
                )
            async with replica(tmp_path / "b", tmp_path / "project-b", database_url, fake, **BYPASS) as b:
                warned = b.seen("cannot see: replicas must see the same project folders")
                a.kill()
                answer = await output(b.url, task_id)
    assert warned, b.log.text()
    assert f"cannot see the project folder {tmp_path / 'elsewhere'}" in answer, answer
    assert marker.read_text() == "ran\n"


async def test_two_replicas_cannot_share_a_state_directory(tmp_path: Path, database_url: str) -> None:
    with FakeLLM() as fake:
        async with replica(tmp_path / "a", tmp_path / "project", database_url, fake):
            environ = server_environment(
                tmp_path / "b", fake=fake, work=tmp_path / "project", state=tmp_path / "a" / "state"
            )
            environ["MCP_SUBAGENTS_DATABASE_URL"] = database_url
            command = [sys.executable, "-m", "mcp_subagents", "serve", "--transport", "http", "--port", "0"]
            second = await anyio.to_thread.run_sync(
                lambda: subprocess.run(command, env=environ, capture_output=True, text=True, timeout=60, check=False)
            )
    assert second.returncode != 0
    assert f"another replica of the team uses the state directory {tmp_path / 'a' / 'state'}" in second.stderr


async def test_a_replica_shut_down_cleanly_hands_its_task_to_another(tmp_path: Path, database_url: str) -> None:
    marker, started = tmp_path / "ran", Signal(tmp_path / "started")
    with FakeLLM() as fake:
        fake.default = run_once_then_answer(marker, f"{started.command()}; sleep 300")
        project = tmp_path / "project"
        async with replica(tmp_path / "b", project, database_url, fake, **BYPASS) as b:
            async with replica(tmp_path / "a", project, database_url, fake, **BYPASS) as a:
                task_id = await launched(a.url)
                await started.wait()
                a.process.terminate()
                with anyio.fail_after(30):
                    await a.process.wait()
            answer = await output(b.url, task_id)
    assert a.process.returncode == 0
    assert "interrupted before this tool call finished" in answer, answer
    assert "<status>completed</status>" in answer, answer
    assert marker.read_text() == "ran\n"


@pytest.mark.parametrize("command", [["serve", "--transport", "http", "--port", "0"], ["tasks", "list"]])
def test_an_unreachable_database_is_one_line_that_keeps_its_password(tmp_path: Path, command: list[str]) -> None:
    password = "not-for-the-log-0123456789"
    environ = server_environment(tmp_path) | {
        "MCP_SUBAGENTS_DATABASE_URL": f"postgresql://team:{password}@127.0.0.1:1/x"
    }
    done = subprocess.run(
        [sys.executable, "-m", "mcp_subagents", *command], env=environ, capture_output=True, text=True, timeout=60
    )
    assert done.returncode in (1, 2), done.stderr
    assert "Cannot connect to the database postgresql://team@127.0.0.1:1/x" in done.stderr, done.stderr
    assert password not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr, done.stderr


def first_prompt(body: dict[str, Any]) -> str:
    """The text of the request's first message (the task's prompt comes last in it)."""
    content: Any = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return " ".join(str(block.get("text", "")) for block in cast("list[dict[str, Any]]", content))


async def test_a_task_still_queued_on_a_killed_replica_runs_on_another(tmp_path: Path, database_url: str) -> None:
    first, second, started = tmp_path / "first", tmp_path / "second", Signal(tmp_path / "started")
    slow = run_once_then_answer(first, f"{started.command()}; sleep 300")
    quick = run_once_then_answer(second, "echo second-ran")
    with FakeLLM() as fake:
        fake.default = lambda body: quick(body) if "second job" in first_prompt(body) else slow(body)
        project = tmp_path / "project"
        one_at_a_time = {**BYPASS, "MCP_SUBAGENTS_MAX_CONCURRENT": "1"}
        async with replica(tmp_path / "b", project, database_url, fake, **BYPASS) as b:
            async with replica(tmp_path / "a", project, database_url, fake, **one_at_a_time) as a:
                running = await launched(a.url)
                await started.wait()
                async with mcp_client(a.url) as client:
                    queued_launch = await client.call_tool("Task", {**BACKGROUND, "prompt": "Do the second job"})
                queued = matched(r"task_id: (\w+)", text_of(queued_launch))
                a.kill()
            answers = [await output(b.url, running), await output(b.url, queued)]
    assert "interrupted before this tool call finished" in answers[0], answers[0]
    assert "second-ran" in answers[1] and "<status>completed</status>" in answers[1], answers[1]
    assert first.read_text() == "ran\n" and second.read_text() == "ran\n"


def touch_once(body: dict[str, Any]) -> Step:
    """Bash `touch made.txt` (which the default mode asks about), then an answer."""
    if tool_results(body):
        return turn(text("touched"))
    return turn(tool_use("Bash", {"command": "touch made.txt", "description": "touch"}))


async def test_an_always_allow_answer_counts_on_every_replica(tmp_path: Path, database_url: str) -> None:
    first, later = Host("always"), Host("decline")
    with FakeLLM() as fake:
        fake.default = touch_once
        project = tmp_path / "project"
        async with (
            replica(tmp_path / "a", project, database_url, fake, **ASKING) as a,
            replica(tmp_path / "b", project, database_url, fake, **ASKING) as b,
            team_channel(database_url) as hear,
        ):
            task_id = await launched(a.url)
            with anyio.fail_after(90):
                async with asking_host(b.url, first) as client:
                    await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 60_000})
                shared = await hear("rule")
                async with asking_host(b.url, later) as client:  # replica b runs this one itself
                    again = await client.call_tool("Task", {"description": "again", "prompt": "Do the work again"})
    assert len(first.questions) == 1 and "asks to run Bash: touch made.txt" in first.questions[0], first.questions
    assert shared == {"project": str(project), "rule": "Bash(touch made.txt)"}, shared
    # Replica b may ask whether to trust the project (the answer wrote its settings.local.json), never about the
    # call: the rule replica a added counts there too, trusted project or not, as on one server.
    assert not [question for question in later.questions if "asks to run Bash" in question], later.questions
    assert "touched" in text_of(again) and not again.is_error, text_of(again)
