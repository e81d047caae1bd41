"""`run_command_hook`: the one place a hook command is started.

The command runs under bash in its own process group, in the agent's working directory, with the event's JSON on
stdin and an environment without the provider keys; nothing else of the server's is inherited (no other file
descriptors, never the server's stdout). On timeout or cancellation the whole group is killed.

Where the Bash sandbox confines the run's commands, a hook command runs inside it too (the same filesystem, process
and network limits as the agent's Bash); a setting that makes the sandbox required refuses the hook when the sandbox
cannot run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import ByteReceiveStream, Process

if TYPE_CHECKING:
    from ..sandbox import RunSandbox

MAX_CAPTURE_BYTES = 1_000_000
"""Of stdout and of stderr each; what a hook prints beyond this is dropped."""
KILL_GRACE_SECONDS = 1.0
OUTPUT_DRAIN_GRACE_SECONDS = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class HookProcess:
    """How a hook command ended."""

    exit_code: int | None
    """None when it did not run to an end (timed out, or could not start)."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    start_error: str | None = None


async def run_command_hook(
    command: str,
    *,
    stdin: bytes,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    sandbox: RunSandbox | None = None,
) -> HookProcess:
    """Run one hook command to its end, or until `timeout_s` passes (then its process group is killed); inside the
    run's `sandbox` when there is one."""
    if sandbox is None:
        return await _run([_bash(), "-c", command], stdin=stdin, cwd=cwd, env=env, timeout_s=timeout_s)
    placement = sandbox.placement(command, leave_requested=False)
    if placement.refusal:
        return HookProcess(exit_code=None, start_error=f"the hook was not run: {placement.refusal}")
    if not placement.sandboxed:  # sandbox.excludedCommands names it
        return await _run([_bash(), "-c", command], stdin=stdin, cwd=cwd, env=env, timeout_s=timeout_s)
    async with sandbox.wrap(command, env=env, cwd=cwd) as wrapped:
        return await _run(wrapped.argv, stdin=stdin, cwd=cwd, env=wrapped.env, timeout_s=timeout_s)


async def _run(argv: list[str], *, stdin: bytes, cwd: Path, env: Mapping[str, str], timeout_s: float) -> HookProcess:
    started: list[Process] = []
    try:
        with anyio.CancelScope(shield=True):  # cancelled mid-spawn, the shell would be orphaned
            started.append(
                await anyio.open_process(argv, cwd=cwd, env=dict(env), stdin=subprocess.PIPE, start_new_session=True)
            )
    except OSError as exc:
        return HookProcess(exit_code=None, start_error=f"could not start the hook: {exc}")
    process = started[0]
    stdout, stderr = bytearray(), bytearray()
    timed_out = False
    try:
        async with anyio.create_task_group() as group:
            drained = anyio.Event()

            async def drain() -> None:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(_collect, process.stdout, stdout)
                    readers.start_soon(_collect, process.stderr, stderr)
                drained.set()

            group.start_soon(_feed, process, stdin)
            group.start_soon(drain)
            with anyio.move_on_after(timeout_s) as deadline:
                await process.wait()
            if deadline.cancelled_caught:
                timed_out = True
                await _kill_group(process)
            # A background process the hook started may hold the pipes open: its output is not waited for.
            with anyio.move_on_after(OUTPUT_DRAIN_GRACE_SECONDS):
                await drained.wait()
            group.cancel_scope.cancel()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _kill_group(process)
            await process.aclose()
        raise
    with anyio.CancelScope(shield=True):
        await process.aclose()
    return HookProcess(
        exit_code=None if timed_out else process.returncode,
        stdout=stdout.decode("utf-8", errors="replace"),
        stderr=stderr.decode("utf-8", errors="replace"),
        timed_out=timed_out,
    )


def _bash() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else shutil.which("bash") or shutil.which("sh") or "/bin/sh"


async def _feed(process: Process, data: bytes) -> None:
    stream = process.stdin
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the hook did not read its input; that is its business
    finally:
        try:
            await stream.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass


async def _collect(stream: ByteReceiveStream | None, into: bytearray) -> None:
    if stream is None:
        return
    async for chunk in stream:
        if len(into) < MAX_CAPTURE_BYTES:
            into += chunk[: MAX_CAPTURE_BYTES - len(into)]


async def _kill_group(process: Process) -> None:
    """SIGTERM the hook's process group; SIGKILL what is left once it exits or the grace is over."""
    _signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_SECONDS):
        await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(group_id: int, signum: signal.Signals) -> None:
    try:
        os.killpg(group_id, signum)
    except (ProcessLookupError, PermissionError):
        pass
