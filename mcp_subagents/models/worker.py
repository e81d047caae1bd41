"""A model process: sends model requests for the server, so that with many tasks at once the provider SDK's work
(HTTP, streaming, parsing) runs on another core.

Started by `spread.ModelProcess` (through `processes.own_module_command`, so the project's files are not on its
import path) with one end of a socket pair as its stdin. The first frame is a `WorkerStartup`; the process builds
the same adapter the server would (the SDK import and the offline rehearsal included), answers ("ready", provider)
or ("failed", reason), and then serves:

    ("request", id, ModelRequest)   ->  ("answer", id, ModelResponse) or ("error", id, ModelAPIError)
    ("cancel", id)                  ->  the request stops (its connection is dropped); no answer follows

Each request runs the adapter's whole fault policy (retries, backoff, the deadline) here, so only its outcome
crosses. The process exits when the socket closes, which is also what happens when the server dies.
"""

from __future__ import annotations

import logging
import os
import socket
import sys

import anyio
from anyio.abc import SocketStream, TaskGroup

from ..core.errors import ModelAPIError, SubagentsError
from ..core.processes import forbid_inspection
from .base import Model, ModelRequest
from .frames import FrameReader, FrameWriter, receive_frame_blocking, send_frame_blocking
from .providers import WorkerStartup, build_model

logger = logging.getLogger("mcp_subagents.model_process")


def main() -> int:
    sock = socket.socket(fileno=os.dup(0))
    # Nothing else may read the socket, and nothing of the server's is left on the standard streams.
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.close(devnull)
    forbid_inspection()  # like the server, this process holds the API key
    try:
        startup = receive_frame_blocking(sock)
    except (EOFError, OSError):
        return 0
    if not isinstance(startup, WorkerStartup):
        return 2
    logging.basicConfig(
        stream=sys.stderr, level=startup.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    model: Model | None = None
    try:
        model = build_model(startup.config, startup.deadline, startup.max_retries)
        reply: tuple[str, str] = ("ready", model.provider)
    except Exception as exc:
        reply = ("failed", f"{type(exc).__name__}: {exc}")
    try:
        send_frame_blocking(sock, reply)
    except OSError:  # the server went away while the SDK was imported
        return 0
    if model is None:
        return 1
    sock.setblocking(False)
    anyio.run(_serve, sock, model)
    return 0


async def _serve(sock: socket.socket, model: Model) -> None:
    stream = await SocketStream.from_socket(sock)
    reader, writer = FrameReader(stream), FrameWriter(stream)
    running: dict[int, anyio.CancelScope] = {}
    try:
        async with anyio.create_task_group() as group:
            while True:
                try:
                    frame = await reader.receive()
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
                    break
                _dispatch(frame, group, running, model, writer)
            group.cancel_scope.cancel()
    finally:
        close = getattr(model, "aclose", None)
        if close is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await close()


def _dispatch(
    frame: object, group: TaskGroup, running: dict[int, anyio.CancelScope], model: Model, writer: FrameWriter
) -> None:
    match frame:
        case ("request", int(number), ModelRequest() as request):
            scope = running[number] = anyio.CancelScope()
            group.start_soon(_answer, number, request, scope, running, model, writer)
        case ("cancel", int(number)):
            scope = running.get(number)
            if scope is not None:
                scope.cancel()
        case _:
            raise SystemExit(f"the server sent a frame that is not ours: {frame!r:.200}")


async def _answer(
    number: int,
    request: ModelRequest,
    scope: anyio.CancelScope,
    running: dict[int, anyio.CancelScope],
    model: Model,
    writer: FrameWriter,
) -> None:
    try:
        with scope:
            try:
                reply: tuple[object, ...] = ("answer", number, await model.request(request))
            except ModelAPIError as exc:
                reply = ("error", number, exc)
            except SubagentsError as exc:
                reply = ("error", number, ModelAPIError(exc.message))
            except Exception as exc:
                logger.exception("a model request failed unexpectedly")
                reply = ("error", number, ModelAPIError(f"the model request failed: {type(exc).__name__}: {exc}"))
            await writer.send(reply)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the server is gone; the loop ends at the socket's end
    finally:
        running.pop(number, None)


if __name__ == "__main__":
    raise SystemExit(main())
