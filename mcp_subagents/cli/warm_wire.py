"""What the warm server (`cli.warm_server`) and the thin stdio relay (`cli.warm_relay`) share: where the socket
lives, which code it serves, and the messages on it.

The socket's folder is the person's own (`$XDG_RUNTIME_DIR/mcp-subagents`, else `/tmp/mcp-subagents-<uid>`), made
0700 and checked to be a real folder they own before anything connects or listens there; both ends also check that
the other end runs as the same user. The socket's name carries a digest of the code (version, interpreter, the
package's files), so a server started from other code is never attached to.

The relay runs this before anything else is imported, so it imports only what the interpreter's start has already
loaded or what is written in C (`_socket`, `_blake2`): no `typing`, `pathlib`, `json`, `hashlib` or `socket`, which
together were half of a relay's CPU. The wire is as plain: the hello is its fields between NUL bytes (no command
line, environment or folder can hold one), and each message a name and a number on a line.
"""

from __future__ import annotations

import os
import stat
import sys
from _socket import SCM_RIGHTS, SO_PEERCRED, SOL_SOCKET, socket

from ..core.version import __version__

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it: hashlib's own fallback
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

NO_WARM_VARIABLE = "MCP_SUBAGENTS_NO_WARM"
NO_WARM_FLAG = "--no-warm"
IDLE_VARIABLE = "MCP_SUBAGENTS_WARM_IDLE"
DEFAULT_IDLE_S = 1800.0
"""How long the warm server waits without a connection before it exits (30 minutes)."""
FOLDER_MODE = 0o700
HELLO_LIMIT = 4 * 1024 * 1024
"""The largest command line, environment and folder a relay may send (an environment is rarely over 100 KiB)."""
HELLO_LENGTH_SIZE = 4
"""The hello's length, big-endian, travels with the descriptors; the hello follows."""
_HELLO_MARK = "mcp-subagents-hello-1"
_FOLDER_LIMIT = 107 - len("/0123456789abcdef0123.sock")
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
_INT_SIZE = 4


class WireError(Exception):
    """The other end broke the protocol or went away."""


class WarmAddress:
    """Where the warm server for this code listens, and the lock the one serving it holds (paths as text: the
    relay does without `pathlib`)."""

    __slots__ = ("folder", "key")

    def __init__(self, folder: str, key: str) -> None:
        self.folder = folder
        self.key = key

    @property
    def socket_path(self) -> str:
        return f"{self.folder}/{self.key}.sock"

    @property
    def lock_path(self) -> str:
        return f"{self.folder}/{self.key}.lock"

    @property
    def log_path(self) -> str:
        return f"{self.folder}/{self.key}.log"


class Hello:
    """What a relay hands the warm server: the process it stands for, as the server must become it."""

    __slots__ = ("argv", "cwd", "environ", "umask")

    def __init__(self, argv: list[str], environ: dict[str, str], cwd: str, umask: int) -> None:
        self.argv = argv
        self.environ = environ
        self.cwd = cwd
        self.umask = umask

    def encode(self) -> bytes:
        """The mark, umask, folder, argument count, arguments and `NAME=value` pairs, between NUL bytes."""
        fields = [_HELLO_MARK, str(self.umask), self.cwd, str(len(self.argv)), *self.argv]
        fields += [f"{name}={value}" for name, value in self.environ.items()]
        if any("\0" in field for field in fields) or any(not name or "=" in name for name in self.environ):
            raise WireError("a command line, environment or folder that no process could have")
        return "\0".join(fields).encode("utf-8", "surrogateescape")

    @classmethod
    def decode(cls, raw: bytes) -> Hello:
        fields = raw.decode("utf-8", "surrogateescape").split("\0")
        if len(fields) < 4 or fields[0] != _HELLO_MARK:
            raise WireError("unreadable hello")
        umask, cwd, count = _number(fields[1]), fields[2], _number(fields[3])
        if umask is None or count is None or len(fields) < 4 + count:
            raise WireError("the hello lacks argv, environ, cwd or umask")
        argv, pairs = fields[4 : 4 + count], fields[4 + count :]
        if not all(pair.find("=") > 0 for pair in pairs):
            raise WireError("the hello's environment is not NAME=value pairs")
        environ = {name: value for name, _, value in (pair.partition("=") for pair in pairs)}
        return cls(argv, environ, cwd, umask & 0o777)


def _number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else None


