"""Serving the MCP server over stdio, legacy HTTP+SSE, or Streamable HTTP, inside the runtime's lifetime.

For HTTP, `open_listener` does every start-up check (tokens, exposure, OAuth, TLS, the port) before the runtime
starts, so a problem is one line on stderr, not a traceback.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import TokenVerifier
from mcp.server.transport_security import TransportSecuritySettings

from ..config.settings import Settings
from ..core.errors import ConfigError
from ..mcp.server import SubagentsServer
from .asgi import serve_until_cancelled
from .auth import StaticTokenVerifier, TokenVerifiers, env_token
from .early_answers import EarlyStart
from .early_check import EarlyCheck
from .http_security import WILDCARD_ADDRESSES, HttpGuard, check_exposure, is_loopback, transport_security

logger = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 3
"""How long open connections (SSE streams) may delay stopping."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: Path
    key: Path


@dataclass(slots=True)
class HttpListener:
    """A bound socket and everything checked before serving on it."""

    sock: socket.socket
    url: str
    """The endpoint as bound, e.g. http://127.0.0.1:8000/mcp."""
    resource_url: str
    """The endpoint as clients name it: --public-url, else `url`. The OAuth resource and default audience."""
    tokens: StaticTokenVerifier | None
    tls: TlsFiles | None


def endpoint_path(settings: Settings) -> str:
    return "/sse" if settings.transport == "sse" else "/mcp"


def open_listener(settings: Settings, environ: Mapping[str, str] | None = None) -> HttpListener | None:
    """Check the HTTP configuration and bind the port; None on stdio.

    Raises:
        ConfigError: one line saying what is wrong and how to fix it.
    """
    if settings.transport == "stdio":
        return None
    environ = os.environ if environ is None else environ
    if settings.auth_token_file is not None:
        _check_out_of_reach(settings.auth_token_file, settings)
    extra = env_token(environ)
    tokens = StaticTokenVerifier(settings.auth_token_file, extra, scopes=settings.oauth_scopes)
    has_tokens = bool(tokens.entries)
    _check_oauth(settings)
    check_exposure(settings, authenticated=has_tokens or settings.oauth_issuer is not None)
    tls = _tls_files(settings)
    sock = _listening_socket(settings.host, settings.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"{'https' if tls else 'http'}://{shown}:{port}{endpoint_path(settings)}"
    return HttpListener(
        sock=sock,
        url=url,
        resource_url=settings.public_url or url,
        tokens=tokens if has_tokens else None,
        tls=tls,
    )


def _check_out_of_reach(token_file: Path, settings: Settings) -> None:
    """Subagents' file tools may read the working directory and the allowed roots: one person's subagent must not
    be able to read everyone's tokens there."""
    resolved = token_file.resolve()
    for area in (settings.working_directory, *settings.allowed_roots):
        area = area.resolve()
        if resolved == area or area in resolved.parents:
            raise ConfigError(
                f"--auth-token-file {token_file} is inside {area}, where subagents can read it; "
                "move it elsewhere, e.g. ~/.config/mcp-subagents/tokens"
            )


def _check_oauth(settings: Settings) -> None:
    issuer = settings.oauth_issuer
    if issuer is None:
        if settings.oauth_audience or settings.oauth_scopes:
            raise ConfigError("--oauth-audience and --oauth-scope need --oauth-issuer URL")
        return
    parts = urlsplit(issuer)
    if parts.scheme != "https" and not is_loopback(parts.hostname or ""):
        raise ConfigError(f"--oauth-issuer {issuer}: use https (plain http only for an issuer on this machine)")
    if settings.public_url is None and settings.host in WILDCARD_ADDRESSES:
        raise ConfigError(
            f"--oauth-issuer with --host {settings.host or '0.0.0.0'} needs --public-url, the URL people use "
            f"(e.g. https://agents.example.com{endpoint_path(settings)}): it is the audience tokens must name"
        )


def _tls_files(settings: Settings) -> TlsFiles | None:
    if settings.tls_cert is None and settings.tls_key is None:
        return None
    if settings.tls_cert is None or settings.tls_key is None:
        raise ConfigError("--tls-cert and --tls-key go together")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        # A password callback, so an encrypted key fails here instead of prompting on the terminal.
        context.load_cert_chain(settings.tls_cert, settings.tls_key, password=lambda: b"")
    except ssl.SSLError as exc:
        reason = (
            "the key does not belong to the certificate"
            if exc.reason == "KEY_VALUES_MISMATCH"
            else "not a PEM certificate and unencrypted PEM key"
        )
        raise ConfigError(f"--tls-cert {settings.tls_cert} / --tls-key {settings.tls_key}: {reason}") from None
    except OSError as exc:
        raise ConfigError(f"--tls-cert {settings.tls_cert} / --tls-key {settings.tls_key}: {exc.strerror}") from None
    return TlsFiles(settings.tls_cert, settings.tls_key)


def _listening_socket(host: str, port: int) -> socket.socket:
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets created with it (no 40 ms Nagle stalls).
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        hint = "; is another server running there? choose another --port" if exc.errno == 98 else ""  # EADDRINUSE
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}{hint}") from None
    return sock


