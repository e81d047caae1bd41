"""The stdio transport for an agent's MCP servers: the server runs in its own process group, and when the run ends
the whole group goes, including what the server started and left behind.

The SDK's own stdio client kills the process tree only when the server does not exit by itself once its stdin
closes; a server that exits politely can leave its children running. An agent's server must leave nothing behind,
so this transport (same newline-delimited JSON-RPC, same SDK message types) always ends the group.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from anyio.streams.text import TextReceiveStream
from mcp.shared.message import SessionMessage

EXIT_GRACE_S = 2.0
"""How long a server may take to exit by itself once its stdin is closed, as the MCP lifecycle asks."""
TERM_GRACE_S = 1.0
"""Between SIGTERM and SIGKILL of the server's process group."""


@asynccontextmanager
async def stdio_transport(
    command: str, args: Sequence[str], *, env: Mapping[str, str], cwd: Path, errlog: TextIO
) -> AsyncGenerator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Start the server and yield the (read, write) message streams an `mcp.Client` takes.

    Raises:
        OSError: the command cannot be started.
    """
    process = await anyio.open_process(
        [command, *args], env=dict(env), cwd=cwd, stderr=errlog, stdin=subprocess.PIPE, start_new_session=True
    )
    incoming_send, incoming = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as group:
        group.start_soon(_read, process, incoming_send)
        group.start_soon(_write, process, outgoing_receive)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                await outgoing.aclose()
                await incoming.aclose()
                await _stop(process)
            group.cancel_scope.cancel()


async def _read(process: Process, into: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    assert process.stdout is not None
    buffer = ""
    async with into:
        try:
            async for chunk in TextReceiveStream(process.stdout, encoding="utf-8", errors="replace"):
                lines = (buffer + chunk).split("\n")
                buffer = lines.pop()
                for line in lines:
                    if line.strip():
                        await into.send(_message(line))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass


async def _write(process: Process, messages: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    async with messages:
        try:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass


def _message(line: str) -> SessionMessage | Exception:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return exc


async def _stop(process: Process) -> None:
    """Close stdin and give the server its grace to exit; then end its whole process group, every time."""
    if process.stdin is not None:
        try:
            await process.stdin.aclose()
        except (OSError, anyio.BrokenResourceError):
            pass
    with anyio.move_on_after(EXIT_GRACE_S):
        await _exited(process)
    _signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE_S):
        await _exited(process)
    _signal_group(process.pid, signal.SIGKILL)  # also what the server started, if it exited first
    with anyio.move_on_after(TERM_GRACE_S):
        await _exited(process)
        await process.aclose()


async def _exited(process: Process) -> None:
    """Until the server process has exited. A pidfd tells at once (Linux); `wait()` elsewhere, which also waits for
    the pipes a child of the server may hold open (the callers bound every wait)."""
    if process.returncode is not None:
        return
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        await process.wait()
        return
    try:
        await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


def _signal_group(group: int, signum: signal.Signals) -> None:
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        pass
