"""stdio read and written on the event loop: whole lines in order, writes that wait instead of blocking, the host's
descriptors left as they were, and hosts that hand over sockets (Node) or a file still served."""

from __future__ import annotations

import fcntl
import json
import os
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Generator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.serve.jsonrpc_guard import GuardedLines
from mcp_subagents.serve.stdio_streams import (
    WRITE_QUEUE_MESSAGES,
    _nonblocking_writer,  # pyright: ignore[reportPrivateUsage]
    _wire_streams,  # pyright: ignore[reportPrivateUsage]
)
from tests.support import server_environment

pytestmark = pytest.mark.anyio


@contextmanager
def pipe() -> Generator[tuple[int, int]]:
    read_end, write_end = os.pipe()
    try:
        yield read_end, write_end
    finally:
        for fd in (read_end, write_end):
            try:
                os.close(fd)
            except OSError:
                pass


async def test_lines_come_whole_however_the_bytes_arrive(tmp_path: Path) -> None:
    with pipe() as (read_end, write_end):
        lines: list[str] = []

        async def read_all() -> None:
            async for line in GuardedLines(read_end):
                lines.append(line)

        async with anyio.create_task_group() as group:
            group.start_soon(read_all)
            for piece in (b'{"a": "caf', "é".encode()[:1], "é".encode()[1:] + b'"}\n{"b"', b": 2}\n", b"last"):
                os.write(write_end, piece)
                await anyio.wait_all_tasks_blocked()
            os.close(write_end)

    assert lines == ['{"a": "café"}\n', '{"b": 2}\n', "last"]


async def test_a_message_larger_than_the_pipe_waits_for_the_reader_and_arrives_intact() -> None:
    message = json.dumps({"text": "x" * (3 * 1024 * 1024)}) + "\n"
    with pipe() as (read_end, write_end), ExitStack() as stack:
        writer = _nonblocking_writer(write_end, stack)
        assert writer is not None
        received = bytearray()
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(writer.write, message)
                await anyio.wait_all_tasks_blocked()  # the pipe is full: the writer waits on the loop
                assert not received
                while len(received) < len(message):
                    await anyio.wait_readable(read_end)
                    received += os.read(read_end, 1 << 20)
        # The host's own descriptor (and the file description it shares) stays blocking.
        assert not fcntl.fcntl(write_end, fcntl.F_GETFL) & os.O_NONBLOCK
    assert received.decode() == message


async def test_messages_sent_while_the_host_reads_nothing_arrive_whole_and_in_order() -> None:
    """Senders do not wait for the wire while the queue has room; the writer puts out what is queued together."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    async def no_input() -> AsyncIterator[str]:
        return
        yield

    count = WRITE_QUEUE_MESSAGES // 2
    with pipe() as (read_end, write_end), ExitStack() as stack:
        writer = _nonblocking_writer(write_end, stack)
        assert writer is not None
        received = bytearray()
        with anyio.fail_after(30):
            async with _wire_streams(no_input(), writer) as (_, write_stream):
                for number in range(count):  # 1 KB each: far more than the pipe holds
                    notification = types.JSONRPCNotification(
                        jsonrpc="2.0", method="notifications/message", params={"n": number, "text": "x" * 1000}
                    )
                    await write_stream.send(SessionMessage(notification))
                await write_stream.aclose()
                while received.count(b"\n") < count:
                    await anyio.wait_readable(read_end)
                    received += os.read(read_end, 1 << 20)
    lines = received.decode().splitlines()
    assert [json.loads(line)["params"]["n"] for line in lines] == list(range(count))


async def test_a_message_that_cannot_be_encoded_goes_out_with_u_fffd_and_the_next_one_follows() -> None:
    """A lone surrogate in any message (the server cleans its results, but not everything passes there) used to
    end the writer, and with it the stdio server."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    async def no_input() -> AsyncIterator[str]:
        return
        yield

    with pipe() as (read_end, write_end), ExitStack() as stack:
        writer = _nonblocking_writer(write_end, stack)
        assert writer is not None
        received = bytearray()
        with anyio.fail_after(30):
            async with _wire_streams(no_input(), writer) as (_, write_stream):
                for text in ("half a pair \ud83d here", "fine"):
                    message = types.JSONRPCNotification(
                        jsonrpc="2.0", method="notifications/message", params={"data": {"t\udc80": text}}
                    )
                    await write_stream.send(SessionMessage(message))
                await write_stream.aclose()
                while received.count(b"\n") < 2:
                    await anyio.wait_readable(read_end)
                    received += os.read(read_end, 1 << 20)
    lines = received.decode("utf-8").splitlines()
    assert [json.loads(line)["params"]["data"] for line in lines] == [
        {"t\ufffd": "half a pair \ufffd here"},
        {"t\ufffd": "fine"},
    ]


