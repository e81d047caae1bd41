"""A team's server on several replicas over Postgres: throughput and TaskOutput latency with one and three replicas
against one server on the local store (no --database-url), and the time from a replica's kill -9 to its task
running again on another; all measured in this one run.

    python bench/replicas.py            # 200 tasks per figure, 30 TaskOutput calls of each kind
    python bench/replicas.py --smoke    # 20 tasks, 5 calls (CI; the kill alone takes 10-15 s)

Postgres: $MCP_SUBAGENTS_TEST_DATABASE_URL (which .ci/run exports), else a private cluster of the machine's Postgres
(tests/team/postgres.py); without either the script says so and exits 0. The servers are `serve --transport
streamable-http` subprocesses (tests/team/replicas.py); the fake Messages API (tests/fakes/fake_llm.py, latency 0)
runs in a thread of this process, beside the MCP clients. Only 127.0.0.1 is touched; the key is a dummy.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Generator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes.fake_llm import FakeLLM, Step, text, tool_use, turn
from tests.support import matched, text_of
from tests.team.postgres import TEST_DATABASE_URL, fresh_database, postgres_bin_dir, private_cluster
from tests.team.replicas import Replica, replica

HOLD = "BENCH_HOLD"
"""Set on the replica that is killed: the task meant to be running at the kill waits there, and nowhere else."""
SETTINGS = {"MCP_SUBAGENTS_PERMISSION_MODE": "bypassPermissions", "MCP_SUBAGENTS_MAX_CONCURRENT": "50"}
TODOS = {"todos": [{"content": "Measure the team", "status": "in_progress", "activeForm": "Measuring the team"}]}


@dataclass(frozen=True, slots=True)
class Plan:
    tasks: int
    calls: int


FULL = Plan(tasks=200, calls=30)
SMOKE = Plan(tasks=20, calls=5)


def model(holds: Path) -> Step:
    """One TodoWrite call, then the answer; a prompt that says `hold` runs a Bash call instead that, where HOLD is
    set, writes to the `holds` pipe and waits to be killed."""

    def step(body: dict[str, Any]) -> Step:
        prompt = json.dumps(body["messages"][0])
        if any(message["role"] == "assistant" for message in body["messages"]):
            return turn(text("done"))
        if "hold" in prompt:
            command = f'if [ -n "${HOLD}" ]; then echo $$ > {holds}; exec sleep 600; fi'
            return turn(tool_use("Bash", {"command": command, "description": "hold"}))
        return turn(tool_use("TodoWrite", TODOS))

    return step


@asynccontextmanager
async def connected(url: str) -> AsyncGenerator[Client]:
    async with create_mcp_http_client() as http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


async def launch(client: Client, prompt: str = "measure") -> str:
    arguments = {"description": "bench", "prompt": prompt, "run_in_background": True}
    return matched(r"task_id: (\w+)", text_of(await client.call_tool("Task", arguments)))


async def output(client: Client, task_id: str, *, block: bool) -> str:
    result = await client.call_tool("TaskOutput", {"task_id": task_id, "block": block, "timeout": 120_000})
    return text_of(result)


@dataclass(frozen=True, slots=True)
class Figures:
    tasks_per_s: float
    unblocked_ms: list[float]
    """TaskOutput block=false on a finished task, read on another replica than the one that ran it when there is
    one."""
    blocked_ms: list[float]
    """Task (background) on one replica, then TaskOutput block=true on the same: until the answer."""
    early: int
    """TaskOutput block=true calls that returned while the task still ran (each read again)."""


async def measure(clients: list[Client], plan: Plan) -> Figures:
    """`plan.tasks` tasks launched round-robin, twenty at a time, each one's output read (block=true) on the next
    client; then the latencies, one call at a time."""
    started = time.perf_counter()
    ids: dict[int, str] = {}
    early: list[str] = []
    limit = anyio.CapacityLimiter(20)

    async def one_task(number: int) -> None:
        async with limit:
            ids[number] = await launch(clients[number % len(clients)])
            # Read where it was launched: until it starts (takes a place), a task is not in the team's database and
            # another replica does not know it yet
            done = await output(clients[number % len(clients)], ids[number], block=True)
            while "<status>running</status>" in done:  # returned before the end: counted, and read again
                early.append(ids[number])
                done = await output(clients[number % len(clients)], ids[number], block=True)
            assert "<status>completed</status>" in done, done

    async with anyio.create_task_group() as group:
        for number in range(plan.tasks):
            group.start_soon(one_task, number)
    tasks_per_s = plan.tasks / (time.perf_counter() - started)
    unblocked: list[float] = []
    blocked: list[float] = []
    for number in range(plan.calls):
        reader = clients[(number + 1) % len(clients)]
        before = time.perf_counter()
        assert "<status>completed</status>" in await output(reader, ids[number], block=False)
        unblocked.append((time.perf_counter() - before) * 1000)
        launcher = clients[number % len(clients)]
        task_id = await launch(launcher)
        before = time.perf_counter()
        assert "<status>completed</status>" in await output(launcher, task_id, block=True)
        blocked.append((time.perf_counter() - before) * 1000)
    return Figures(tasks_per_s, unblocked, blocked, len(early))


async def stop_from_elsewhere(runner: Replica, other: Replica, holds: Path) -> tuple[float, float]:
    """Milliseconds from a TaskStop sent to `other` for a task `runner` runs until the task's process is gone, and
    until TaskStop answers."""
    async with connected(runner.url) as client:
        task_id = await launch(client, "hold")
        with anyio.fail_after(60):
            pid = int(await anyio.to_thread.run_sync(holds.read_text, abandon_on_cancel=True))
    pidfd = os.pidfd_open(pid)
    gone: list[float] = []
    answered = 0.0
    try:
        async with connected(other.url) as client, anyio.create_task_group() as group:
            before = time.perf_counter()

            async def until_gone() -> None:
                with anyio.fail_after(30):
                    await anyio.wait_readable(pidfd)
                gone.append((time.perf_counter() - before) * 1000)

            group.start_soon(until_gone)
            result = await client.call_tool("TaskStop", {"task_id": task_id})
            answered = (time.perf_counter() - before) * 1000
            assert not result.is_error, result
    finally:
        os.close(pidfd)
    return gone[0], answered


async def kill_to_carried_on(victim: Replica, survivors: list[Replica], holds: Path) -> float:
    """Seconds from the victim's kill -9 to the line of a survivor's log that says it carries the victim's running
    task on (its timestamp), read once the task has ended there."""
    async with connected(victim.url) as client:
        task_id = await launch(client, "hold")
        with anyio.fail_after(60):
            await anyio.to_thread.run_sync(holds.read_text, abandon_on_cancel=True)
    killed = time.time()
    victim.kill()
    async with connected(survivors[0].url) as client:
        with anyio.fail_after(120):
            assert "<status>completed</status>" in await output(client, task_id, block=True)
    pattern = rf"(?m)^(\S+ \S+) \w+ \S+: carrying on task {task_id}"
    lines = [survivor.log.text() for survivor in survivors if survivor.seen(f"carrying on task {task_id}")]
    carried = datetime.strptime(matched(pattern, "\n".join(lines).replace("\r", "")), "%Y-%m-%d %H:%M:%S,%f")
    return carried.timestamp() - killed


@contextmanager
def postgres() -> Generator[str | None]:
    """A fresh database's URL, or None (with the reason printed) when there is no Postgres to use."""
    given = os.environ.get(TEST_DATABASE_URL)
    if given:
        with fresh_database(given) as url:
            yield url
        return
    bin_dir = postgres_bin_dir()
    reason = None if bin_dir else f"no Postgres (initdb and pg_ctl) found, and {TEST_DATABASE_URL} is not set"
    if bin_dir and os.geteuid() == 0 and not any(entry.pw_name == "postgres" for entry in pwd.getpwall()):
        reason = "running as root, and there is no `postgres` user to own a Postgres cluster"
    if bin_dir is None or reason:
        print(f"skipped: {reason}")
        yield None
        return
    with private_cluster(bin_dir) as cluster, fresh_database(cluster.url) as url:
        yield url


