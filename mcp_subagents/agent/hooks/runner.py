"""`run_command_hook`: the one place a hook command is started.

The command runs under bash in its own process group, in the agent's working directory, with the event's JSON on
stdin and an environment without the provider keys; nothing else of the server's is inherited (no other file
descriptors, never the server's stdout). It runs through the tools' own runner (`tools._process.run_captured`):
on timeout or cancellation the whole group is killed, and output held open by something it left behind is not
waited for.

As in Claude Code, a hook runs outside the Bash sandbox: the sandbox confines the agent's Bash, and hooks are the
person's own commands from trusted settings and agent files (untrusted ones never get here). What makes that safe
is that a subagent cannot change them: the settings files and the scripts hook commands name are read-only inside
the sandbox and asked for when Write or Edit would change them (`hook_scripts`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import ToolError
from ...core.subprocesses import CappedBytes, Command, run_captured

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
) -> HookProcess:
    """Run one hook command to its end, or until `timeout_s` passes (then its process group is killed)."""
    return await _run([_bash(), "-c", command], stdin=stdin, cwd=cwd, env=env, timeout_s=timeout_s)


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
