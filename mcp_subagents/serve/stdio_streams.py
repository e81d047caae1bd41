"""stdin and stdout for the stdio transport, read and written on the event loop instead of a worker thread.

The SDK's `stdio_server()` reads and writes through anyio's file wrapper, so every message sent costs two thread
hops (write, then flush) and every line read one. A Task sends four or five notifications per model round trip,
and those hops were a fifth of the server's CPU. Here the wire descriptors are read when epoll says they are
readable and written without blocking: a pipe through a descriptor of its own opened with O_NONBLOCK (Linux's
/proc/self/fd), a socket (what Node hosts hand their children) with MSG_DONTWAIT. Neither changes the flags of the
file description the host shares with us. Messages sent wait in a queue and go out together (`_wire_streams`).
Anything else (a terminal, a file, another OS) keeps the SDK's path.

As in the SDK, fd 0 reads the null device and fd 1 writes to stderr while serving, so tools' child processes can
neither read the protocol nor write into it, and both are restored afterwards.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import stat
import sys
from collections.abc import AsyncGenerator, AsyncIterable, Callable
from contextlib import ExitStack, asynccontextmanager
from typing import Any

import anyio

from .early_answers import ACKNOWLEDGED
from .early_check import EarlyCheck
from .host_pipes import is_wire
from .jsonrpc_guard import wire_json

logger = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
WRITE_QUEUE_MESSAGES = 256
"""Messages that may wait for stdout before a sender waits as well: the host reads slower than we write."""


class LineWriter:
    """Writes text without blocking the loop: what does not fit waits until the descriptor is writable again."""

    def __init__(self, fd: int, send: Callable[[memoryview], int]) -> None:
        self._fd = fd
        self._send = send

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                sent = self._send(data)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            data = data[sent:]

    async def flush(self) -> None:
        """Nothing is buffered here."""


def _nonblocking_writer(fd: int, stack: ExitStack) -> LineWriter | None:
    """A writer for the wire behind `fd` that cannot block, or None when this kind of file has none."""
    mode = os.fstat(fd).st_mode
    if stat.S_ISSOCK(mode):
        sock = socket.socket(fileno=os.dup(fd))
        stack.callback(sock.close)
        return LineWriter(sock.fileno(), lambda data: sock.send(data, socket.MSG_DONTWAIT))
    if stat.S_ISFIFO(mode) and sys.platform == "linux":
        try:
            own = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        stack.callback(os.close, own)
        return LineWriter(own, lambda data: os.write(own, data))
    return None


def _divert(fd: int, stack: ExitStack, replacement: Callable[[], int]) -> int:
    """Move the wire behind `fd` to a private close-on-exec descriptor, point `fd` at `replacement()`, and put
    the wire back when the stack closes. Returns the private descriptor."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    stack.callback(os.close, private)
    stack.callback(os.dup2, private, fd)
    diversion = replacement()
    try:
        os.dup2(diversion, fd)
    finally:
        os.close(diversion)
    return private


def _stderr_or_null() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


@asynccontextmanager
async def stdio_server(check: EarlyCheck | None = None) -> AsyncGenerator[tuple[Any, Any]]:
    """Streams of messages like the SDK's `stdio_server()`, with every malformed request that carries an id
    answered (`jsonrpc_guard`), stdin read on the event loop, and, when both are pipes or sockets, stdout written on
    it too, from a queue (`_wire_streams`); for a terminal or a file the SDK writes, through its worker thread.
    `check` (after early answers: `early_answers`) puts its lines first and sees every line and answer."""
    from .jsonrpc_guard import GuardedLines, guarded_stdio

    with ExitStack() as stack:
        claimed = _claim(stack)
        if claimed is None:
            logger.debug("stdio: stdout through the SDK's worker thread (stdin or stdout is not a pipe or socket)")
            stack.close()
            async with guarded_stdio() as pair:
                yield pair
            return
        private_in, writer = claimed
        lines = GuardedLines(private_in)
        stack.callback(lines.restore)
        if check is not None:
            lines.read_first("".join(check.first_lines()).encode())
        logger.debug("stdio: read and written on the event loop")
        async with _wire_streams(lines, writer, check) as (read_stream, write_stream):
            lines.answer = write_stream.send
            yield read_stream, write_stream


@asynccontextmanager
async def _wire_streams(
    lines: AsyncIterable[str], writer: LineWriter, check: EarlyCheck | None = None
) -> AsyncGenerator[tuple[Any, Any]]:
    """The streams of messages the SDK's server runs on, made as its `stdio_server()` makes them, except on the
    way out: a message waits in a queue instead of for the writer, and whatever is queued when the writer comes
    round goes out in one write. A Task sends a few notifications per model round trip; handing each over and
    writing it alone cost about a tenth of the server's CPU with ten Tasks at once."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](WRITE_QUEUE_MESSAGES)

    async def read_messages() -> None:
        async with read_send:
            async for line in lines:
                if check is not None:
                    check.seen(line)
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # the SDK's server answers what it cannot parse
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def write_messages() -> None:
        async with write_receive:
            async for message in write_receive:
                batch = [message]
                while True:
                    try:
                        batch.append(write_receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                if check is not None:
                    batch = [kept for kept in batch if not await _early_replay(check, kept)]
                if batch:
                    await writer.write("".join(_wire_line(kept) for kept in batch))

    async with anyio.create_task_group() as group:
        group.start_soon(read_messages)
        group.start_soon(write_messages)
        yield read_stream, write_stream


async def _early_replay(check: EarlyCheck, message: Any) -> bool:
    """Show `check` an answer; True when it answers the server's own replay and is not for the host."""
    import mcp_types as types

    sent = message.message
    if isinstance(sent, types.JSONRPCNotification) and sent.method == ACKNOWLEDGED:
        return await check.acknowledged(sent.params)
    if not isinstance(sent, types.JSONRPCResponse):
        return False
    return await check.answered(sent.id, sent.result)


def _wire_line(message: Any) -> str:
    return wire_json(message.message) + "\n"


def _claim(stack: ExitStack) -> tuple[int, LineWriter] | None:
    """The private descriptor stdin is read from and a non-blocking writer for stdout, both diverted from fd 0 and
    fd 1 for as long as `stack` is open; None when they are not both pipes or sockets."""
    try:
        if not (is_wire(0) and is_wire(1)):
            return None
        writer = _nonblocking_writer(1, stack)
        if writer is None:
            return None
        private_in = _divert(0, stack, lambda: os.open(os.devnull, os.O_RDONLY))
        _divert(1, stack, _stderr_or_null)
    except OSError:
        return None
    return private_in, writer
