"""The filtering proxy sandboxed commands reach the network through, driven over its Unix socket as socat would."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
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
async def origin() -> AsyncGenerator[int]:
    """A TCP server on 127.0.0.1 that answers every connection with what it received, as an HTTP response."""

    async def serve(stream: SocketStream) -> None:
        async with stream:
            buffered = BufferedByteReceiveStream(stream)
            head = await buffered.receive_until(b"\r\n\r\n", 65536)
            body = b"origin saw: " + head
            await stream.send(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield listener.extra(SocketAttribute.local_port)
        group.cancel_scope.cancel()


@asynccontextmanager
async def running_proxy(
    tmp_path: Path, allowed: Sequence[str], denied: Sequence[str] = ()
) -> AsyncGenerator[FilteringProxy]:
    proxy = FilteringProxy(DomainRules(allowed, denied), tmp_path / "proxy.sock")
    async with anyio.create_task_group() as group:
        await group.start(proxy.serve)
        yield proxy
        group.cancel_scope.cancel()


async def exchange(proxy: FilteringProxy, request: bytes) -> bytes:
    with anyio.fail_after(10):
        async with await anyio.connect_unix(proxy.socket_path) as stream:
            await stream.send(request)
            received = b""
            async for chunk in stream:
                received += chunk
            return received


async def test_a_connect_tunnel_to_an_allowed_host_carries_bytes_both_ways(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, [f"127.0.0.1:{port}"]) as proxy:
        with anyio.fail_after(10):
            async with await anyio.connect_unix(proxy.socket_path) as stream:
                await stream.send(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                buffered = BufferedByteReceiveStream(stream)
                assert await buffered.receive_until(b"\r\n\r\n", 1024) == b"HTTP/1.1 200 Connection Established"
                await stream.send(b"GET /inside-the-tunnel HTTP/1.1\r\n\r\n")
                answer = await buffered.receive_until(b"inside-the-tunnel", 4096)
    assert answer.startswith(b"HTTP/1.1 200 OK") and proxy.refusals == []
    assert (tmp_path / "proxy.sock").stat().st_mode & 0o777 == 0o600


async def test_a_plain_http_request_is_forwarded_in_origin_form_without_proxy_headers(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, ["127.0.0.1"]) as proxy:
        request = (
            f"GET http://127.0.0.1:{port}/path?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Authorization: Basic eA==\r\n"
            "Proxy-Connection: keep-alive\r\n\r\n"
        ).encode()
        answer = await exchange(proxy, request)
    assert b"origin saw: GET /path?q=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close" in answer
    assert b"Proxy-" not in answer


async def test_a_host_outside_the_allowlist_gets_403_with_the_reason_and_is_remembered(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, ["pypi.org"]) as proxy:
        answer = await exchange(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        again = await exchange(proxy, f"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n".encode())
    reason = f"network access to 127.0.0.1:{port} is not allowed by sandbox.network.allowedDomains"
    assert answer.startswith(b"HTTP/1.1 403 Forbidden") and reason.encode() in answer
    assert b"origin saw" not in answer + again
    assert proxy.refusals == [reason]  # once, however often it was tried


async def test_denied_domains_win_over_allowed_ones(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, ["*"], ["127.0.0.1"]) as proxy:
        answer = await exchange(proxy, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403") and b"denied by sandbox.network.deniedDomains" in answer


async def test_a_wildcard_never_reaches_this_machine_through_a_name_that_resolves_to_loopback(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, ["*"]) as proxy:
        answer = await exchange(proxy, f"CONNECT localhost:{port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403") and b"an address of this machine or of a private network" in answer
    assert b"origin saw" not in answer


async def test_naming_a_local_host_exactly_allows_it(tmp_path: Path) -> None:
    async with origin() as port, running_proxy(tmp_path, ["localhost"]) as proxy:
        answer = await exchange(proxy, f"GET http://localhost:{port}/ok HTTP/1.1\r\n\r\n".encode())
    assert b"origin saw: GET /ok" in answer


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"hello\r\n\r\n", b"400"),
        (b"GET /relative HTTP/1.1\r\n\r\n", b"400"),
        (b"GET ftp://example.com/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT example.com:99999 HTTP/1.1\r\n\r\n", b"400"),
        (b"GET http://x/ HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
    ],
)
async def test_requests_it_cannot_read_get_a_clear_status(tmp_path: Path, request_bytes: bytes, status: bytes) -> None:
    async with running_proxy(tmp_path, ["*"]) as proxy:
        answer = await exchange(proxy, request_bytes)
    assert answer.startswith(b"HTTP/1.1 " + status)
