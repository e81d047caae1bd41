"""The server on a free port in this process, and MCP clients that reach it over real HTTP (uvicorn, httpx2)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_subagents.config.settings import Settings
from mcp_subagents.mcp.server import build_server
from mcp_subagents.models.base import Model
from mcp_subagents.runtime.service import Subagents
from mcp_subagents.serve.transports import open_listener, serve
from tests.support import make_settings

TRANSPORTS = ["sse", "streamable-http"]
BACKGROUND_TASK = {
    "description": "look around",
    "prompt": "What is here?",
    "subagent_type": "general-purpose",
    "run_in_background": True,
}


def http_settings(tmp_path: Path, transport: str, **overrides: Any) -> Settings:
    return replace(make_settings(tmp_path), transport=transport, port=0, watch_interval=0, **overrides)


@dataclass(frozen=True, slots=True)
class Served:
    url: str
    """The MCP endpoint: .../mcp or .../sse."""
    app: Subagents

    @property
    def origin(self) -> str:
        return self.url.rsplit("/", 1)[0]

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])


@asynccontextmanager
async def serving(
    settings: Settings, *, environ: Mapping[str, str] | None = None, model: Model | None = None
) -> AsyncGenerator[Served]:
    """Serve until the block ends. The socket listens before this yields, so clients can connect at once."""
    environ = dict(environ or {})
    listener = open_listener(settings, environ)
    assert listener is not None
    app = Subagents(settings, model=model, environ=environ)
    async with app.running(), anyio.create_task_group() as group:
        group.start_soon(serve, build_server(app), settings, listener)
        yield Served(listener.url, app)
        group.cancel_scope.cancel()


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


@asynccontextmanager
async def mcp_client(
    url: str, *, token: str | None = None, mode: str = "auto", **options: Any
) -> AsyncGenerator[Client]:
    """An MCP client of the right transport for `url`, sending `token` as a bearer token."""
    with anyio.fail_after(30):
        if url.endswith("/sse"):
            async with Client(sse_client(url, headers=bearer(token)), mode=mode, **options) as client:
                yield client
            return
        async with create_mcp_http_client(headers=bearer(token)) as http:
            transport = streamable_http_client(url, http_client=http)
            async with Client(transport, mode=mode, **options) as client:
                yield client


async def raw_request(
    url: str, method: str = "POST", *, headers: Mapping[str, str] | None = None, body: bytes | None = None
) -> httpx2.Response:
    """One plain HTTP request (no MCP client), for what a client that does not follow the rules sends."""
    default = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=10) as http:
        if method == "GET" and url.endswith("/sse"):
            async with http.stream("GET", url, headers={**default, **(headers or {})}) as response:
                return response  # an accepted SSE stream stays open; its status is all we need
        initialize = (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
        )
        return await http.request(method, url, headers={**default, **(headers or {})}, content=body or initialize)


ALICE_TOKEN = "alice-0123456789abcdefghij"
BOB_TOKEN = "bob-0123456789abcdefghijkl"


def token_file(folder: Path, **tokens: str) -> Path:
    """A private token file with one `principal:token` line per keyword."""
    path = folder / "tokens"
    path.write_text("".join(f"{name}:{token}\n" for name, token in tokens.items()), encoding="utf-8")
    path.chmod(0o600)
    return path


@dataclass
class ServerProcess:
    url: str
    stderr: list[str]
    """Everything the server wrote to stderr so far."""


@asynccontextmanager
async def server_process(args: list[str], environ: Mapping[str, str]) -> AsyncGenerator[ServerProcess]:
    """`mcp-subagents serve ARGS` as a subprocess on a free port, until the block ends (then terminated)."""
    command = [sys.executable, "-m", "mcp_subagents", "serve", "--port", "0", *args]
    process = await anyio.open_process(command, env=dict(environ), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    assert process.stderr is not None
    lines = TextReceiveStream(process.stderr)
    seen: list[str] = []
    try:
        with anyio.fail_after(30):
            async for chunk in lines:
                seen.append(chunk)
                if match := re.search(r"listening \([\w-]+\) on (https?://\S+)", "".join(seen)):
                    break
            else:
                raise AssertionError(f"server exited before listening:\n{''.join(seen)}")

        async def collect() -> None:
            async for chunk in lines:
                seen.append(chunk)

        async with anyio.create_task_group() as group:
            group.start_soon(collect)
            yield ServerProcess(match.group(1), seen)
            process.terminate()
            with anyio.fail_after(10):
                await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
