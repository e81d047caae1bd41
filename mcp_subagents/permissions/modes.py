"""Claude Code's permission modes, and how a definition's mode combines with the server's."""

from __future__ import annotations

from ..core.names import MODE_ALIASES
from ..core.names import PERMISSION_MODES as MODES

__all__ = ["MODES", "MODE_ALIASES", "SERVER_MODES_THAT_WIN", "effective_mode", "normalize_mode"]


def normalize_mode(mode: str | None) -> str:
    """`auto` and `manual` become `default`; so does an unknown or missing mode."""
    if mode is None:
        return "default"
    mode = MODE_ALIASES.get(mode, mode)
    return mode if mode in MODES else "default"


SERVER_MODES_THAT_WIN: frozenset[str] = frozenset({"bypassPermissions", "acceptEdits", "plan"})
"""A server in one of these modes keeps it for every agent, whatever the agent file says."""


def effective_mode(server_mode: str, definition_mode: str | None) -> str:
    """The mode an agent runs in, by Claude Code's rule.

    An agent file's `permissionMode` applies when the server runs in default or dontAsk mode: `acceptEdits`,
    `plan`, `dontAsk` and `default` take effect for that agent. When the server runs in bypassPermissions,
    acceptEdits or plan, the server's mode stands. `bypassPermissions` in a file never takes effect on a server
    that is not itself in bypassPermissions mode.
    """
    server = normalize_mode(server_mode)
    if definition_mode is None or server in SERVER_MODES_THAT_WIN:
        return server
    agent = normalize_mode(definition_mode)
    return server if agent == "bypassPermissions" else agent
