"""The thin relay a host starts: it hands its stdin, stdout and stderr, command line, environment and folder to the
person's warm server (`cli.warm_server`), which forks the real server for them, then waits for that server's end
and exits with its status. Signals it gets (a host's SIGTERM) are passed on; its own end (a host's SIGKILL) ends
the server too.

When there is no warm server yet, it starts one, detached, for the next host, and this start serves itself as
before (`attach` returns None).

Only what the interpreter's start has already loaded, and C modules (`_socket`, `_signal`: the `socket` and
`signal` wrappers import `enum`), are used here: it runs before anything else is imported (`cli.warm_wire`).
"""

from __future__ import annotations

import os
import sys
from _socket import AF_UNIX, SOCK_STREAM, socket

from .warm_wire import (
    IDLE_VARIABLE,
    Hello,
    MessageReader,
    WarmAddress,
    WireError,
    peer_uid,
    send_hello,
    send_message,
    warm_address,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from signal import SIGHUP, SIGINT, SIGTERM, signal
    from types import FrameType
else:
    from _signal import SIGHUP, SIGINT, SIGTERM, signal  # what `signal` wraps, with the same signatures

FORWARDED_SIGNALS = (SIGTERM, SIGINT, SIGHUP)
_WARM_SERVER_ENVIRONMENT = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "XDG_RUNTIME_DIR",
    "TMPDIR",
    IDLE_VARIABLE,
)
"""What the warm server itself is started with: enough to import the same code. Secrets (API keys) stay out of
it; each host's whole environment arrives with its connection."""


def attach(arguments: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """Serve `arguments` through the warm server and return the exit status; None when this process must serve
    itself (no warm server yet, which is then started, or none to be had)."""
    address = warm_address(environ)
    if address is None:
        return None
    connection = _connect(address)
    if connection is None:
        start_warm_server(address)
        return None
    try:
        return _relay(connection, Hello([sys.argv[0], *arguments], dict(environ), os.getcwd(), _umask()))
    finally:
        connection.close()


def _connect(address: WarmAddress) -> socket | None:
    connection = socket(AF_UNIX, SOCK_STREAM)
    try:
        connection.connect(address.socket_path)
        if peer_uid(connection) == os.getuid():
            return connection
    except OSError:
        pass
    connection.close()
    return None


def _umask() -> int:
    current = os.umask(0o077)
    os.umask(current)
    return current


def _relay(connection: socket, hello: Hello) -> int | None:
    try:
        send_hello(connection, hello, (0, 1, 2))
    except (OSError, WireError):
        return None
    reader = MessageReader(connection)
    started = reader.next()
    if started is None or "started" not in started:
        return None  # the warm server refused before touching stdin: serve here
    forwarded: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        forwarded.append(signum)
        try:
            send_message(connection, {"signal": signum})
        except OSError:  # the server is gone: its end is on its way here
            pass

    for signum in FORWARDED_SIGNALS:
        signal(signum, forward)
    while (message := reader.next()) is not None:
        if "exit" in message:
            return message["exit"]
    # The server ended without saying how: after a SIGTERM that is its clean way out (`cli.serve`).
    return 0 if forwarded else 1


def start_warm_server(address: WarmAddress) -> None:
    """Start the warm server detached (its own session, `/` as its folder, /dev/null as stdio, none of this
    process's descriptors), without waiting for it."""
    environment = {name: value for name in _WARM_SERVER_ENVIRONMENT if (value := os.environ.get(name)) is not None}
    command = [sys.executable, "-P", "-m", "mcp_subagents.cli.warm_server", address.folder, address.key]
    try:
        middle = os.fork()
    except OSError:
        return
    if middle == 0:
        _detach_and_exec(command, environment)
    try:
        os.waitpid(middle, 0)
    except ChildProcessError:  # reaped by someone else (a SIGCHLD handler of an embedding program)
        pass


def _detach_and_exec(command: list[str], environment: dict[str, str]) -> None:
    """In the forked child: a second fork so the warm server is nobody's child here, then exec it."""
    try:
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir("/")
        os.execve(command[0], command, environment)
    finally:
        os._exit(127)
