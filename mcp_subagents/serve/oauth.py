"""OAuth 2.1 resource server: accept JWT access tokens (RFC 9068) signed by one issuer.

The issuer's signing keys come from its JWKS, found through its metadata (RFC 8414, else OpenID discovery) and
fetched again when a token names a key we have not seen (key rotation). A token is accepted only with an
asymmetric signature by one of those keys, this issuer's `iss`, our audience in `aud`, and an `exp` still ahead.
Its subject becomes the principal; refusals are logged by reason, never with the token.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import httpx2
import jwt
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.routing import Route

from ..core.principals import oauth_principal
from ..mcp.caller import PrincipalToken

logger = logging.getLogger(__name__)

ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
"""Asymmetric only: an issuer's public key must never be usable as an HMAC secret."""
CLOCK_SKEW_SECONDS = 30
FETCH_TIMEOUT_SECONDS = 10.0
REFETCH_AFTER_SECONDS = 3600.0
UNKNOWN_KEY_REFETCHES_PER_MINUTE = 3
"""Tokens with unknown key ids refetch the JWKS at most this often (a rotation is picked up at once, but junk
tokens cannot make us hammer the issuer)."""


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer publishes its metadata: RFC 8414 (path after the well-known part), then OpenID's forms."""
    parts = urlsplit(issuer)
    origin, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
        f"{origin}/.well-known/openid-configuration{path}",
    ]


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope", claims.get("scp"))
    if isinstance(scope, str):
        return scope.split()
    if isinstance(scope, list):
        return [str(item) for item in cast("list[Any]", scope)]
    return []


class OAuthTokenVerifier(TokenVerifier):
    def __init__(self, *, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self._keys: list[dict[str, Any]] = []
        self._fetched_at: float | None = None
        self._unknown_key_refetches: deque[float] = deque(maxlen=UNKNOWN_KEY_REFETCHES_PER_MINUTE)
        self._lock = anyio.Lock()

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None  # not a JWT at all (a token-file token that did not match, or junk)
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            logger.info("OAuth token refused: algorithm %r is not an accepted asymmetric one", algorithm)
            return None
        key_id = header.get("kid")
        key = await self._key(key_id if isinstance(key_id, str) else None, str(algorithm))
        if key is None:
            logger.info("OAuth token refused: no signing key %r from %s", key_id, self.issuer)
            return None
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[str(algorithm)],
                audience=self.audience,
                issuer=self.issuer,
                leeway=CLOCK_SKEW_SECONDS,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            logger.info("OAuth token refused: %s", exc)
            return None
        return self._access_token(token, claims)

    def _access_token(self, token: str, claims: Mapping[str, Any]) -> PrincipalToken | None:
        client_id = claims.get("client_id") or claims.get("azp")
        subject = claims.get("sub") or client_id
        if not isinstance(subject, str) or not subject:
            logger.info("OAuth token refused: it names no subject (sub) or client (client_id, azp)")
            return None
        expires = claims.get("exp")
        return PrincipalToken(
            token=token,
            client_id=str(client_id or subject),
            scopes=_scopes(claims),
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            subject=subject,
            claims={"iss": self.issuer},
            principal=oauth_principal(subject),
        )

    async def _key(self, key_id: str | None, algorithm: str) -> jwt.PyJWK | None:
        async with self._lock:
            now = time.monotonic()
            if self._fetched_at is None or now - self._fetched_at > REFETCH_AFTER_SECONDS:
                await self._refresh()
            elif self._pick(key_id, algorithm) is None and self._may_refetch(now):
                self._unknown_key_refetches.append(now)
                await self._refresh()
            return self._pick(key_id, algorithm)

    def _may_refetch(self, now: float) -> bool:
        recent = self._unknown_key_refetches
        return len(recent) < UNKNOWN_KEY_REFETCHES_PER_MINUTE or now - recent[0] > 60.0

    def _pick(self, key_id: str | None, algorithm: str) -> jwt.PyJWK | None:
        candidates = [
            jwk
            for jwk in self._keys
            if (key_id is None or jwk.get("kid") == key_id)
            and jwk.get("use", "sig") == "sig"
            and jwk.get("alg", algorithm) == algorithm
        ]
        if key_id is None and len(candidates) != 1:
            return None  # without a key id, only an issuer with a single key is unambiguous
        for jwk in candidates:
            try:
                return jwt.PyJWK(cast("Any", jwk), algorithm=algorithm)
            except jwt.PyJWTError:
                continue  # a key of another type than the algorithm needs
        return None

    async def _refresh(self) -> None:
        self._fetched_at = time.monotonic()
        try:
            async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as client:
                jwks_uri = await self._jwks_uri(client)
                response = await client.get(jwks_uri)
                response.raise_for_status()
                keys = response.json().get("keys")
        except (httpx2.HTTPError, ValueError, AttributeError, LookupError) as exc:
            logger.warning("could not fetch the signing keys of %s: %s", self.issuer, exc)
            return
        if isinstance(keys, list):
            self._keys = [key for key in cast("list[Any]", keys) if isinstance(key, dict)]

    async def _jwks_uri(self, client: httpx2.AsyncClient) -> str:
        problems: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                response = await client.get(url)
                metadata = response.json() if response.status_code == 200 else None
            except (httpx2.HTTPError, ValueError) as exc:
                problems.append(f"{url}: {exc}")
                continue
            if not isinstance(metadata, dict):
                problems.append(f"{url}: HTTP {response.status_code}")
                continue
            document = cast("dict[str, Any]", metadata)
            if document.get("issuer") != self.issuer:  # RFC 8414 section 3.3
                problems.append(f"{url}: names issuer {document.get('issuer')!r}")
                continue
            jwks_uri = document.get("jwks_uri")
            if isinstance(jwks_uri, str):
                return jwks_uri
            problems.append(f"{url}: no jwks_uri")
        raise LookupError("; ".join(problems))


def protected_resource_app(
    *, resource: str, issuer: str, scopes: Sequence[str]
) -> tuple[Starlette, tuple[str, ...], AnyHttpUrl]:
    """RFC 9728 metadata: the app, the paths it answers (the path-suffixed one and the bare one some clients
    try), and the URL that 401 answers point to."""
    metadata = ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": [issuer],
            "scopes_supported": list(scopes) or None,
            "resource_name": "mcp-subagents",
        }
    )
    handler = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    metadata_url = build_resource_metadata_url(AnyHttpUrl(resource))
    paths = tuple(dict.fromkeys([urlsplit(str(metadata_url)).path, "/.well-known/oauth-protected-resource"]))
    routes = [Route(path, endpoint=handler, methods=["GET", "OPTIONS"]) for path in paths]
    return Starlette(routes=routes), paths, metadata_url