def spread(values: list[float], unit: str = "") -> str:
    return f"{statistics.median(values):.1f}{unit} ({min(values):.1f}-{max(values):.1f})"


async def run(plan: Plan, database_url: str, root: Path) -> None:
    holds = root / "holds"
    os.mkfifo(holds)
    project = root / "project"
    with FakeLLM() as fake:
        fake.default = model(holds)
        print("measuring one server on the local store ...", flush=True)
        async with replica(root / "local", project, "", fake, **SETTINGS) as local, connected(local.url) as client:
            alone = await measure([client], plan)
        assert not local.seen("joined the team"), "the local server joined a team"
        async with AsyncExitStack() as stack:
            first = await stack.enter_async_context(replica(root / "a", project, database_url, fake, **SETTINGS))
            print("measuring one replica ...", flush=True)
            async with connected(first.url) as client:
                one = await measure([client], plan)
            others = [
                await stack.enter_async_context(replica(root / name, project, database_url, fake, **SETTINGS))
                for name in ("b", "c")
            ]
            print("measuring three replicas ...", flush=True)
            async with AsyncExitStack() as clients:
                three = await measure(
                    [await clients.enter_async_context(connected(r.url)) for r in (first, *others)], plan
                )
            print("killing a replica ...", flush=True)
            victim = await stack.enter_async_context(
                replica(root / "d", project, database_url, fake, **SETTINGS, **{HOLD: "1"})
            )
            print("stopping a task from another replica ...", flush=True)
            stop = await stop_from_elsewhere(victim, first, holds)
            recovery = await kill_to_carried_on(victim, [first, *others], holds)
    report(plan, alone, one, three, recovery)
    print(
        f"TaskStop on another replica: the task's process gone after {stop[0]:.0f} ms, TaskStop answered after "
        f"{stop[1]:.0f} ms (goal: processes killed within a second)"
    )


