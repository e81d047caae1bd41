"""Stopping a task that another process runs: each server process listens on a FIFO in the state directory, and
`mcp-subagents tasks stop` or the dashboard writes `stop <task id>` into the FIFO of the process that runs it (named
in the task's transcript header).

The FIFO lives in `<state dir>/control/` (mode 0700) with mode 0600: only the user that owns the state directory
can write to it, the same user who could read every transcript there anyway.
"""

from __future__ import annotations

import errno
import logging
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

import anyio

from ..core.state import TASK_ID

logger = logging.getLogger(__name__)

MAX_LINE = 256


class ControlError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def control_dir(state_dir: Path) -> Path:
    return state_dir / "control"


class ControlChannel:
    """This process's FIFO. `open()` creates it; `serve()` reads stop requests until cancelled, then removes it."""

    def __init__(self, state_dir: Path, on_stop: Callable[[str], object]) -> None:
        self._dir = control_dir(state_dir)
        self._on_stop = on_stop
        self.name = f"{os.getpid()}-{secrets.token_hex(4)}.fifo"
        self.path = self._dir / self.name

    def open(self) -> None:
        """Create the FIFO (synchronous and quick, so task headers can name it from the start)."""
        self._dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self._dir, 0o700)
        os.mkfifo(self.path, 0o600)

    async def serve(self) -> None:
        # Opened non-blocking for reading, plus a writer of our own, so the read end never sees end-of-file
        # between two clients.
        reader = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        keeper = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        pending = b""
        try:
            while True:
                await anyio.wait_readable(reader)
                try:
                    chunk = os.read(reader, 4096)
                except BlockingIOError:
                    continue
                pending += chunk
                *lines, pending = pending.split(b"\n")
                if len(pending) > MAX_LINE:
                    pending = b""  # no request is this long: drop it rather than grow without bound
                for line in lines:
                    self._handle(line)
        finally:
            os.close(reader)
            os.close(keeper)
            self.path.unlink(missing_ok=True)

    def _handle(self, line: bytes) -> None:
        command, _, argument = line.decode("utf-8", errors="replace").strip().partition(" ")
        task_id = argument.strip()
        if command != "stop" or not TASK_ID.match(task_id):
            logger.warning("control channel: ignored a request that is not 'stop <task id>'")
            return
        logger.info("control channel: stop requested for task %s", task_id)
        self._on_stop(task_id)


def request_stop(state_dir: Path, control: str | None, task_id: str) -> None:
    """Ask the process whose channel is `control` to stop `task_id`; returns once the request is delivered.

    Raises:
        ControlError: the task's process has no channel (an older server) or is not listening any more.
    """
    if not control or "/" in control or control.startswith("."):
        raise ControlError(
            f"Task {task_id} was started by a server without a control channel; stop it from its host with TaskStop"
        )
    path = control_dir(state_dir) / control
    try:
        if not stat.S_ISFIFO(os.lstat(path).st_mode):
            raise ControlError(f"{path} is not a control channel")
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ControlError(f"The server that ran task {task_id} is gone; the task is not running") from None
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise ControlError(f"The server that ran task {task_id} is not listening any more") from None
        raise ControlError(f"Cannot reach the server of task {task_id}: {exc.strerror}") from None
    try:
        os.write(fd, f"stop {task_id}\n".encode())
    finally:
        os.close(fd)