async def test_a_socket_is_written_without_blocking_and_left_blocking() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs, ExitStack() as stack:
        writer = _nonblocking_writer(ours.fileno(), stack)
        assert writer is not None
        message = "y" * (4 * 1024 * 1024) + "\n"
        received = bytearray()
        theirs.setblocking(False)
        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(writer.write, message)
                while len(received) < len(message):
                    await anyio.wait_readable(theirs)
                    received += theirs.recv(1 << 20)
        assert ours.getblocking()
    assert received.decode() == message


def _exchange(stdin: Any, stdout: Any, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_subagents", "serve", "--log-level", "DEBUG"],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=env,
    )


REQUESTS = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
WIRE = b"".join(json.dumps(message).encode() + b"\n" for message in REQUESTS)


def _environment(tmp_path: Path) -> dict[str, str]:
    return server_environment(tmp_path, work=tmp_path / "work")


def _tool_names(output: bytes) -> list[str] | None:
    """The tool names of the tools/list answer in `output`; None until the whole answer is there."""
    for line in output.replace(b"\r", b"").split(b"\n")[:-1]:
        answer = json.loads(line)
        if answer.get("id") == 2:
            return [tool["name"] for tool in answer["result"]["tools"]]
    return None


def _read_until_listed(fd: int) -> list[str]:
    """Read the server's output until the tools/list answer is whole (bounded wait on the descriptor)."""
    output = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        while (names := _tool_names(output)) is None:
            if not selector.select(max(0.0, deadline - time.monotonic())):
                raise AssertionError(f"no tools/list answer; the server wrote {output!r}")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise AssertionError(f"the server closed its output early: {output!r}")
            output += chunk
    return names


def test_a_host_that_hands_over_sockets_is_served(tmp_path: Path) -> None:
    """Node hosts (Claude Code among them) give their children socket pairs, not pipes."""
    host_in, server_in = socket.socketpair()
    host_out, server_out = socket.socketpair()
    with host_in, host_out:
        with server_in, server_out:
            process = _exchange(server_in.fileno(), server_out.fileno(), _environment(tmp_path))
        host_in.sendall(WIRE)
        names = _read_until_listed(host_out.fileno())
        host_in.shutdown(socket.SHUT_WR)  # end of input: the server exits
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr.decode()
    assert names == ["Task", "TaskOutput", "TaskStop"]
    assert b"stdio: read and written on the event loop" in stderr


def test_a_terminal_as_stdout_is_served_the_ordinary_way(tmp_path: Path) -> None:
    """Neither a pipe nor a socket (here a terminal): the SDK's own reading and writing."""
    main, terminal = os.openpty()
    try:
        process = _exchange(subprocess.PIPE, terminal, _environment(tmp_path))
        os.close(terminal)
        assert process.stdin is not None
        process.stdin.write(WIRE)
        process.stdin.flush()
        names = _read_until_listed(main)
        _, stderr = process.communicate(timeout=30)
    finally:
        os.close(main)
    assert process.returncode == 0, stderr.decode()
    assert names == ["Task", "TaskOutput", "TaskStop"]
    assert b"stdio: stdout through the SDK's worker thread" in stderr
