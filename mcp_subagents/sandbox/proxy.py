"""The filtering HTTP/HTTPS proxy sandboxed commands reach the network through.

The sandbox has no network of its own. Inside it, socat relays a loopback TCP port (`HTTP_PROXY`, `HTTPS_PROXY`,
`ALL_PROXY`) to a Unix socket bound into the sandbox; this proxy, running in the server, serves that socket. It
understands `CONNECT host:port` (HTTPS and any other TCP) and plain `GET http://host/...` requests, lets through only
the hosts `DomainRules` allow, connects to the address it checked itself (so a name that resolves to this machine's
loopback or link-local addresses is refused unless the rules name that host exactly), and remembers every refusal
so the command's result can say what was blocked.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import anyio.abc
import anyio.lowlevel
from anyio.abc import TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from .domains import DomainRules, is_ip_literal, normalize_host

logger = logging.getLogger(__name__)

MAX_REQUEST_HEAD = 64 * 1024
HEAD_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 30.0
DRAIN_SECONDS = 1.0
_HOP_BY_HOP = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


class _BadRequest(Exception):
    def __init__(self, status: int, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class _Target:
    host: str
    port: int
    connect: bool
    """A CONNECT tunnel; otherwise a plain HTTP request to forward."""
    request: bytes = b""
    """For plain HTTP: the request head rewritten for the origin server."""


@dataclass(slots=True)
class FilteringProxy:
    rules: DomainRules
    socket_path: Path
    refusals: list[str] = field(default_factory=lambda: list[str]())
    """Why each refused request was refused, in order, without repeats."""

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        # Accepting by hand: anyio's Unix listener can fail a cancelled accept with InvalidStateError when a
        # connection arrives in the same loop iteration; wait_readable copes with that.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with listener:
            listener.bind(str(self.socket_path))
            self.socket_path.chmod(0o600)
            listener.listen(64)
            listener.setblocking(False)
            task_status.started()
            async with anyio.create_task_group() as handlers:
                while True:
                    await anyio.wait_readable(listener)
                    try:
                        connection, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
                    handlers.start_soon(self._handle_socket, connection)

    async def _handle_socket(self, connection: socket.socket) -> None:
        await self._handle(_RawStream(connection))

    def _refuse(self, reason: str) -> None:
        if reason not in self.refusals:
            self.refusals.append(reason)

    async def _handle(self, client: _RawStream) -> None:
        async with client:
            try:
                await self._proxy(client)
            except _BadRequest as exc:
                await _answer(client, exc.status, exc.reason, exc.detail)
                await _drain(client)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
                pass

    async def _proxy(self, client: _RawStream) -> None:
        buffered = BufferedByteReceiveStream(client)
        try:
            with anyio.fail_after(HEAD_TIMEOUT_SECONDS):
                head = await buffered.receive_until(b"\r\n\r\n", MAX_REQUEST_HEAD)
        except anyio.DelimiterNotFound:
            raise _BadRequest(431, "Request Header Fields Too Large", "the request head is too large") from None
        except (anyio.IncompleteRead, TimeoutError):
            return
        target = _parse(head)
        verdict = self.rules.check(target.host, target.port)
        if not verdict.allowed:
            self._refuse(verdict.reason)
            raise _BadRequest(403, "Forbidden", f"blocked by the mcp-subagents sandbox: {verdict.reason}")
        address = await self._resolve(target, explicit=verdict.explicit)
        try:
            with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
                upstream = await _connect_tcp(address, target.port)
        except (OSError, TimeoutError) as exc:
            raise _BadRequest(502, "Bad Gateway", f"could not connect to {target.host}:{target.port}: {exc}") from None
        async with upstream:
            if target.connect:
                await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                await upstream.send(target.request)
            if buffered.buffer:
                await upstream.send(bytes(buffered.buffer))
            await _relay(client, upstream)

    async def _resolve(self, target: _Target, *, explicit: bool) -> str:
        """The address to connect to. A local address is only reached when the rules name the host exactly."""
        try:
            infos = await anyio.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _BadRequest(502, "Bad Gateway", f"cannot resolve {target.host}: {exc}") from None
        addresses = [str(info[4][0]) for info in infos]
        if not addresses:
            raise _BadRequest(502, "Bad Gateway", f"cannot resolve {target.host}")
        local = [address for address in addresses if not_public(address)]
        if local and not explicit:
            reason = (
                f"network access to {target.host}:{target.port} is refused: it resolves to {local[0]}, an address of "
                "this machine or of a private network; name the host itself in sandbox.network.allowedDomains to "
                "allow that"
            )
            self._refuse(reason)
            raise _BadRequest(403, "Forbidden", f"blocked by the mcp-subagents sandbox: {reason}")
        return addresses[0]


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")


def not_public(address: str) -> bool:
    """Whether connecting to `address` could reach this machine or a private network: loopback, private, link-local,
    shared, unspecified, reserved or multicast ranges, also when written inside an IPv6 address (mapped, compatible,
    NAT64, 6to4 or Teredo). Anything that is not an IP address counts as not public."""
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return True
    return any(not form.is_global or form.is_multicast for form in _forms(ip))


def _forms(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """The address, and the IPv4 addresses an IPv6 address carries inside it."""
    forms: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            forms.append(ip.ipv4_mapped)
        if ip.sixtofour is not None:
            forms.append(ip.sixtofour)
        if ip.teredo is not None:
            forms += list(ip.teredo)
        low = int(ip) & 0xFFFFFFFF
        if int(ip) >> 32 == 0 or ip in _NAT64 or ip in _NAT64_LOCAL:  # IPv4-compatible, NAT64
            forms.append(ipaddress.IPv4Address(low))
    return forms


def _parse(head: bytes) -> _Target:
    text = head.decode("latin-1")
    request_line, _, rest = text.partition("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, "Bad Request", "not an HTTP/1.x proxy request")
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, port = _authority(target, default_port=None)
        return _Target(host=host, port=port, connect=True)
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.hostname:
        raise _BadRequest(
            400, "Bad Request", "only absolute http:// requests and CONNECT tunnels (for https) go through this proxy"
        )
    try:
        port = url.port or 80
    except ValueError:
        raise _BadRequest(400, "Bad Request", f"bad port in {target}") from None
    path = url.path or "/"
    if url.query:
        path += f"?{url.query}"
    headers = [line for line in rest.split("\r\n") if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
    forwarded = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
    return _Target(host=normalize_host(url.hostname), port=port, connect=False, request=forwarded.encode("latin-1"))


def _authority(authority: str, *, default_port: int | None) -> tuple[str, int]:
    host, _, port_text = authority.rpartition(":")
    if not host or "]" in port_text:
        host, port_text = authority, ""
    if not port_text:
        if default_port is None:
            raise _BadRequest(400, "Bad Request", f"CONNECT needs host:port, got {authority!r}")
        return normalize_host(host), default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise _BadRequest(400, "Bad Request", f"bad port in {authority!r}")
    name = normalize_host(host)
    if not name or (":" in name and not is_ip_literal(name)):
        raise _BadRequest(400, "Bad Request", f"bad host in {authority!r}")
    return name, int(port_text)


async def _answer(client: _RawStream, status: int, reason: str, detail: str) -> None:
    body = (detail + "\n").encode("utf-8", errors="replace")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
        f"X-Sandbox-Reason: {detail.encode('ascii', errors='replace').decode()[:300]}\r\nConnection: close\r\n\r\n"
    )
    try:
        await client.send(head.encode("latin-1", errors="replace") + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _drain(client: _RawStream) -> None:
    """Read what the client is still sending (briefly): closing with unread data would reset the connection and
    lose the answer just sent."""
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            await client.send_eof()
            received = 0
            while received < MAX_REQUEST_HEAD * 16:
                received += len(await client.receive())
        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            pass


async def _relay(one: _RawStream, other: _RawStream) -> None:
    async def pump(source: _RawStream, sink: _RawStream) -> None:
        try:
            async for chunk in source:
                await sink.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        try:
            await sink.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass

    async with anyio.create_task_group() as group:
        group.start_soon(pump, one, other)
        group.start_soon(pump, other, one)


class _RawStream(anyio.abc.ByteStream):
    """A non-blocking socket as a byte stream, waiting with `wait_readable`/`wait_writable`.

    anyio's own Unix socket streams can fail a receive cancelled at the wrong moment with an InvalidStateError in
    the event loop; a proxy cancels its relays whenever a command ends, so it uses this instead.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = self._sock.recv(max_bytes)
            except (BlockingIOError, InterruptedError):
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            try:
                sent = self._sock.send(view)
            except (BlockingIOError, InterruptedError):
                await anyio.wait_writable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[sent:]

    async def send_eof(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        self._sock.close()
        await anyio.lowlevel.checkpoint()


async def _connect_tcp(address: str, port: int) -> _RawStream:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    try:
        error = sock.connect_ex((address, port))
        if error not in (0, errno.EINPROGRESS):
            raise OSError(error, os.strerror(error))
        await anyio.wait_writable(sock)
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            raise OSError(error, os.strerror(error))
    except BaseException:
        sock.close()
        raise
    return _RawStream(sock)
