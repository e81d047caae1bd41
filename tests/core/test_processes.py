"""Finding and killing what a command left, wherever it went: by tag, by descent, by process group."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from mcp_subagents.core.processes import (
    OPEN_FILES_WANTED,
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


def test_the_server_raises_a_low_open_file_limit_so_many_tasks_can_hold_their_files(tmp_path: Path) -> None:
    """Each running task keeps its two task files open: a soft limit of 256 would fail at about a hundred tasks."""
    script = (
        "import resource\n"
        "from mcp_subagents.core.processes import harden_server_process\n"
        "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))\n"
        "harden_server_process()\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    soft, hard = (int(value) for value in done.stdout.split())
    expected = OPEN_FILES_WANTED if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_WANTED)
    assert soft == max(expected, 256)
