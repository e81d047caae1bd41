"""Without the sandbox, processes that leave their command's process group still die with what they belong to.

Before, `setsid` and `nohup ... &` survived TaskStop, the Bash timeout and the server's exit: only the command's
process group was killed.
"""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from tests.fakes.fake_llm import FakeLLM
from tests.processes import is_running, wait_until_gone

from .server import Scene, bash, make_scene, run_task

pytestmark = pytest.mark.anyio

# Each process reports its pid and whether it still carries the command's tag (exec keeps the environment). Read
# from /proc/<pid>/environ instead, the answer raced the exec: mid-exec it reads empty, as if untagged.
REPORT_AND_SLEEP = (
    '#!/bin/sh\necho "$$ ${MCP_SUBAGENTS_PROCESS_TAG:+tagged}" > "$(dirname "$0")/pids"\nexec /bin/sleep 1000\n'
)
DETACH = "setsid ./r.sh & nohup ./r.sh >/dev/null 2>&1 & (setsid sh -c './r.sh &' &); env -i /usr/bin/setsid ./r.sh & "
"""Four ways out of the command's process group; the last also drops the environment."""


@asynccontextmanager
async def scene_with_pids(tmp_path: Path, fake: FakeLLM) -> AsyncGenerator[tuple[Scene, int]]:
    scene = make_scene(tmp_path, fake, sandbox="off", MCP_SUBAGENTS_PERMISSION_MODE="bypassPermissions")
    script = scene.work / "r.sh"
    script.write_text(REPORT_AND_SLEEP)
    script.chmod(0o755)
    os.mkfifo(scene.work / "pids")
    reader = os.open(scene.work / "pids", os.O_RDONLY | os.O_NONBLOCK)
    keep_open = os.open(scene.work / "pids", os.O_WRONLY)  # so the fifo never reads as ended between writers
    try:
        yield scene, reader
    finally:
        os.close(keep_open)
        os.close(reader)


async def read_pids(reader: int, count: int) -> tuple[list[int], list[int]]:
    """The pids the started processes report through the fifo, once `count` have, and those among them that
    dropped the environment the server gave their command (and with it the command's tag)."""
    data = b""
    with anyio.fail_after(20):
        while data.count(b"\n") < count:
            await anyio.wait_readable(reader)
            try:
                data += os.read(reader, 4096)
            except BlockingIOError:
                continue
    reports = [line.split() for line in data.decode().splitlines()]
    pids = [int(report[0]) for report in reports]
    untagged = [int(report[0]) for report in reports if "tagged" not in report[1:]]
    assert all(is_running(pid) for pid in pids)
    return pids, untagged


async def test_task_stop_kills_what_left_the_group(tmp_path: Path, fake: FakeLLM) -> None:
    async with scene_with_pids(tmp_path, fake) as (scene, reader):
        launched, server = await run_task(scene, fake, bash(f"{DETACH} ./r.sh"), background=True)
        task_id = launched.split("task_id: ")[1].split()[0]
        pids, environless = await read_pids(reader, 5)
        assert len(environless) == 1
        with anyio.fail_after(10):
            assert "Successfully stopped" in await server.call_tool("TaskStop", {"task_id": task_id})
        for pid in set(pids) - set(environless):
            await wait_until_gone(pid)
        await server.close()  # what dropped its environment too was re-parented to the server: it goes with it
        for pid in environless:
            await wait_until_gone(pid)


async def test_the_bash_timeout_kills_what_left_the_group(tmp_path: Path, fake: FakeLLM) -> None:
    async with scene_with_pids(tmp_path, fake) as (scene, reader):
        timed_out = anyio.Event()
        checked = anyio.Event()

        async def task() -> None:
            result, server = await run_task(scene, fake, bash(f"{DETACH} ./r.sh", timeout=3000))
            assert "done" in result
            timed_out.set()
            await checked.wait()
            await server.close()

        environless: list[int] = []
        async with anyio.create_task_group() as group:
            group.start_soon(task)
            pids, without_environment = await read_pids(reader, 5)
            environless += without_environment
            with anyio.fail_after(30):
                await timed_out.wait()
            for pid in set(pids) - set(environless):
                await wait_until_gone(pid)  # the timeout killed them, before the server stopped
            checked.set()
        for pid in environless:
            await wait_until_gone(pid)


@pytest.mark.parametrize("how", ["end of stdin", "SIGTERM"])
async def test_the_servers_exit_kills_what_a_completed_task_left_running(
    tmp_path: Path, fake: FakeLLM, how: str
) -> None:
    async with scene_with_pids(tmp_path, fake) as (scene, reader):
        result, server = await run_task(scene, fake, bash(f"{DETACH} echo started"))
        pids, _ = await read_pids(reader, 4)
        assert "done" in result and all(is_running(pid) for pid in pids)  # a completed task's processes live on
        if how == "SIGTERM":
            server.process.send_signal(signal.SIGTERM)
            with anyio.fail_after(10):
                await server.process.wait()
        else:
            await server.close()
        for pid in pids:
            await wait_until_gone(pid)
