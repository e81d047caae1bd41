"""Attack: a sandboxed command talks to a service on this machine through a Unix socket outside `/run`.

The sandbox hides `/run` (docker, systemd, dbus), but a socket anywhere else (an agent under the home directory, a
database in /var/lib, an IDE's socket) accepted a sandboxed `connect()` before the fix: a read-only mount does not
stop it. Checked to succeed against 74f4b0f.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from threading import Thread

import pytest

from tests.support import SANDBOX_PYTHON

from .conftest import requires_bwrap, requires_socat
from .test_sandbox_confinement import ORIGIN_HOST, Machine, bash_in, fetch, machine, origin

pytestmark = [pytest.mark.anyio, requires_bwrap]
__all__ = ["machine"]

CONNECT = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1]); print(s.recv(100).decode())\n"


@contextmanager
def listening(path: Path) -> Generator[None]:
    """A Unix socket service that greets whoever connects."""
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(8)
    os.chmod(path, 0o777)

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"SOCKET-SECRET")

    thread = Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.close()


def connect(path: Path) -> str:
    return f"{SANDBOX_PYTHON} -c '{CONNECT}' {path}"


async def test_a_unix_socket_outside_run_is_out_of_reach(machine: Machine) -> None:
    path = machine.home / "agent.sock"
    with listening(path):
        async with bash_in(machine) as run:
            result = await run(connect(path))
            pair = await run(f"{SANDBOX_PYTHON} -c 'import socket; socket.socketpair(); print(\"pair ok\")'")
    assert "SOCKET-SECRET" not in result
    assert "Operation not permitted" in result
    assert pair == "pair ok"  # a pair of sockets reaches nothing outside: programs that use one keep working


@requires_socat
async def test_with_the_network_proxy_sockets_stay_closed_and_the_proxy_works(machine: Machine) -> None:
    path = machine.home / "agent.sock"
    with listening(path), origin() as port:
        block = {"network": {"allowedDomains": [f"{ORIGIN_HOST}:{port}"]}}
        async with bash_in(machine, block) as run:
            result = await run(connect(path))
            fetched = await run(fetch(port))
    assert "SOCKET-SECRET" not in result and "Operation not permitted" in result
    assert fetched == "hello from origin"


async def test_allow_all_unix_sockets_opens_them_as_the_settings_say(machine: Machine) -> None:
    path = machine.home / "agent.sock"
    with listening(path):
        async with bash_in(machine, {"network": {"allowAllUnixSockets": True}}) as run:
            result = await run(connect(path))
    assert result == "SOCKET-SECRET"
