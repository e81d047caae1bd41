"""Model requests spread over more than one core when many tasks run at once.

A model round trip costs the server a few milliseconds of CPU, about half of it in the provider SDK (HTTP, the event
stream, parsing). One event loop runs on one core, so with dozens of tasks at once that CPU, not the API, set the
pace. `SpreadModel` sends requests from the server's own adapter while fewer than `spread_at` are in flight there;
beyond that it starts model processes (`worker`), each with an adapter of its own, and sends the overflow to the
least busy one. A few tasks at once never start one, so a small server stays one process.

A model process that cannot start is reported once and not tried again; the requests of one that dies later are
sent again from the server, and a new one starts when the load comes back.
"""

from __future__ import annotations

import itertools
import logging
import socket
import subprocess
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import Process, SocketStream

from ..core.errors import ModelAPIError
from ..core.processes import own_module_command
from .base import Model, ModelRequest, ModelResponse
from .frames import FrameError, FrameReader, FrameWriter
from .providers import ProviderConfig, WorkerStartup

logger = logging.getLogger(__name__)

SPREAD_AT = 8
"""Requests in flight in the server's own adapter before the overflow goes to model processes."""
_START_TIMEOUT = 120.0
"""The SDK's import and the offline rehearsal take a few seconds even on a slow machine."""
_STOP_TIMEOUT = 5.0

StartSoon = Callable[..., object]
"""A task group's `start_soon`: where the model processes' readers run."""


class ModelProcessError(ModelAPIError):
    """A model process stopped, or could not start, while a request needed it."""


@dataclass(slots=True)
class _Pending:
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: ModelResponse | ModelAPIError | None = None


class ModelProcess:
    """One model process, seen from the server: its socket, its process and the requests it is answering."""

    def __init__(self, process: Process, stream: SocketStream) -> None:
        self.process = process
        self._stream = stream
        self._reader = FrameReader(stream)
        self._writer = FrameWriter(stream)
        self._pending: dict[int, _Pending] = {}
        self._numbers = itertools.count()
        self.alive = True
        self.answered = 0
        """Requests this process has answered (with a response or the provider's error)."""

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @classmethod
    async def start(cls, startup: WorkerStartup) -> ModelProcess:
        """Start a model process and wait until its adapter is built.

        Raises:
            ModelProcessError: it could not be started, or reported that it could not build the adapter.
        """
        ours, theirs = socket.socketpair()
        try:
            process = await anyio.open_process(
                own_module_command("mcp_subagents.models.worker"),
                stdin=theirs.fileno(),
                stdout=subprocess.DEVNULL,  # stdout is the protocol
                stderr=None,  # its log lines join the server's
                start_new_session=True,  # a Ctrl-C meant for the server's group is the server's to handle
            )
        except OSError as exc:
            ours.close()
            raise ModelProcessError(f"could not start a model process: {exc}") from None
        finally:
            theirs.close()
        ours.setblocking(False)
        stream = await SocketStream.from_socket(ours)
        started = cls(process, stream)
        try:
            await started._writer.send(startup)
            with anyio.fail_after(_START_TIMEOUT):
                reply = await started._reader.receive()
        except (TimeoutError, anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, FrameError) as exc:
            await started.stop()
            raise ModelProcessError(f"a model process did not start: {type(exc).__name__} {exc}".strip()) from None
        except BaseException:
            await started.stop()
            raise
        match reply:
            case ("ready", str()):
                return started
            case ("failed", str(reason)):
                await started.stop()
                raise ModelProcessError(f"a model process could not build the provider's client: {reason}")
            case _:
                await started.stop()
                raise ModelProcessError("a model process answered its start with something unknown")

    async def request(self, request: ModelRequest) -> ModelResponse:
        """The answer to `request` from this process; cancelling stops the request there too.

        Raises:
            ModelAPIError: the provider's error, as the adapter raised it in the process.
            ModelProcessError: the process stopped before it answered.
        """
        if not self.alive:
            raise ModelProcessError("the model process has stopped")
        number = next(self._numbers)
        pending = self._pending[number] = _Pending()
        try:
            await self._writer.send(("request", number, request))
            await pending.done.wait()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ModelProcessError(f"the model process stopped: {type(exc).__name__}") from None
        except BaseException:
            if not pending.done.is_set() and self.alive:
                with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                    try:
                        await self._writer.send(("cancel", number))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass
            raise
        finally:
            del self._pending[number]
        outcome = pending.outcome
        if isinstance(outcome, ModelResponse):
            return outcome
        raise outcome or ModelProcessError("the model process stopped before it answered")

    async def read_answers(self) -> None:
        """Hand each answer to its request until the process closes its end; then fail whatever is left."""
        reason = "closed its connection"
        try:
            while True:
                frame = await self._reader.receive()
                match frame:
                    case ("answer", int(number), ModelResponse() as response):
                        self._settle(number, response)
                    case ("error", int(number), ModelAPIError() as error):
                        self._settle(number, error)
                    case _:
                        reason = "sent a frame that is not an answer"
                        break
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        except FrameError as exc:
            reason = str(exc)
        finally:
            self.alive = False
            code = self.process.returncode
            ended = f" (exit code {code})" if code is not None else ""
            for pending in self._pending.values():
                if not pending.done.is_set():
                    pending.outcome = ModelProcessError(
                        f"the model process (pid {self.process.pid}) {reason}{ended} before it answered", retryable=True
                    )
                    pending.done.set()
            await self.stop()

    def _settle(self, number: int, outcome: ModelResponse | ModelAPIError) -> None:
        pending = self._pending.get(number)
        self.answered += 1
        if pending is not None:  # else the request was cancelled meanwhile
            pending.outcome = outcome
            pending.done.set()

    async def stop(self) -> None:
        """Close the socket, which ends the process; kill it if it has not ended after a few seconds."""
        self.alive = False
        with anyio.CancelScope(shield=True):
            await self._stream.aclose()
            with anyio.move_on_after(_STOP_TIMEOUT):
                await self.process.wait()
                return
            self.process.kill()
            await self.process.wait()


