"""Keeping known secrets (provider API keys, secret environment values) out of everything the server writes or returns.

Each secret is also looked for in the forms it travels in: base64 (standard and URL-safe, at each of the three byte
alignments it can have inside a longer base64 text, as in `Authorization: Basic ...`) and percent-encoding.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values are no real keys, and replacing them would mangle ordinary text."""


class Redactor:
    """Replaces each known secret value, and its encoded forms, with `[redacted]`."""

    __slots__ = ("_pattern",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) >= MIN_SECRET_LENGTH:
                forms |= encoded_forms(secret)
        # Longest first, so a form that contains another is replaced whole.
        ordered = sorted(forms, key=lambda form: (-len(form), form))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)


def encoded_forms(secret: str) -> set[str]:
    """`secret` itself, percent-encoded, and every base64 run that only its bytes determine."""
    data = secret.encode("utf-8", errors="surrogatepass")
    forms = {secret, quote(secret, safe=""), quote_plus(secret, safe="")}
    forms |= {base64.b64encode(data).decode("ascii"), base64.urlsafe_b64encode(data).decode("ascii")}
    for offset in range(3):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            # Skip the first 4-character group when it mixes in the padding bytes; stop at the last group that only
            # the secret's bytes fill.
            core = encoded[4 if offset else 0 : 4 * ((offset + len(data)) // 3)]
            if len(core) >= MIN_SECRET_LENGTH:
                forms.add(core)
    return {form for form in forms if len(form) >= MIN_SECRET_LENGTH}
