"""200 background tasks over three replicas of a team's server, one of them killed with `kill -9` while they run:
every task finishes, none is lost, none is done twice.

Each task runs one Bash call that appends the task's own tag to a shared file, then answers with what the tool said.
A tool call whose result was recorded must never run again (its tag appears once); one in flight when its replica
died is answered as interrupted and not run again (its tag appears at most once: the kill may come before its
`echo`). A few of the killed replica's tasks hold their tool call open until the kill, so some always are in flight.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from psycopg import sql

from mcp_subagents.tasks.transcripts import INTERRUPTED_TOOL_RESULT
from tests.fakes.fake_llm import FakeLLM, Step, hang, text, tool_use, turn
from tests.support import matched, text_of
from tests.team.postgres import admin_connection, drop_database_and_kin, with_database
from tests.team.replicas import replica

pytestmark = pytest.mark.anyio

TASKS = 200
VICTIMS = range(0, TASKS, 3)
"""The tasks launched on the first replica (round-robin), the one killed."""
FINISHED_BEFORE_THE_KILL = VICTIMS[:20]
HELD = VICTIMS[-4:]
"""Their Bash call still runs when the replica is killed: it is answered as interrupted, never run again."""
ASKING = VICTIMS[-8:-4]
"""Their first model request is unanswered when the replica is killed: the task starts again elsewhere."""
ANSWERING = VICTIMS[-12:-8]
"""Their Bash call ran and its result was recorded; the next model request is unanswered at the kill."""
HOLD = "HOLD_TOOL_CALLS"
"""Set on the victim alone: a held command waits there, and would run through anywhere else."""
# Every replica may run its whole share at once: a task still queued when its replica dies is not in the team's
# database yet (test_a_queued_task_of_a_killed_replica_is_not_lost below).
SETTINGS = {"MCP_SUBAGENTS_PERMISSION_MODE": "bypassPermissions", "MCP_SUBAGENTS_MAX_CONCURRENT": str(TASKS)}
TAG = re.compile(r"job-(\d{3})")


def tag_of(number: int) -> str:
    return f"job-{number:03d}"


def answered(body: dict[str, Any]) -> list[str]:
    """The results of the tool calls the conversation holds so far."""
    results: list[str] = []
    for message in cast("list[dict[str, Any]]", body["messages"]):
        content = message.get("content")
        if isinstance(content, list):
            blocks = cast("list[dict[str, Any]]", content)
            results += [json.dumps(block.get("content")) for block in blocks if block.get("type") == "tool_result"]
    return results


class Model:
    """The model of every task, a function of the request (three replicas share it) and of whether the victim is
    dead yet: one Bash call that appends the task's tag and the replica's home to `ran`, then the answer, quoting
    the tool's result. Until the kill, the requests of `ASKING` and `ANSWERING` tasks get no answer, and a `HELD`
    task's command, on the victim, writes its tag to the `holds` pipe and waits to be killed."""

    def __init__(self, ran: Path, holds: Holds) -> None:
        self.ran, self.holds = ran, holds
        self.killed = threading.Event()
        self.stalled = threading.Event()
        """Set once every request meant to be unanswered at the kill has come."""
        self._unanswered: set[int] = set()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Step:
        number = int(matched(TAG.pattern, json.dumps(body["messages"][0])))
        results = answered(body)
        if not self.killed.is_set() and number in (ANSWERING if results else ASKING):
            self._stall(number)
            return hang(after_start=True)
        if results:
            return turn(text(f"{tag_of(number)} finished; the tool said: {results[-1]}"))
        command = f'echo {tag_of(number)} "$HOME" >> {self.ran}'
        if number in HELD:
            command += f'; if [ -n "${HOLD}" ]; then echo {number} > {self.holds.path}; exec sleep 600; fi'
        return turn(tool_use("Bash", {"command": command, "description": "note the job"}))

    def _stall(self, number: int) -> None:
        with self._lock:
            self._unanswered.add(number)
            if self._unanswered >= {*ASKING, *ANSWERING}:
                self.stalled.set()

    def where_each_ran(self) -> dict[int, list[str]]:
        """Each tag's homes of the replicas its Bash call ran on."""
        homes: dict[int, list[str]] = {}
        for line in self.ran.read_text().splitlines():
            tag, home = line.split(" ", 1)
            homes.setdefault(int(matched(TAG.pattern, tag)), []).append(Path(home).name)
        return homes


