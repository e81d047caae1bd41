"""Keeping known secrets (provider API keys, secret environment values) out of everything the server writes or returns.

Each secret is also looked for in the forms it travels in: percent-encoding (any of its characters written as %XX,
in either case) and base64 (standard and URL-safe, at each of the three byte alignments it can have inside a longer
base64 text, as in `Authorization: Basic ...`).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values are no real keys, and replacing them would mangle ordinary text."""


class Redactor:
    """Replaces each known secret value, and its encoded forms, with `[redacted]`."""

    __slots__ = ("_literals", "_pattern", "_plus_matters")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = sorted({secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH}, key=lambda s: (-len(s), s))
        forms: set[str] = set()
        for secret in kept:
            forms |= encoded_forms(secret)
        # Longest first, so a form that contains another is replaced whole.
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        alternatives = [*map(_percent_pattern, kept), *map(re.escape, ordered)]
        self._pattern = re.compile("|".join(alternatives)) if alternatives else None
        # Without a `%` (nor a `+`, for a secret with a space) in the text, the pattern can only match one of these
        # exactly, and a substring search finds them about ten times faster than the pattern scans a line.
        self._literals = (*kept, *ordered)
        self._plus_matters = any(" " in secret for secret in kept)

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        if "%" not in text and not (self._plus_matters and "+" in text):
            if not any(form in text for form in self._literals):
                return text
        return self._pattern.sub(REDACTED, text)


def _percent_pattern(secret: str) -> str:
    """Matches `secret` with any of its characters percent-encoded (or a space as `+`)."""
    pieces: list[str] = []
    for char in secret:
        escapes = "".join(f"%{byte:02x}" for byte in char.encode("utf-8", errors="surrogatepass"))
        options = [re.escape(char), re.escape(escapes), re.escape(escapes.upper())]
        if char == " ":
            options.append(re.escape("+"))
        pieces.append(f"(?:{'|'.join(dict.fromkeys(options))})")
    return "".join(pieces)


def encoded_forms(secret: str) -> set[str]:
    """Every base64 run that only the bytes of `secret` determine (its percent-encodings are matched separately)."""
    data = secret.encode("utf-8", errors="surrogatepass")
    forms = {base64.b64encode(data).decode("ascii"), base64.urlsafe_b64encode(data).decode("ascii")}
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            # Skip the first 4-character group when it mixes in the padding bytes; stop at the last group that only
            # the secret's bytes fill.
            core = encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)]
            if len(core) >= MIN_SECRET_LENGTH:
                forms.add(core)
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}
