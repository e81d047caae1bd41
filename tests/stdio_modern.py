"""A real `mcp-subagents serve` subprocess spoken to in the 2026-07-28 era by hand: every request carries the
per-request envelope, and the test sees whole responses (results and JSON-RPC errors), so it can send what no
well-behaved client would (a forged or replayed `requestState`)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

CLAUDE_CODE_CAPABILITIES: dict[str, Any] = {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}}
"""What Claude Code 2.1.328 declares on every request."""


class ModernStdioServer:
    def __init__(self, process: Process, capabilities: dict[str, Any]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.capabilities = capabilities
        self.progress: list[dict[str, Any]] = []
        self._out = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    @classmethod
    async def start(
        cls,
        environ: dict[str, str],
        *,
        capabilities: dict[str, Any] | None = None,
        stderr: int | None = subprocess.DEVNULL,
    ) -> ModernStdioServer:
        process = await anyio.open_process([sys.executable, "-m", "mcp_subagents", "serve"], env=environ, stderr=stderr)
        server = cls(process, CLAUDE_CODE_CAPABILITIES if capabilities is None else capabilities)
        discovered = await server.exchange("server/discover", {})
        assert "2026-07-28" in discovered["result"]["supportedVersions"], discovered
        return server

    async def exchange(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request with the 2026 envelope; return its whole response (a `result` or an `error`)."""
        self._next_id += 1
        envelope = {
            PROTOCOL_VERSION_META_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_META_KEY: self.capabilities,
            CLIENT_INFO_META_KEY: {"name": "raw-test", "version": "1"},
        }
        params = {**params, "_meta": {**envelope, **params.get("_meta", {})}}
        assert self.process.stdin is not None
        request = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        await self.process.stdin.send((json.dumps(request) + "\n").encode())
        while True:
            message = json.loads(await self._out.receive_until(b"\n", 1 << 24))
            if message.get("method") == "notifications/progress":
                self.progress.append(message["params"])
            if message.get("id") == self._next_id:
                return message

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        progress_token: str | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if input_responses is not None:
            params["inputResponses"] = input_responses
        if request_state is not None:
            params["requestState"] = request_state
        if progress_token is not None:
            params["_meta"] = {"progressToken": progress_token}
        return await self.exchange("tools/call", params)

    async def close(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()
        await self.process.wait()
