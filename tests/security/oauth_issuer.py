"""A local OAuth authorization server for tests: OpenID discovery, a JWKS, and RS256 access tokens it signs.

Laid out as Keycloak is (issuer `.../realms/team`, metadata at `{issuer}/.well-known/openid-configuration`,
keys at `{issuer}/protocol/openid-connect/certs`), so the RFC 8414 location answers 404 and discovery falls back.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

REALM = "/realms/team"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: rsa.RSAPrivateKey, kid: str) -> dict[str, Any]:
    jwk = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256"}


def public_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(header: dict[str, Any], claims: dict[str, Any], secret: bytes | None = None) -> str:
    """A token made by hand: HS256 with `secret` when given, else alg none with an empty signature."""
    signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest() if secret is not None else b""
    return f"{signing_input}.{_b64(signature)}"


@dataclass
class Issuer:
    url: str
    keys: dict[str, rsa.RSAPrivateKey] = field(default_factory=lambda: {"key-1": new_key()})
    jwks_fetches: int = 0

    def token(
        self, *, audience: str | list[str], subject: str | None = "alice", kid: str = "key-1", **claims: Any
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {"iss": self.url, "aud": audience, "iat": now, "exp": now + 300, **claims}
        if subject is not None:
            payload["sub"] = subject
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, self.keys[kid], algorithm="RS256", headers={"kid": kid})

    def app(self) -> Starlette:
        async def discovery(_request: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.url,
                    "jwks_uri": f"{self.url}/protocol/openid-connect/certs",
                    "token_endpoint": f"{self.url}/protocol/openid-connect/token",
                    "authorization_endpoint": f"{self.url}/protocol/openid-connect/auth",
                }
            )

        async def certs(_request: Request) -> JSONResponse:
            self.jwks_fetches += 1
            return JSONResponse({"keys": [public_jwk(key, kid) for kid, key in self.keys.items()]})

        return Starlette(
            routes=[
                Route(f"{REALM}/.well-known/openid-configuration", discovery),
                Route(f"{REALM}/protocol/openid-connect/certs", certs),
            ]
        )


@asynccontextmanager
async def running_issuer() -> AsyncGenerator[Issuer]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    issuer = Issuer(url=f"http://127.0.0.1:{sock.getsockname()[1]}{REALM}")
    server = uvicorn.Server(uvicorn.Config(issuer.app(), log_level="warning", lifespan="off"))
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.serve(sockets=[sock]))
        try:
            yield issuer
        finally:
            server.should_exit = True
    sock.close()