async def serve(
    server: SubagentsServer, settings: Settings, listener: HttpListener | None = None, early: EarlyStart | None = None
) -> None:
    """Serve until the transport ends. Malformed JSON-RPC messages that carry an id are answered on every transport
    (`jsonrpc_guard`); stdio reads stdin (and writes stdout) on the event loop (`stdio_streams`), after what was
    read before the server loaded (`early`: `early_answers`)."""
    from .jsonrpc_guard import JsonRpcGuard
    from .stdio_streams import stdio_server

    if settings.transport == "stdio":
        check = EarlyCheck(early, server.notifier.notify) if early is not None else None
        async with stdio_server(check) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return
    listener = listener or open_listener(settings)
    assert listener is not None
    security = transport_security(settings)
    app = (
        _sse_app(server, security)
        if settings.transport == "sse"
        else server.streamable_http_app(streamable_http_path="/mcp", transport_security=security, host=settings.host)
    )
    # Authentication and Host/Origin checks come first: a stranger gets 401, not an answer about the message.
    await _serve_http(_guarded(JsonRpcGuard(app), settings, listener, security), settings, listener)


def _guarded(app: Any, settings: Settings, listener: HttpListener, security: TransportSecuritySettings) -> HttpGuard:
    verifiers: list[TokenVerifier] = [listener.tokens] if listener.tokens else []
    described = [f"{len(listener.tokens.entries)} token(s)"] if listener.tokens else []
    public: Any = None
    public_paths: tuple[str, ...] = ()
    metadata_url = None
    if settings.oauth_issuer:
        from .oauth import OAuthTokenVerifier, protected_resource_app

        audience = settings.oauth_audience or listener.resource_url
        verifiers.append(OAuthTokenVerifier(issuer=settings.oauth_issuer, audience=audience))
        described.append(f"OAuth tokens from {settings.oauth_issuer} for audience {audience}")
        public, public_paths, metadata_url = protected_resource_app(
            resource=listener.resource_url, issuer=settings.oauth_issuer, scopes=settings.oauth_scopes
        )
    if described:
        logger.info("authentication: %s", "; ".join(described))
    else:
        logger.info("no authentication: loopback only, every client is the local user")
    if verifiers and listener.tls is None and not is_loopback(settings.host):
        logger.warning(
            "serving without TLS on %s: tokens cross the network in clear text; put a TLS reverse proxy in front "
            "or use --tls-cert/--tls-key",
            settings.host or "0.0.0.0",
        )
    return HttpGuard(
        app,
        security=security,
        verifier=TokenVerifiers(verifiers) if verifiers else None,
        required_scopes=settings.oauth_scopes,
        resource_metadata_url=metadata_url,
        public=public,
        public_paths=public_paths,
    )


def _sse_app(server: SubagentsServer, security: Any) -> Any:
    from mcp.server.sse import SseServerTransport
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    transport = SseServerTransport("/messages/", security_settings=security)

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (reader, writer):  # pyright: ignore[reportPrivateUsage]
            await server.run(reader, writer, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[Route("/sse", handle_sse, methods=["GET"]), Mount("/messages/", app=transport.handle_post_message)]
    )


async def _serve_http(app: Any, settings: Settings, listener: HttpListener) -> None:
    tls: dict[str, Any] = (
        {"ssl_certfile": str(listener.tls.cert), "ssl_keyfile": str(listener.tls.key)} if listener.tls else {}
    )
    logger.info("listening (%s) on %s", settings.transport, listener.url)
    with listener.sock:
        await serve_until_cancelled(app, listener.sock, grace_seconds=SHUTDOWN_SECONDS, **tls)
