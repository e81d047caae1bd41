"""Reading a blocking socket exactly: what the model processes' frames and the warm server's hello both need.
Only the standard library (the warm server's relay imports it before anything else)."""

from __future__ import annotations

import socket


def receive_exactly(sock: socket.socket, size: int) -> bytes:
    """`size` bytes from `sock`.

    Raises:
        EOFError: the other end closed the socket first.
    """
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other end closed the socket")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