@asynccontextmanager
async def connected(url: str) -> AsyncGenerator[Client]:
    """An MCP client for as long as the test needs it (the harness's own gives up after 30 s)."""
    async with create_mcp_http_client() as http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def launch(client: Client, number: int) -> str:
    arguments = {"description": "a job", "prompt": f"Do {tag_of(number)}", "run_in_background": True}
    result = await client.call_tool("Task", arguments)
    assert not result.is_error, text_of(result)
    return matched(r"task_id: (\w+)", text_of(result))


async def read_output(client: Client, task_id: str) -> str:
    result = await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 120_000})
    return text_of(result)


class Holds:
    """A named pipe the held commands write their numbers to, kept open here for reading and writing from the
    start: a writer never waits for a reader, and none finds the reader gone between two reads (and loses its line
    to a broken pipe)."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDWR)

    async def numbers(self, count: int) -> list[int]:
        """The first `count` numbers written (waiting for them)."""

        def read() -> list[int]:
            data = b""
            while data.count(b"\n") < count:
                data += os.read(self._fd, 4096)
            return [int(line) for line in data.split()]

        try:
            return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
        except BaseException:
            os.write(self._fd, b"\n" * count)  # an abandoned read ends
            raise

    def close(self) -> None:
        os.close(self._fd)


@dataclass
class Run:
    """What the test saw: each task's id by number, each task's TaskOutput by id, and which were carried on."""

    ids: dict[int, str]
    outputs: dict[str, str]
    carried: set[int]
    """The tasks a surviving replica carried on."""


async def launch_all(clients: list[Client]) -> dict[int, str]:
    """TASKS background tasks, round-robin over the clients (one per replica), each client's share in turn."""
    ids: dict[int, str] = {}

    async def share(offset: int) -> None:
        for number in range(offset, TASKS, len(clients)):
            ids[number] = await launch(clients[offset], number)

    async with anyio.create_task_group() as group:
        for offset in range(len(clients)):
            group.start_soon(share, offset)
    return ids


async def read_all(clients: list[Client], ids: dict[int, str]) -> dict[str, str]:
    """Every task's TaskOutput (waiting for its end), alternating over `clients`, twenty at a time."""
    outputs: dict[str, str] = {}
    limit = anyio.CapacityLimiter(20)

    async def one(number: int, task_id: str) -> None:
        async with limit:
            outputs[task_id] = await read_output(clients[number % len(clients)], task_id)

    async with anyio.create_task_group() as group:
        for number, task_id in ids.items():
            group.start_soon(one, number, task_id)
    return outputs


async def until_the_kill(model: Model, client: Client, ids: dict[int, str]) -> None:
    """Wait until the victim has finished its first tasks, and the others are where the test wants them."""
    for number in FINISHED_BEFORE_THE_KILL:
        assert "<status>completed</status>" in await read_output(client, ids[number])
    assert sorted(await model.holds.numbers(len(HELD))) == list(HELD)
    await anyio.to_thread.run_sync(model.stalled.wait, abandon_on_cancel=True)


async def run_with_a_kill(tmp_path: Path, database_url: str, fake: FakeLLM, model: Model) -> Run:
    """Three replicas, the tasks launched round-robin; the first replica killed with tasks in every state; then
    every task's output read on the other two."""
    project = tmp_path / "project"
    async with (
        replica(tmp_path / "b", project, database_url, fake, **SETTINGS) as b,
        replica(tmp_path / "c", project, database_url, fake, **SETTINGS) as c,
    ):
        async with replica(tmp_path / "a", project, database_url, fake, **SETTINGS, **{HOLD: "1"}) as a:
            async with connected(a.url) as to_a, connected(b.url) as to_b, connected(c.url) as to_c:
                with anyio.fail_after(60):
                    ids = await launch_all([to_a, to_b, to_c])
                    await until_the_kill(model, to_a, ids)
            a.kill()
        model.killed.set()
        async with connected(b.url) as to_b, connected(c.url) as to_c:
            with anyio.fail_after(150):
                outputs = await read_all([to_b, to_c], ids)
        carried = {
            number for number, task_id in ids.items() if any(r.seen(f"carrying on task {task_id}") for r in (b, c))
        }
    return Run(ids, outputs, carried)


