"""A child's stdout read through a pipe of our own (rg's, for Glob and Grep): every byte in order however small the
writes, fewer reads than writes, the child's exit ends a pause at once, and a child that leaves something holding
the pipe does not hold the result."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import anyio
import pytest

from mcp_subagents.core.subprocesses import CappedBytes, Command, run_captured

pytestmark = pytest.mark.anyio


class Counted(CappedBytes):
    def __init__(self) -> None:
        super().__init__(1 << 24)
        self.chunks = 0

    def add(self, data: bytes) -> None:
        self.chunks += 1
        super().add(data)


WRITES = 2000
MANY_SMALL_WRITES = (
    "import os, time\n"
    f"for n in range({WRITES}):\n"
    "    os.write(1, b'line %d\\n' % n)\n"
    "    until = time.perf_counter() + 0.00005\n"  # as rg writes: a file's lines, then the next file's
    "    while time.perf_counter() < until: pass\n"
)


async def test_many_small_writes_arrive_whole_and_in_order_in_far_fewer_reads(tmp_path: Path) -> None:
    stdout, stderr = Counted(), CappedBytes(1024)
    command = Command(argv=[sys.executable, "-c", MANY_SMALL_WRITES], cwd=tmp_path, env=dict(os.environ))

    with anyio.fail_after(30):
        finished = await run_captured(command, stdout=stdout, stderr=stderr, time_limit=30, gather_seconds=0.001)

    assert finished.returncode == 0, bytes(stderr.data)
    assert bytes(stdout.data).decode().splitlines() == [f"line {n}" for n in range(WRITES)]
    assert stdout.chunks < WRITES / 5


async def test_a_child_left_holding_the_pipe_does_not_hold_the_result(tmp_path: Path) -> None:
    command = Command(argv=["sh", "-c", "sleep 30 & echo done"], cwd=tmp_path, env=dict(os.environ))
    stdout, stderr = CappedBytes(1024), CappedBytes(1024)

    with anyio.fail_after(10):
        finished = await run_captured(
            command, stdout=stdout, stderr=stderr, time_limit=30, drain_grace=0.2, gather_seconds=0.001
        )
    os.killpg(finished.pid, signal.SIGKILL)  # the sleep, which kept the pipe open

    assert finished.returncode == 0 and finished.output_abandoned
    assert bytes(stdout.data) == b"done\n"


async def test_the_exit_of_the_child_ends_a_pause_for_more_output_at_once(tmp_path: Path) -> None:
    """After a small chunk the reader pauses for more; the child's exit must end that pause, or every search would
    end a pause late (here the pause is an hour: the test's deadline is what a late end would break)."""
    command = Command(argv=["sh", "-c", "echo first; sleep 0.2; echo last"], cwd=tmp_path, env=dict(os.environ))
    stdout, stderr = Counted(), CappedBytes(1024)

    with anyio.fail_after(10):
        finished = await run_captured(command, stdout=stdout, stderr=stderr, time_limit=30, gather_seconds=3600)

    assert finished.returncode == 0
    assert bytes(stdout.data) == b"first\nlast\n"
