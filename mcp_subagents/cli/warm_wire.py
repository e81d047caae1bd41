"""What the warm server (`cli.warm_server`) and the thin stdio relay (`cli.warm_relay`) share: where the socket
lives, which code it serves, and the messages on it.

The socket's folder is the person's own (`$XDG_RUNTIME_DIR/mcp-subagents`, else `/tmp/mcp-subagents-<uid>`), made
0700 and checked to be a real folder they own before anything connects or listens there; both ends also check that
the other end runs as the same user. The socket's name carries a digest of the code (version, interpreter, the
package's files), so a server started from other code is never attached to.

Only the standard library is used here: the relay runs it before anything else is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, cast

from ..core.sockets import receive_exactly
from ..core.version import __version__

NO_WARM_VARIABLE = "MCP_SUBAGENTS_NO_WARM"
NO_WARM_FLAG = "--no-warm"
IDLE_VARIABLE = "MCP_SUBAGENTS_WARM_IDLE"
DEFAULT_IDLE_S = 1800.0
"""How long the warm server waits without a connection before it exits (30 minutes)."""
FOLDER_MODE = 0o700
HELLO_LIMIT = 4 * 1024 * 1024
"""The largest command line, environment and folder a relay may send (an environment is rarely over 100 KiB)."""
_FOLDER_LIMIT = 107 - len("/0123456789abcdef0123.sock")
_FALSE_WORDS = frozenset({"", "0", "false", "no", "off"})
_LENGTH = struct.Struct("!I")
_PEER_CREDENTIALS = struct.Struct("3i")


class WireError(Exception):
    """The other end broke the protocol or went away."""


class WarmAddress(NamedTuple):
    """Where the warm server for this code listens, and the lock the one serving it holds. (A NamedTuple, as Hello:
    `dataclasses` imports `inspect`, a third of a relay's start.)"""

    folder: Path
    key: str

    @property
    def socket_path(self) -> Path:
        return self.folder / f"{self.key}.sock"

    @property
    def lock_path(self) -> Path:
        return self.folder / f"{self.key}.lock"

    @property
    def log_path(self) -> Path:
        return self.folder / f"{self.key}.log"


class Hello(NamedTuple):
    """What a relay hands the warm server: the process it stands for, as the server must become it."""

    argv: list[str]
    environ: dict[str, str]
    cwd: str
    umask: int

    def encode(self) -> bytes:
        return json.dumps(
            {"argv": self.argv, "environ": self.environ, "cwd": self.cwd, "umask": self.umask},
            ensure_ascii=False,
            separators=(",", ":"),
        ).encode("utf-8", "surrogateescape")

    @classmethod
    def decode(cls, raw: bytes) -> Hello:
        try:
            data = json.loads(raw.decode("utf-8", "surrogateescape"))
        except ValueError as exc:
            raise WireError(f"unreadable hello: {exc}") from None
        if not isinstance(data, dict):
            raise WireError("the hello is not an object")
        fields = cast("dict[str, Any]", data)
        argv, environ, cwd, umask = fields.get("argv"), fields.get("environ"), fields.get("cwd"), fields.get("umask")
        if not (_strings(argv) and isinstance(environ, dict) and isinstance(cwd, str) and isinstance(umask, int)):
            raise WireError("the hello lacks argv, environ, cwd or umask")
        pairs = cast("dict[object, object]", environ)
        if not all(isinstance(key, str) and isinstance(value, str) for key, value in pairs.items()):
            raise WireError("the hello's environment is not text")
        return cls(cast("list[str]", argv), cast("dict[str, str]", environ), cwd, umask & 0o777)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in cast("list[object]", value))


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


def _warm_folder(environ: Mapping[str, str]) -> Path | None:
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    candidate = Path(runtime) / "mcp-subagents"
    usable = runtime and os.path.isabs(runtime) and _owned_private(Path(runtime), exact=False)
    if not usable or len(os.fsencode(candidate)) > _FOLDER_LIMIT:  # a Unix socket's path has at most 107 bytes
        candidate = Path("/tmp") / f"mcp-subagents-{os.getuid()}"
    with contextlib.suppress(FileExistsError, OSError):
        os.mkdir(candidate, FOLDER_MODE)
    return candidate if _owned_private(candidate, exact=True) else None


def _owned_private(folder: Path, *, exact: bool) -> bool:
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
    path, size and modification time), so an upgrade or an edited checkout never reaches an older server."""
    interpreter = os.path.realpath(sys.executable)  # `python` and `python3` of one environment are one
    digest = hashlib.sha256(f"{__version__}\0{interpreter}\0{sys.prefix}\0{sys.version}".encode())
    package = Path(__file__).resolve().parent.parent
    for path, status in sorted(_python_files(package)):
        digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode(errors="surrogateescape"))
    return digest.hexdigest()[:20]


def _python_files(folder: Path) -> list[tuple[str, os.stat_result]]:
    found: list[tuple[str, os.stat_result]] = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                found.extend(_python_files(Path(entry.path)))
            elif entry.name.endswith(".py"):
                found.append((entry.path, entry.stat(follow_symlinks=False)))
    return found


def peer_uid(connection: socket.socket) -> int:
    """The user id of the process at the other end of a Unix socket (from the kernel, not from what it says)."""
    raw = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEER_CREDENTIALS.size)
    _pid, uid, _gid = _PEER_CREDENTIALS.unpack(raw)
    return uid


def send_hello(connection: socket.socket, hello: Hello, descriptors: Sequence[int]) -> None:
    """The hello's length travels with the descriptors in one message; the hello follows."""
    body = hello.encode()
    socket.send_fds(connection, [_LENGTH.pack(len(body))], list(descriptors))
    connection.sendall(body)


def receive_hello(connection: socket.socket, descriptor_count: int) -> tuple[Hello, list[int]]:
    """The hello and exactly `descriptor_count` descriptors; a short or oversized message is a WireError (and the
    descriptors that came with it are closed)."""
    header, descriptors, _flags, _address = socket.recv_fds(connection, _LENGTH.size, descriptor_count + 1)
    try:
        if len(descriptors) != descriptor_count or len(header) != _LENGTH.size:
            raise WireError(f"expected {descriptor_count} descriptors with the hello, got {len(descriptors)}")
        (length,) = _LENGTH.unpack(header)
        if length > HELLO_LIMIT:
            raise WireError(f"a hello of {length} bytes is over the limit")
        try:
            body = receive_exactly(connection, length)
        except EOFError:
            raise WireError("the connection closed in the middle of the hello") from None
        return Hello.decode(body), descriptors
    except (WireError, OSError):
        for descriptor in descriptors:
            os.close(descriptor)
        raise


def send_message(connection: socket.socket, message: Mapping[str, int]) -> None:
    """One small JSON object on a line: `started`, `exit` (to the relay) or `signal` (to the server)."""
    connection.sendall(json.dumps(message).encode() + b"\n")


class MessageReader:
    """The messages of `send_message` as they arrive; None at the end of the connection."""

    def __init__(self, connection: socket.socket) -> None:
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
        try:
            data = json.loads(line)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        items = cast("dict[str, object]", data).items()
        return {key: value for key, value in items if isinstance(value, int) and not isinstance(value, bool)}
