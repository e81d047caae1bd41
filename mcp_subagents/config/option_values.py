"""What a flag's or a variable's text may be: each converter returns the value or raises ValueError in words the
error message repeats after the flag's (or the variable's) name."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal, TypeAlias, cast

from .claude_settings import SELECTABLE_LEVELS

Transport: TypeAlias = Literal["stdio", "sse", "streamable-http"]


def positive_int(raw: str) -> int:
    value = integer(raw, "a positive integer")
    if value <= 0:
        raise ValueError(f"must be a positive integer, got {raw}")
    return value


def non_negative_int(raw: str) -> int:
    value = integer(raw, "0 or a positive integer")
    if value < 0:
        raise ValueError(f"must be 0 or a positive integer, got {raw}")
    return value


def port_number(raw: str) -> int:
    """A port on which to listen (0: any free one)."""
    meaning = "a port number from 0 to 65535 (0 picks a free one)"
    value = integer(raw, meaning)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be {meaning}, got {raw}")
    return value


def seconds(raw: str) -> float:
    value = number(raw, "a positive number of seconds")
    if value <= 0:
        raise ValueError(f"must be a positive number of seconds, got {raw}")
    return value


def non_negative_seconds(raw: str) -> float:
    value = number(raw, "0 or a positive number of seconds")
    if value < 0:
        raise ValueError(f"must be 0 or a positive number of seconds, got {raw}")
    return value


def usd(raw: str) -> float:
    value = number(raw, "a positive amount of USD")
    if not value > 0:
        raise ValueError(f"must be a positive amount of USD, got {raw}")
    return value


def integer(raw: str, meaning: str) -> int:
    """`raw` as an integer; else a ValueError saying in plain words what was expected (Python's own reads "invalid
    literal for int() with base 10")."""
    try:
        return int(str(raw).strip())  # the dashboard's --port arrives parsed already
    except ValueError:
        raise ValueError(f"must be {meaning}, got {raw!r}") from None


def number(raw: str, meaning: str) -> float:
    """`raw` as a finite number (not nan or inf); else a ValueError saying what was expected."""
    try:
        value = float(str(raw).strip())
    except ValueError:
        raise ValueError(f"must be {meaning}, got {raw!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"must be {meaning}, got {raw!r}")
    return value


def transport(raw: str) -> Transport:
    return "streamable-http" if raw == "http" else cast("Transport", raw)


def path(raw: str) -> Path:
    return Path(raw).expanduser()


def boolean(raw: str | bool) -> bool:
    if isinstance(raw, bool):
        return raw
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be 1/true/yes or 0/false/no, got {raw!r}")


def host_name(raw: str) -> str:
    value = raw.strip()
    if not value or any(char in value for char in "/ \t@?#"):
        raise ValueError(f"must be a host name such as agents.example.com, without scheme or path, got {raw!r}")
    return value.lower()


def http_url(raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"must be an http(s) URL, got {raw!r}")
    return raw


def database_url(raw: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(raw.strip())
    if parts.scheme not in ("postgresql", "postgres") or not (parts.netloc or parts.query):
        raise ValueError("must be a Postgres URL, postgresql://USER:PASSWORD@HOST:PORT/DATABASE")
    return raw.strip()


def setting_sources(raw: str) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    unknown = [name for name in chosen if name not in SELECTABLE_LEVELS]
    if unknown:
        raise ValueError(f"must be a comma-separated list of {', '.join(SELECTABLE_LEVELS)}, got {raw!r}")
    return chosen
