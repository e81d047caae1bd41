"""Serving the MCP server over stdio, legacy HTTP+SSE, or Streamable HTTP, inside the runtime's lifetime."""

from __future__ import annotations

import logging
import socket
from typing import Any

from .errors import ConfigError
from .server import SubagentsServer
from .settings import Settings

logger = logging.getLogger(__name__)


async def serve(server: SubagentsServer, settings: Settings) -> None:
    from .jsonrpc_guard import JsonRpcGuard, guarded_stdio

    if settings.transport == "stdio":
        async with guarded_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    app = _sse_app(server, settings) if settings.transport == "sse" else _streamable_http_app(server, settings)
    await _serve_http(JsonRpcGuard(app), settings)


def _streamable_http_app(server: SubagentsServer, settings: Settings) -> Any:
    return server.streamable_http_app(streamable_http_path="/mcp", host=settings.host)


def _sse_app(server: SubagentsServer, settings: Settings) -> Any:
    from mcp.server.sse import SseServerTransport
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    security = None
    if settings.host in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    transport = SseServerTransport("/messages/", security_settings=security)

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (reader, writer):  # pyright: ignore[reportPrivateUsage]
            await server.run(reader, writer, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[Route("/sse", handle_sse, methods=["GET"]), Mount("/messages/", app=transport.handle_post_message)]
    )


def _listening_socket(host: str, port: int) -> socket.socket:
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets created with it (no 40 ms Nagle stalls).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def _serve_http(app: Any, settings: Settings) -> None:
    import uvicorn

    try:
        sock = _listening_socket(settings.host, settings.port)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {settings.host}:{settings.port}: {exc.strerror or exc}") from None
    host, port = sock.getsockname()[:2]
    path = "/mcp" if settings.transport == "streamable-http" else "/sse"
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    logger.info("listening (%s) on http://%s:%d%s", settings.transport, host, port, path)
    with sock:
        await uvicorn.Server(config).serve(sockets=[sock])
