"""What stands in front of the MCP endpoints over HTTP: no serving beyond loopback without authentication, the
Host/Origin checks (DNS-rebinding protection) on every bind address, and the bearer-token gate.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import TokenVerifier
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic import AnyHttpUrl
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from ..config.settings import Settings
from ..core.errors import ConfigError

logger = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_ADDRESSES = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for names and addresses only this machine can reach."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings, *, authenticated: bool) -> None:
    """Refuse to serve beyond loopback when nothing asks who is calling.

    Raises:
        ConfigError: one line that says how to add a token.
    """
    if authenticated or is_loopback(settings.host):
        return
    raise ConfigError(
        f"refusing to serve on {settings.host or '0.0.0.0'} without authentication (anyone who reaches it could run "
        "subagents): add --auth-token-file FILE with principal:token lines (chmod 600), or set "
        "MCP_SUBAGENTS_AUTH_TOKEN, or use --oauth-issuer URL; or bind --host 127.0.0.1"
    )


def _bracketed(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host.strip("[]")).version == 6 else host
    except ValueError:
        return host


def _host_patterns(host: str) -> list[str]:
    """Host header values for a name: exact when it carries a port, else the bare name and any port."""
    host = _bracketed(host)
    has_port = host.rsplit("]", 1)[-1].count(":") == 1 if host.startswith("[") else host.count(":") == 1
    return [host] if has_port else [host, f"{host}:*"]


@dataclass(frozen=True, slots=True)
class AnsweredHosts:
    hosts: tuple[str, ...]
    origins: tuple[str, ...]


def answered_hosts(settings: Settings) -> AnsweredHosts:
    """The Host headers (and browser Origins) this server answers: loopback names, the bound address when it is a
    specific one, the host of --public-url, and every --allowed-host."""
    names: list[str] = list(LOOPBACK_HOSTS)
    if settings.host not in WILDCARD_ADDRESSES and not is_loopback(settings.host):
        names.append(settings.host)
    if settings.public_url:
        names.append(urlsplit(settings.public_url).netloc.lower())
    names.extend(settings.allowed_hosts)
    hosts: list[str] = []
    for name in names:
        for pattern in _host_patterns(name):
            if pattern not in hosts:
                hosts.append(pattern)
    origins = [f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")]
    return AnsweredHosts(tuple(hosts), tuple(origins))


def transport_security(settings: Settings) -> TransportSecuritySettings:
    answered = answered_hosts(settings)
    if settings.host in WILDCARD_ADDRESSES and not settings.allowed_hosts and not settings.public_url:
        logger.warning(
            "serving on %s, but requests are answered only when their Host header is a loopback name; "
            "add --allowed-host NAME for each name people use to reach this server",
            settings.host or "0.0.0.0",
        )
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(answered.hosts),
        allowed_origins=list(answered.origins),
    )


class HttpGuard:
    """ASGI middleware for the whole HTTP app: Host/Origin first (for every path, so a rebound browser page learns
    nothing), then public paths (OAuth metadata), then a valid bearer token for everything else."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        security: TransportSecuritySettings,
        verifier: TokenVerifier | None,
        required_scopes: Iterable[str] = (),
        resource_metadata_url: AnyHttpUrl | None = None,
        public: ASGIApp | None = None,
        public_paths: Iterable[str] = (),
    ) -> None:
        self._app = app
        self._hosts = TransportSecurityMiddleware(security)
        self._public = public
        self._public_paths = frozenset(public_paths)
        self._protected: ASGIApp = app
        if verifier is not None:
            self._protected = AuthenticationMiddleware(
                AuthContextMiddleware(RequireAuthMiddleware(app, list(required_scopes), resource_metadata_url)),
                backend=BearerAuthBackend(verifier),
            )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no endpoint speaks it; refuse before anything else looks at it
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan
            await self._app(scope, receive, send)
            return
        refusal = await self._hosts.validate_request(Request(scope), is_post=False)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if self._public is not None and scope["path"] in self._public_paths:
            await self._public(scope, receive, send)
            return
        await self._protected(scope, receive, send)
