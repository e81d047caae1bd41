"""Finding and killing what a command left, wherever it went: by tag, by descent, by process group."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from mcp_subagents.processes import (
    PROCESS_TAG_VARIABLE,
    ProcessGroups,
    descendants,
    kill_tagged,
    new_tag,
    tagged_pids,
)
from tests.processes import is_running, wait_until_gone

pytestmark = pytest.mark.anyio


async def spawn(tmp_path: Path, command: str, env: dict[str, str]) -> tuple[Process, list[int]]:
    """Run `command` in a new session; it reports the pids it starts through a fifo. Returns it and them."""
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    keep = os.open(fifo, os.O_WRONLY)
    try:
        process = await anyio.open_process(["/bin/sh", "-c", command], env=env, cwd=tmp_path, start_new_session=True)
        data = b""
        with anyio.fail_after(10):
            while data.count(b"\n") < command.count("echo $$"):
                await anyio.wait_readable(reader)
                data += os.read(reader, 1024)
    finally:
        os.close(keep)
        os.close(reader)
    return process, [int(pid) for pid in data.split()]


async def test_a_tag_finds_a_process_that_left_its_session_and_only_that(tmp_path: Path) -> None:
    tag, other = new_tag(), new_tag()
    env = {"PATH": "/usr/bin:/bin", PROCESS_TAG_VARIABLE: tag}
    detached = "setsid sh -c 'echo $$ > pids; exec sleep 1000' &"
    _, [mine] = await spawn(tmp_path, detached, env)
    assert tagged_pids([tag]) == [mine] and tagged_pids([other]) == []
    kill_tagged([other])
    assert is_running(mine)
    groups = ProcessGroups(tags={tag})
    groups.kill_all()
    await wait_until_gone(mine)
    assert groups.tags == set()


async def test_descendants_reach_a_child_in_another_session(tmp_path: Path) -> None:
    command = "setsid sh -c 'echo $$ > pids; exec sleep 1000' & wait"
    shell, [child] = await spawn(tmp_path, command, {"PATH": "/usr/bin:/bin"})
    try:
        assert child in descendants(shell.pid) and os.getsid(child) != os.getsid(shell.pid)
    finally:
        os.kill(child, 9)
        await shell.wait()
