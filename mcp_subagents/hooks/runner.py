"""`run_command_hook`: the one place a hook command is started.

The command runs under bash in its own process group, in the agent's working directory, with the event's JSON on
stdin and an environment without the provider keys; nothing else of the server's is inherited (no other file
descriptors, never the server's stdout). It runs through the tools' own runner (`tools._process.run_captured`):
on timeout or cancellation the whole group is killed, and output held open by something it left behind is not
waited for.

Where the Bash sandbox confines the run's commands, a hook command runs inside it too (the same filesystem, process
and network limits as the agent's Bash); a setting that makes the sandbox required refuses the hook when the sandbox
cannot run.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ToolError
from ..tools._process import CappedBytes, Command, run_captured

if TYPE_CHECKING:
    from ..sandbox import RunSandbox

MAX_CAPTURE_BYTES = 1_000_000
"""Of stdout and of stderr each; what a hook prints beyond this is dropped."""


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
    stdout, stderr = CappedBytes(MAX_CAPTURE_BYTES), CappedBytes(MAX_CAPTURE_BYTES)
    command = Command(argv=argv, cwd=cwd, env=env, stdin=stdin, what="the hook")
    try:
        finished = await run_captured(command, stdout=stdout, stderr=stderr, time_limit=timeout_s)
    except ToolError as exc:
        message = str(exc)  # "Could not start the hook: ...", placed mid-sentence where it is shown
        return HookProcess(exit_code=None, start_error=message[:1].lower() + message[1:])
    return HookProcess(
        exit_code=finished.returncode,
        stdout=stdout.data.decode("utf-8", errors="replace"),
        stderr=stderr.data.decode("utf-8", errors="replace"),
        timed_out=finished.timed_out,
    )


def _bash() -> str:
    return "/bin/bash" if os.path.exists("/bin/bash") else shutil.which("bash") or shutil.which("sh") or "/bin/sh"
