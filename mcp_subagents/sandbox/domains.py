"""Which hosts sandboxed commands may reach: `sandbox.network.allowedDomains` minus `deniedDomains`."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from ..permissions.patterns import host_matches
from .config import split_host_port


@dataclass(frozen=True, slots=True)
class _Entry:
    host: str
    port: int | None

    def matches(self, host: str, port: int) -> bool:
        return (self.port is None or self.port == port) and host_matches(self.host, host)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    reason: str
    explicit: bool = False
    """An allowing entry names the host itself (no wildcard): local addresses behind it may be reached."""


def normalize_host(host: str) -> str:
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(normalize_host(host))
    except ValueError:
        return False
    return True


class DomainRules:
    def __init__(self, allowed: Iterable[str] = (), denied: Iterable[str] = ()) -> None:
        self._allowed = tuple(_entry(text) for text in allowed)
        self._denied = tuple(_entry(text) for text in denied)

    @property
    def allows_any(self) -> bool:
        return bool(self._allowed)

    def check(self, host: str, port: int) -> Verdict:
        name = normalize_host(host)
        where = f"{name}:{port}"
        if any(entry.matches(name, port) for entry in self._denied):
            return Verdict(False, f"network access to {where} is denied by sandbox.network.deniedDomains")
        matching = [entry for entry in self._allowed if entry.matches(name, port)]
        if matching:
            return Verdict(True, "", explicit=any(entry.host == name for entry in matching))
        return Verdict(False, f"network access to {where} is not allowed by sandbox.network.allowedDomains")


def _entry(text: str) -> _Entry:
    host, port = split_host_port(text)
    return _Entry(normalize_host(host), port if port and port > 0 else None)
