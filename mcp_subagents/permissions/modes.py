"""Claude Code's permission modes, and how a definition's mode combines with the server's."""

from __future__ import annotations

MODES: tuple[str, ...] = ("plan", "dontAsk", "default", "acceptEdits", "bypassPermissions")
"""Permission modes from the narrowest to the widest."""
MODE_ALIASES: dict[str, str] = {"auto": "default", "manual": "default"}


def normalize_mode(mode: str | None) -> str:
    """`auto` and `manual` become `default`; so does an unknown or missing mode."""
    if mode is None:
        return "default"
    mode = MODE_ALIASES.get(mode, mode)
    return mode if mode in MODES else "default"


def effective_mode(server_mode: str, definition_mode: str | None) -> str:
    """The narrower of the server's mode and the agent definition's: a definition can never widen the server's.

    Narrowest first: plan, dontAsk, default, acceptEdits, bypassPermissions.
    """
    server = normalize_mode(server_mode)
    if definition_mode is None:
        return server
    return min(server, normalize_mode(definition_mode), key=MODES.index)
