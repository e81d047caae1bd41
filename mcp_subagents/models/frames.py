"""Length-prefixed pickled frames: how the server and its model processes talk, over a socket pair only they hold.

Both ends are this package, so pickle is safe here; what a model sends travels inside the frames as plain strings.
"""

from __future__ import annotations

import pickle
import socket
import struct

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

from ..core.sockets import receive_exactly

_HEADER = struct.Struct("!I")
MAX_FRAME = 1 << 30
"""A request carries the whole conversation, which compaction keeps far below this."""


class FrameError(Exception):
    """The other end sent something that is not a frame."""


def encode_frame(value: object) -> bytes:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > MAX_FRAME:
        raise FrameError(f"a frame of {len(payload)} bytes is over the limit of {MAX_FRAME}")
    return _HEADER.pack(len(payload)) + payload


class FrameWriter:
    """Sends whole frames; several tasks may send at once (their frames never interleave)."""

    def __init__(self, stream: ByteSendStream) -> None:
        self._stream = stream
        self._lock = anyio.Lock()

    async def send(self, value: object) -> None:
        frame = encode_frame(value)
        async with self._lock:
            await self._stream.send(frame)


class FrameReader:
    def __init__(self, stream: ByteReceiveStream) -> None:
        self._stream = BufferedByteReceiveStream(stream)

    async def receive(self) -> object:
        """The next frame's value.

        Raises:
            anyio.EndOfStream: the other end closed between frames.
            anyio.IncompleteRead: it closed part-way through one.
            FrameError: the frame is too long or does not unpickle.
        """
        length = _payload_length(await self._stream.receive_exactly(_HEADER.size))
        return _decode(await self._stream.receive_exactly(length))


def send_frame_blocking(sock: socket.socket, value: object) -> None:
    sock.sendall(encode_frame(value))


def receive_frame_blocking(sock: socket.socket) -> object:
    """The next frame, read with blocking calls (before an event loop runs).

    Raises:
        EOFError: the other end closed.
        FrameError: as `FrameReader.receive`.
    """
    return _decode(receive_exactly(sock, _payload_length(receive_exactly(sock, _HEADER.size))))


def _payload_length(header: bytes) -> int:
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME:
        raise FrameError(f"a frame of {length} bytes announced, over the limit of {MAX_FRAME}")
    return length


def _decode(payload: bytes) -> object:
    try:
        return pickle.loads(payload)
    except Exception as exc:
        raise FrameError(f"a frame that does not unpickle: {type(exc).__name__}: {exc}") from None
