"""Reaching a task that another process runs: each server process listens on a FIFO in the state directory, and
`mcp-subagents tasks stop|answer` or the dashboard writes one line into the FIFO of the process that runs the task
(named in the task's transcript header): `stop <task id>`, or `answer <task id> <question id> <allow|always|deny>
<where> <who>` for a permission question the task waits on.

The FIFO lives in `<state dir>/control/` (mode 0700) with mode 0600: only the user that owns the state directory
can write to it, the same user who could read every transcript there anyway.
"""

from __future__ import annotations

import errno
import logging
import os
import re
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import TaskGroup

from ..core.state import TASK_ID

logger = logging.getLogger(__name__)

MAX_LINE = 256
QUESTION_ID = re.compile(r"permission-[A-Za-z0-9_-]{8,64}")
WHO = re.compile(r"[A-Za-z0-9._@-]{1,64}")
CHOICES = ("allow", "always", "deny")
PLACES = {"cli": "mcp-subagents tasks answer", "dashboard": "the dashboard"}
"""Where an answer through the channel was given: the word on the line, and what the records say."""


class ControlError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class AnswerRequest:
    task_id: str
    question_id: str
    choice: str
    """allow, always or deny."""
    place: str
    """A key of `PLACES`."""
    by: str


class ControlHandler(Protocol):
    def stop(self, task_id: str) -> object: ...
    async def answer(self, request: AnswerRequest) -> object: ...


def control_dir(state_dir: Path) -> Path:
    return state_dir / "control"


class ControlChannel:
    """This process's FIFO. `open()` creates it; `serve()` reads requests until cancelled, then removes it."""

    def __init__(self, state_dir: Path, handler: ControlHandler) -> None:
        self._dir = control_dir(state_dir)
        self._handler = handler
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
        try:
            async with anyio.create_task_group() as group:
                await self._read(reader, group)
        finally:
            os.close(reader)
            os.close(keeper)
            self.path.unlink(missing_ok=True)

    async def _read(self, reader: int, group: TaskGroup) -> None:
        pending = b""
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
                self._handle(line, group)

    def _handle(self, line: bytes, group: TaskGroup) -> None:
        words = line.decode("utf-8", errors="replace").split()
        if len(words) == 2 and words[0] == "stop" and TASK_ID.fullmatch(words[1]):
            logger.info("control channel: stop requested for task %s", words[1])
            self._handler.stop(words[1])
            return
        request = _answer_request(words)
        if request is None:
            logger.warning("control channel: ignored a request that is neither 'stop' nor 'answer'")
            return
        group.start_soon(self._handler.answer, request)


def _answer_request(words: list[str]) -> AnswerRequest | None:
    if len(words) != 6 or words[0] != "answer":
        return None
    _, task_id, question_id, choice, place, by = words
    valid = (
        TASK_ID.fullmatch(task_id)
        and QUESTION_ID.fullmatch(question_id)
        and choice in CHOICES
        and place in PLACES
        and WHO.fullmatch(by)
    )
    return AnswerRequest(task_id, question_id, choice, place, by) if valid else None


def request_stop(state_dir: Path, control: str | None, task_id: str) -> None:
    """Ask the process whose channel is `control` to stop `task_id`; returns once the request is delivered.

    Raises:
        ControlError: the task's process has no channel (an older server) or is not listening any more.
    """
    _send(state_dir, control, task_id, f"stop {task_id}")


def request_answer(state_dir: Path, control: str | None, request: AnswerRequest) -> None:
    """Deliver the person's answer to the process that runs the task.

    Raises:
        ControlError: as `request_stop`, or the request is not one the channel takes.
    """
    words = ["answer", request.task_id, request.question_id, request.choice, request.place, request.by]
    if _answer_request(words) is None:
        raise ControlError(f"Not an answer the server takes: {' '.join(words)}")
    _send(state_dir, control, request.task_id, " ".join(words))


def _send(state_dir: Path, control: str | None, task_id: str, line: str) -> None:
    if not control or "/" in control or control.startswith("."):
        raise ControlError(
            f"Task {task_id} was started by a server without a control channel; reach it from its host instead"
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
        os.write(fd, f"{line}\n".encode())
    finally:
        os.close(fd)
