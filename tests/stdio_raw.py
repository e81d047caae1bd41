"""A real `mcp-subagents serve` subprocess driven by newline-delimited JSON-RPC over its pipes.

Unlike the SDK's stdio client it exposes the process (so a test can SIGKILL it), records every line the server
wrote to stdout (so a test can prove nothing but protocol messages reached it), and captures stderr.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream


class RawStdioServer:
    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdout_lines: list[bytes] = []
        self._out = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    @classmethod
    async def start(
        cls,
        environ: dict[str, str],
        *,
        stderr: int | None = subprocess.DEVNULL,
        prefix: tuple[str, ...] = (),
        arguments: tuple[str, ...] = (),
    ) -> RawStdioServer:
        """`prefix` goes before the command (e.g. setpriv to run the server as another user), `arguments` after."""
        command = [*prefix, sys.executable, "-m", "mcp_subagents", "serve", *arguments]
        process = await anyio.open_process(command, env=environ, stderr=stderr)
        server = cls(process)
        await server.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}},
        )
        await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return server

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps(message) + "\n").encode())

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        while True:
            message = await self.next_message()
            if message.get("id") == self._next_id:
                assert "result" in message, message
                return message["result"]

    async def next_message(self) -> dict[str, Any]:
        """The next line the server wrote to stdout (an answer or a notification), parsed."""
        line = await self._out.receive_until(b"\n", 1 << 24)
        self.stdout_lines.append(line)
        return json.loads(line)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        return "".join(block.get("text", "") for block in result["content"])

    async def close(self) -> bytes:
        """End the session the way a host does (close stdin); return whatever else reached stdout."""
        assert self.process.stdin is not None and self.process.stdout is not None
        await self.process.stdin.aclose()
        rest = self._out.buffer + b"".join([chunk async for chunk in self.process.stdout])
        await self.process.wait()
        return rest
