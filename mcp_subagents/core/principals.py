"""Who a task belongs to: the principal that started it.

On stdio and on tokenless loopback HTTP everything belongs to the one local user. With tokens, each principal
named in the token file, and each OAuth subject, is a separate owner; the prefixes keep the kinds from colliding
(a token-file name cannot contain `:`).
"""

from __future__ import annotations

LOCAL_PRINCIPAL = "local"


def token_principal(name: str) -> str:
    return f"token:{name}"


def oauth_principal(subject: str) -> str:
    return f"oauth:{subject}"
