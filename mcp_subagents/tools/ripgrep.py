"""Running ripgrep, and what the Glob and Grep tools share: walk options and the search root."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from ..core.errors import ToolError
from ..core.processes import signal_group
from ..core.subprocesses import CappedBytes, Command, Finished, find_ripgrep, run_captured
from .base import ToolContext
from .paths import resolve_path
from .record_stream import RecordConsumer, RecordStream

RIPGREP_TIMEOUT_SECONDS = 60.0
MAX_RIPGREP_OUTPUT_BYTES = 16 * 1024 * 1024
MAX_RIPGREP_STDERR_BYTES = 64 * 1024
OUTPUT_GATHER_SECONDS = 0.005
"""After a small piece of rg's output, how long the rest may pile up before it is read (see `_process._OwnPipe`):
rg's exit ends the wait, so this costs no time at the end. With few matches, rg writes a file's lines now and then;
each read at 1 ms woke the loop a hundred times in a search of 130 ms, about 25 ms of the server's CPU."""

# Shared by both tools: .gitignore counts even outside a repository, and hidden files are searched (Glob leaves them
# out when its pattern cannot match them).
WALK_OPTIONS_WITHOUT_HIDDEN = ("--no-config", "--no-require-git", "--color", "never")
WALK_OPTIONS = (*WALK_OPTIONS_WITHOUT_HIDDEN, "--hidden")
# Must come after any other --glob: with rg, the last matching glob wins.
SKIP_GIT_DIRECTORY = ("--glob", "!.git")


@dataclass(frozen=True, slots=True)
class RipgrepOutput:
    returncode: int
    stderr: bytes
    printed: bool
    """rg printed something on stdout."""
    stdout_overflowed: bool
    """rg printed more than MAX_RIPGREP_OUTPUT_BYTES; the rest was dropped."""

    def error_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace").strip()


async def run_ripgrep(
    ctx: ToolContext, arguments: Sequence[str], *, cwd: Path, separator: bytes, consumer: RecordConsumer
) -> RipgrepOutput:
    """Run rg with `arguments`, feeding its output's records (each ending in `separator`) to `consumer` while rg
    runs.

    Raises:
        ToolError: rg could not start or timed out.
    """
    stdout = RecordStream(separator, consumer, MAX_RIPGREP_OUTPUT_BYTES)
    stderr = CappedBytes(MAX_RIPGREP_STDERR_BYTES)
    command = Command(argv=[find_ripgrep(), *arguments], cwd=cwd, env=ctx.env, what="ripgrep")
    outcome: Finished | ToolError = ToolError("ripgrep did not run.")
    async with anyio.create_task_group() as group:
        group.start_soon(stdout.work)
        try:
            outcome = await run_captured(
                command,
                stdout=stdout,
                stderr=stderr,
                time_limit=RIPGREP_TIMEOUT_SECONDS,
                gather_seconds=OUTPUT_GATHER_SECONDS,
            )
        except ToolError as exc:
            outcome = exc  # raised below: raised inside the task group, it would come out wrapped in a group
        finally:
            stdout.close()
    if isinstance(outcome, ToolError):
        raise outcome
    finished = outcome
    if finished.timed_out:
        raise ToolError(
            f"The search timed out after {RIPGREP_TIMEOUT_SECONDS:.0f} s. Search a narrower path, or filter "
            "files with glob or type."
        )
    signal_group(finished.pid, signal.SIGKILL)  # rg starts nothing, but nothing a search starts may outlive it
    returncode = finished.returncode if finished.returncode is not None else -1
    return RipgrepOutput(returncode, bytes(stderr.data), stdout.printed, stdout.overflowed)


def search_root(ctx: ToolContext, raw: str | None) -> Path:
    path = resolve_path(ctx, raw, purpose="read") if raw else ctx.cwd
    if not path.exists():
        raise ToolError(f"Path does not exist: {path}. Current working directory: {ctx.cwd}")
    return path
