"""What a request tells about the host connection it came on: its protocol era, what the host can do, and state that
lives as long as the connection.

The SDK (mcp 2.3) keeps the connection on the request's session without a public accessor, so this module is the
one place that reaches for it.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.connection import NotifyOnlyOutbound
from mcp_types.version import MODERN_PROTOCOL_VERSIONS


def is_modern(ctx: ServerRequestContext[Any]) -> bool:
    """A 2026-07-28 (or later) request: no server-initiated requests; asking goes through `InputRequiredResult`."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def can_elicit_form(ctx: ServerRequestContext[Any]) -> bool:
    """The host advertised form elicitation (a bare `elicitation: {}` means form, as before modes existed)."""
    capabilities = ctx.session.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def offers_roots(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.session.check_client_capability(types.ClientCapabilities(roots=types.RootsCapability()))


def _connection(ctx: ServerRequestContext[Any]) -> Any:
    return getattr(ctx.session, "_connection", None)


def connection_state(ctx: ServerRequestContext[Any]) -> dict[str, Any] | None:
    """Scratch state of a 2025-era connection, kept across its requests; None when there is none to keep it in."""
    state = getattr(_connection(ctx), "state", None)
    return state if isinstance(state, dict) else None  # pyright: ignore[reportUnknownVariableType]


def connection_key(ctx: ServerRequestContext[Any]) -> object | None:
    """An object that stands for the host's connection across 2026-era requests, or None.

    Every 2026-era request gets a fresh SDK connection object, but on a duplex stream (stdio) they all share the
    stream's notification channel, which lives exactly as long as the connection. Single-exchange HTTP and
    in-process dispatch have no such channel: there every request stands alone.
    """
    outbound = getattr(_connection(ctx), "outbound", None)
    return outbound if isinstance(outbound, NotifyOnlyOutbound) else None


LOG_LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_LOG_LEVEL_KEY = "mcp_subagents.log_level"


def set_log_level(ctx: ServerRequestContext[Any], level: types.LoggingLevel) -> None:
    """Remember the level a 2025-era host asked for with `logging/setLevel`."""
    state = connection_state(ctx)
    if state is not None:
        state[_LOG_LEVEL_KEY] = level


def log_level_allows(ctx: ServerRequestContext[Any], level: types.LoggingLevel) -> bool:
    """Whether the host wants log notifications at `level`: all of them until it sets a level.

    2026-era requests opt in per request instead, and the SDK drops what they did not ask for.
    """
    state = connection_state(ctx)
    wanted = state.get(_LOG_LEVEL_KEY) if state is not None else None
    return wanted not in LOG_LEVELS or LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted)