async def test_200_tasks_over_three_replicas_one_killed_each_finish_once_and_none_is_lost(
    tmp_path: Path, database_url: str
) -> None:
    model = Model(tmp_path / "ran", Holds(tmp_path / "holds"))
    try:
        with FakeLLM() as fake:
            fake.default = model
            run = await run_with_a_kill(tmp_path, database_url, fake, model)
    finally:
        model.holds.close()

    outputs = {number: run.outputs[task_id] for number, task_id in run.ids.items()}
    assert len(outputs) == TASKS == len(set(run.ids.values()))
    unfinished = {number: out for number, out in outputs.items() if "<status>completed</status>" not in out}
    assert not unfinished, "\n\n".join(unfinished.values())  # none lost: every task completed, wherever it ended
    assert all(f"{tag_of(number)} finished" in out for number, out in outputs.items())
    interrupted = {number for number, out in outputs.items() if INTERRUPTED_TOOL_RESULT in out}
    ran_on = model.where_each_ran()
    assert all(len(homes) == 1 for homes in ran_on.values()), ran_on  # none done twice
    assert set(range(TASKS)) - set(ran_on) <= interrupted  # a call cut short before its `echo` never ran at all

    assert {*HELD, *ASKING, *ANSWERING} <= run.carried <= set(VICTIMS) - set(FINISHED_BEFORE_THE_KILL)
    assert set(HELD) <= interrupted <= run.carried - {*ASKING, *ANSWERING}  # a recorded result is not lost
    assert all(ran_on[number] == ["a"] for number in [*HELD, *ANSWERING, *FINISHED_BEFORE_THE_KILL])
    assert all(ran_on[number] in (["b"], ["c"]) for number in ASKING)  # it had not run: it ran once, elsewhere
    print(
        f"\n{TASKS} tasks, {len(run.carried)} carried on from the killed replica: {len(interrupted)} with their tool"
        f" call interrupted ({len(set(range(TASKS)) - set(ran_on))} before it ran)"
    )


def hold_the_first(holds: Holds) -> Callable[[dict[str, Any]], Step]:
    """job-000's Bash call holds (where HOLD is set); any other task runs `true`; then the answer."""

    def step(body: dict[str, Any]) -> Step:
        number = int(matched(TAG.pattern, json.dumps(body["messages"][0])))
        if answered(body):
            return turn(text(f"{tag_of(number)} finished"))
        command = (
            f'if [ -n "${HOLD}" ]; then echo {number} > {holds.path}; exec sleep 600; fi' if number == 0 else "true"
        )
        return turn(tool_use("Bash", {"command": command, "description": "the job"}))

    return step


async def test_a_queued_task_of_a_killed_replica_is_not_lost(tmp_path: Path, database_url: str) -> None:
    holds, project = Holds(tmp_path / "holds"), tmp_path / "project"
    one_place = {**SETTINGS, "MCP_SUBAGENTS_MAX_CONCURRENT": "1"}
    try:
        with FakeLLM() as fake:
            fake.default = hold_the_first(holds)
            async with replica(tmp_path / "b", project, database_url, fake, **SETTINGS) as b:
                async with replica(tmp_path / "a", project, database_url, fake, **one_place, **{HOLD: "1"}) as a:
                    async with connected(a.url) as to_a:
                        with anyio.fail_after(60):
                            running, queued = await launch(to_a, 0), await launch(to_a, 1)
                            assert await holds.numbers(1) == [0]
                    a.kill()
                async with connected(b.url) as to_b:
                    with anyio.fail_after(120):
                        outputs = [await read_output(to_b, running), await read_output(to_b, queued)]
    finally:
        holds.close()
    assert "<status>completed</status>" in outputs[0], outputs[0]
    assert "<status>completed</status>" in outputs[1] and "job-001 finished" in outputs[1], outputs[1]


async def test_a_replica_starts_on_a_database_in_sql_ascii(tmp_path: Path, postgres_url: str) -> None:
    name = f"t_ascii_{secrets.token_hex(6)}"
    with admin_connection(postgres_url) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0").format(
                sql.Identifier(name)
            )
        )
    try:
        with FakeLLM() as fake:
            async with replica(tmp_path / "a", tmp_path / "project", with_database(postgres_url, name), fake) as a:
                assert a.seen("joined the team")
    finally:
        drop_database_and_kin(postgres_url, name)
