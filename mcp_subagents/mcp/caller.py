"""Who is calling: the principal an MCP request acts for, from the access token the HTTP layer verified."""

from __future__ import annotations

from typing import Any, cast

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from ..core.principals import LOCAL_PRINCIPAL


class PrincipalToken(AccessToken):
    """An access token that names the principal its tasks belong to."""

    principal: str


def principal_of(request: Any) -> str:
    """The principal of an MCP request: its verified token's, else the local user (stdio, tokenless loopback)."""
    scope: object = getattr(request, "scope", None)
    user = cast("dict[str, Any]", scope).get("user") if isinstance(scope, dict) else None
    if isinstance(user, AuthenticatedUser) and isinstance(user.access_token, PrincipalToken):
        return user.access_token.principal
    return LOCAL_PRINCIPAL