def warm_disabled(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """`--no-warm` or `MCP_SUBAGENTS_NO_WARM` (1/true/yes) asks for a process of its own."""
    if NO_WARM_FLAG in argv:
        return True
    return environ.get(NO_WARM_VARIABLE, "").strip().lower() not in _FALSE_WORDS


def warm_address(environ: Mapping[str, str]) -> WarmAddress | None:
    """The address for this code, its folder made private; None when no folder of the person's own can be had, or
    off Linux (the peer check needs SO_PEERCRED)."""
    if not sys.platform.startswith("linux"):
        return None
    folder = _warm_folder(environ)
    return None if folder is None else WarmAddress(folder, code_key())


def _warm_folder(environ: Mapping[str, str]) -> str | None:
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    candidate = os.path.join(runtime, "mcp-subagents")
    usable = runtime and os.path.isabs(runtime) and _owned_private(runtime, exact=False)
    if not usable or len(os.fsencode(candidate)) > _FOLDER_LIMIT:  # a Unix socket's path has at most 107 bytes
        candidate = f"/tmp/mcp-subagents-{os.getuid()}"
    try:
        os.mkdir(candidate, FOLDER_MODE)
    except OSError:  # there already (checked below), or not to be made
        pass
    return candidate if _owned_private(candidate, exact=True) else None


def _owned_private(folder: str, *, exact: bool) -> bool:
    """A real folder (not a link) of this user that no one else may enter (or, for a runtime folder, write)."""
    try:
        status = os.lstat(folder)
    except OSError:
        return False
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid():
        return False
    others = stat.S_IMODE(status.st_mode) & (0o077 if exact else 0o022)
    return others == 0


def code_key() -> str:
    """A digest of the code a server would run: the version, the interpreter and each of the package's files (its
    path, size and modification time), so an upgrade or an edited checkout never reaches an older server. (Taken
    at each start: the package's 230 files' metadata cost the relay about a millisecond.)"""
    interpreter = os.path.realpath(sys.executable)  # `python` and `python3` of one environment are one
    digest = blake2b(f"{__version__}\0{interpreter}\0{sys.prefix}\0{sys.version}".encode(), digest_size=10)
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    for path, status in sorted(_python_files(package)):
        digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode(errors="surrogateescape"))
    return digest.hexdigest()


def _python_files(folder: str) -> list[tuple[str, os.stat_result]]:
    found: list[tuple[str, os.stat_result]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                found.extend(_python_files(entry.path))
            elif entry.name.endswith(".py"):
                found.append((entry.path, entry.stat(follow_symlinks=False)))
    return found


def peer_uid(connection: socket) -> int:
    """The user id of the process at the other end of a Unix socket (from the kernel, not from what it says)."""
    raw = connection.getsockopt(SOL_SOCKET, SO_PEERCRED, 3 * _INT_SIZE)  # struct ucred: pid, uid, gid
    return int.from_bytes(raw[_INT_SIZE : 2 * _INT_SIZE], sys.byteorder)


def send_hello(connection: socket, hello: Hello, descriptors: Sequence[int]) -> None:
    """The hello's length travels with the descriptors in one message; the hello follows."""
    body = hello.encode()
    rights = b"".join(descriptor.to_bytes(_INT_SIZE, sys.byteorder) for descriptor in descriptors)
    connection.sendmsg([len(body).to_bytes(HELLO_LENGTH_SIZE, "big")], [(SOL_SOCKET, SCM_RIGHTS, rights)])
    connection.sendall(body)


def send_message(connection: socket, message: Mapping[str, int]) -> None:
    """A name and a number on a line each: `started`, `exit` (to the relay) or `signal` (to the server)."""
    connection.sendall("".join(f"{name} {value}\n" for name, value in message.items()).encode())


class MessageReader:
    """The messages of `send_message` as they arrive; None at the end of the connection (or at a line that is
    not a message: the other end is not one of ours)."""

    __slots__ = ("_connection", "_pending")

    def __init__(self, connection: socket) -> None:
        self._connection = connection
        self._pending = b""

    def next(self) -> dict[str, int] | None:
        while b"\n" not in self._pending:
            try:
                chunk = self._connection.recv(4096)
            except OSError:
                return None
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        name, _, value = line.decode("ascii", "replace").partition(" ")
        number = _number(value.removeprefix("-"))
        if not name or number is None:
            return None
        return {name: -number if value.startswith("-") else number}