def report(plan: Plan, alone: Figures, one: Figures, three: Figures, recovery: float) -> None:
    print()
    print(f"{plan.tasks} background tasks (a TodoWrite and an answer, latency 0), 20 at a time, launched round-robin;")
    print(
        f"TaskOutput medians (min-max) of {plan.calls} calls: block=false on the next replica, block=true on the same"
    )
    for label, figures in (("local store, one server", alone), ("one replica", one), ("three replicas", three)):
        print(
            f"  {label:<24} {figures.tasks_per_s:6.1f} tasks/s   TaskOutput block=false "
            f"{spread(figures.unblocked_ms, ' ms')}   block=true until done {spread(figures.blocked_ms, ' ms')}"
        )
        if figures.early:
            print(f"  ... {figures.early} TaskOutput block=true call(s) returned while the task ran (read again)")
    for label, figures in (("one replica", one), ("three replicas", three)):
        print(
            f"  {label} / local store: throughput {figures.tasks_per_s / alone.tasks_per_s:.2f}, TaskOutput "
            f"block=false {statistics.median(figures.unblocked_ms) / statistics.median(alone.unblocked_ms):.2f}, "
            f"block=true {statistics.median(figures.blocked_ms) / statistics.median(alone.blocked_ms):.2f}"
        )
    print(f"kill -9 of a replica to its running task carried on by another: {recovery:.1f} s (goal <= 30 s)")


async def main(plan: Plan) -> None:
    with postgres() as database_url, tempfile.TemporaryDirectory(prefix="mcp-subagents-replicas-") as tmp:
        if database_url is not None:
            await run(plan, database_url, Path(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    anyio.run(main, SMOKE if parser.parse_args().smoke else FULL)
