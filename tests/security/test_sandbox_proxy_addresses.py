"""Attack: with `allowedDomains: ["*"]`, a sandboxed command reaches a service on this machine or its private
network through the filtering proxy by spelling the address another way.

The proxy refused names and literals that resolve to loopback, but it compared the address it resolved only
against loopback, link-local and unspecified IPv4/IPv6 as Python classifies them: `[::ffff:127.0.0.1]` (an IPv4
address mapped into IPv6, which Python does not call loopback) went through, and so did this machine's own
private-network address. Checked to succeed against 74f4b0f.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from mcp_subagents.sandbox.domains import DomainRules
from mcp_subagents.sandbox.proxy import FilteringProxy

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def origin(host: str) -> AsyncGenerator[int]:
    """A TCP server on `host` that answers every request with a secret."""

    async def serve(stream: SocketStream) -> None:
        async with stream:
            await BufferedByteReceiveStream(stream).receive_until(b"\r\n\r\n", 65536)
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nORIGIN-SECRET")

    listener = await anyio.create_tcp_listener(local_host=host)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield listener.extra(SocketAttribute.local_port)
        group.cancel_scope.cancel()


@asynccontextmanager
async def wildcard_proxy(tmp_path: Path) -> AsyncGenerator[FilteringProxy]:
    proxy = FilteringProxy(DomainRules(["*"]), tmp_path / "proxy.sock")
    async with anyio.create_task_group() as group:
        await group.start(proxy.serve)
        yield proxy
        group.cancel_scope.cancel()


async def through(proxy: FilteringProxy, request: str) -> bytes:
    with anyio.fail_after(10):
        async with await anyio.connect_unix(proxy.socket_path) as stream:
            await stream.send(request.encode())
            received = b""
            async for chunk in stream:
                received += chunk
            return received


LOOPBACK_SPELLINGS = [
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[0:0:0:0:0:ffff:127.0.0.1]",
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "127.1",
    "0",
    "0.0.0.0",
    "localhost.",
]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
async def test_no_spelling_of_this_machine_gets_through_a_wildcard(tmp_path: Path, host: str) -> None:
    async with origin("0.0.0.0") as port, wildcard_proxy(tmp_path) as proxy:
        plain = await through(proxy, f"GET http://{host}:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n")
        tunnel = await through(proxy, f"CONNECT {host}:{port} HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n")
    for answer in (plain, tunnel):
        assert b"ORIGIN-SECRET" not in answer, (host, answer[:200])
        assert answer.startswith((b"HTTP/1.1 403", b"HTTP/1.1 400", b"HTTP/1.1 502")), answer[:200]


def _own_private_addresses() -> list[str]:
    """This machine's own non-loopback addresses that are not on the public internet (its private network)."""
    found: set[str] = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("203.0.113.1", 9))  # no packet is sent: this only asks which address the route uses
            found.add(probe.getsockname()[0])
        except OSError:
            pass
    try:
        found |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    except OSError:
        pass
    return sorted(
        address
        for address in found
        if not ipaddress.ip_address(address).is_loopback and not ipaddress.ip_address(address).is_global
    )


@pytest.mark.skipif(not _own_private_addresses(), reason="this machine has no private-network address")
async def test_the_private_network_is_out_of_reach_of_a_wildcard(tmp_path: Path) -> None:
    address = _own_private_addresses()[0]
    async with origin("0.0.0.0") as port, wildcard_proxy(tmp_path) as proxy:
        answer = await through(proxy, f"GET http://{address}:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n")
    assert b"ORIGIN-SECRET" not in answer and answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert b"private" in answer


async def test_naming_the_address_exactly_still_allows_it(tmp_path: Path) -> None:
    async with origin("127.0.0.1") as port:
        proxy = FilteringProxy(DomainRules([f"127.0.0.1:{port}"]), tmp_path / "proxy.sock")
        async with anyio.create_task_group() as group:
            await group.start(proxy.serve)
            answer = await through(proxy, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n")
            assert answer.endswith(b"ORIGIN-SECRET")
            group.cancel_scope.cancel()