class SpreadModel:
    """A `Model` that sends the overflow of a busy server to model processes (see the module docstring)."""

    def __init__(
        self,
        local: Model,
        *,
        config: ProviderConfig,
        deadline: float,
        max_retries: int,
        processes: int,
        start_soon: StartSoon,
        spread_at: int = SPREAD_AT,
        log_level: str = "WARNING",
    ) -> None:
        self.local = local
        self._startup = WorkerStartup(config=config, deadline=deadline, max_retries=max_retries, log_level=log_level)
        self._slots = processes
        self._start_soon = start_soon
        self._spread_at = spread_at
        self._local_in_flight = 0
        self._starting = 0
        self._ready: list[ModelProcess] = []
        self._unavailable = False
        self._closed = False
        self._changed = anyio.Event()

    @property
    def provider(self) -> str:
        return self.local.provider

    @property
    def model_processes(self) -> tuple[ModelProcess, ...]:
        """The model processes ready now."""
        return tuple(self._ready)

    async def wait_for_change(self) -> None:
        """Until a model process is ready, stops, or fails to start."""
        await self._changed.wait()

    def _note_change(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        if self._local_in_flight >= self._spread_at:
            self._start_processes()
            process = min(self._ready, key=lambda ready: ready.in_flight, default=None)
            if process is not None:
                try:
                    return await process.request(request)
                except ModelProcessError as exc:  # a model request is safe to send again
                    logger.warning("%s; the request is sent again from the server process", exc.message)
        self._local_in_flight += 1
        try:
            return await self.local.request(request)
        finally:
            self._local_in_flight -= 1

    def _start_processes(self) -> None:
        missing = self._slots - len(self._ready) - self._starting
        if missing <= 0 or self._unavailable or self._closed:
            return
        for _ in range(missing):
            self._starting += 1
            self._start_soon(self._keep_process, name="model process")

    async def _keep_process(self) -> None:
        try:
            process = await ModelProcess.start(self._startup)
        except ModelProcessError as exc:
            if not self._unavailable:
                logger.warning("%s; every model request is sent from the server process", exc.message)
            self._unavailable = True
            self._note_change()
            return
        finally:
            self._starting -= 1
        logger.info("model process %d started: the model requests of a busy server are spread", process.process.pid)
        self._ready.append(process)
        self._note_change()
        try:
            await process.read_answers()
        finally:
            self._ready.remove(process)
            self._note_change()
            if not self._closed:
                stopped = process.process
                logger.warning("model process %d stopped (exit code %s)", stopped.pid, stopped.returncode)

    async def aclose(self) -> None:
        self._closed = True
        for process in list(self._ready):
            await process.stop()
        close: Callable[[], Coroutine[Any, Any, None]] | None = getattr(self.local, "aclose", None)
        if close is not None:
            await close()
