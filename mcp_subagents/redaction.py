"""Keeping known secrets (provider API keys) out of everything the server writes or returns."""

from __future__ import annotations

from collections.abc import Iterable

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4
"""Shorter values are no real keys, and replacing them would mangle ordinary text."""


class Redactor:
    """Replaces each known secret value in a text with `[redacted]`."""

    __slots__ = ("_secrets",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = tuple(secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text
