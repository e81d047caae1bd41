"""The one hook runner: a real bash, the event on stdin, and nothing of it left behind on timeout or cancellation."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from mcp_subagents.agent.hooks.runner import run_command_hook
from tests.processes import is_running, wait_until_gone

pytestmark = pytest.mark.anyio

ENV = {"PATH": os.environ["PATH"]}


async def test_the_event_arrives_on_stdin_and_the_exit_code_and_both_streams_come_back(tmp_path: Path) -> None:
    command = "read -r line; echo \"got $line\"; echo 'to stderr' >&2; exit 2"
    done = await run_command_hook(command, stdin=b'{"tool_name": "Bash"}\n', cwd=tmp_path, env=ENV, timeout_s=10)
    assert done.exit_code == 2 and not done.timed_out
    assert done.stdout == 'got {"tool_name": "Bash"}\n' and done.stderr == "to stderr\n"


async def test_the_hook_sees_only_the_environment_it_is_given(tmp_path: Path) -> None:
    done = await run_command_hook(
        'echo "${ANTHROPIC_API_KEY:-unset} $ONLY_THIS"',
        stdin=b"{}",
        cwd=tmp_path,
        env={**ENV, "ONLY_THIS": "here"},
        timeout_s=10,
    )
    assert done.stdout.strip() == "unset here"


async def test_a_timeout_kills_the_hook_and_what_it_started(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)

    async def read_pids() -> list[int]:
        return [int(pid) for pid in (await anyio.to_thread.run_sync(fifo.read_text)).split()]

    pids: list[int] = []

    async def collect() -> None:
        pids.extend(await read_pids())

    async with anyio.create_task_group() as group:
        group.start_soon(collect)
        done = await run_command_hook(
            f"sleep 1000 & echo \"$$ $!\" > '{fifo}'; wait", stdin=b"{}", cwd=tmp_path, env=ENV, timeout_s=0.5
        )
        assert done.timed_out and done.exit_code is None
    for pid in pids:
        await wait_until_gone(pid)


async def test_cancelling_the_caller_kills_the_hook(tmp_path: Path) -> None:
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    shells: list[int] = []
    async with anyio.create_task_group() as group:
        group.start_soon(
            lambda: run_command_hook(
                f"echo $$ > '{fifo}'; sleep 1000", stdin=b"{}", cwd=tmp_path, env=ENV, timeout_s=600
            )
        )
        with anyio.fail_after(10):
            shells.append(int(await anyio.to_thread.run_sync(fifo.read_text)))
        assert is_running(shells[0])
        group.cancel_scope.cancel()
    await wait_until_gone(shells[0])


async def test_a_hook_that_ignores_a_large_input_does_not_hang(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        done = await run_command_hook("exit 0", stdin=b"x" * 5_000_000, cwd=tmp_path, env=ENV, timeout_s=10)
    assert done.exit_code == 0


async def test_a_hook_that_cannot_start_says_why(tmp_path: Path) -> None:
    done = await run_command_hook("true", stdin=b"{}", cwd=tmp_path / "missing", env=ENV, timeout_s=10)
    assert done.exit_code is None and done.start_error is not None and "could not start the hook" in done.start_error
