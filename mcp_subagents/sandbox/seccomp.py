"""A seccomp filter that keeps sandboxed commands from opening Unix sockets.

A Unix socket is a file: bubblewrap's read-only view of the file system does not stop `connect()` to one (the
permission check of a socket ignores a read-only mount), so a command could reach an agent, a database or a desktop
session through any socket it can see outside `/run`. The filter makes `socket(AF_UNIX, ...)` fail with EPERM
(`socketpair`, which cannot reach anything outside, still works), and refuses `io_uring_setup`, whose requests can
open sockets without the `socket` system call. It is a classic BPF program in the form bubblewrap's `--seccomp`
reads, built here for the machine's own architecture (x86-64, with the 32-bit and x32 calls covered, or arm64).

When the network proxy runs, the relay inside the sandbox needs a Unix socket itself, so it starts first and the
filter is put on the command alone (`APPLY_AND_EXEC`, run by Python's own interpreter).
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass
from typing import Final

_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_RET_K: Final = 0x06
_ALLOW: Final = 0x7FFF0000
_ERRNO: Final = 0x00050000
_AF_UNIX: Final = 1
_NR, _ARCH, _ARG0 = 0, 4, 16
"""Offsets in `struct seccomp_data`: the call's number, the architecture, the low half of the first argument."""
_X32_BIT: Final = 0x40000000


@dataclass(frozen=True, slots=True)
class _Arch:
    audit: int
    socket: int
    io_uring_setup: int = 425


_NATIVE: Final = {
    "x86_64": _Arch(audit=0xC000003E, socket=41),
    "aarch64": _Arch(audit=0xC00000B7, socket=198),
    "arm64": _Arch(audit=0xC00000B7, socket=198),
}
_I386: Final = _Arch(audit=0x40000003, socket=359)
_I386_SOCKETCALL: Final = 102


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (`platform.machine()` by default); None for an architecture it is not written for."""
    native = _NATIVE.get(machine or platform.machine())
    if native is None:
        return None
    program = _Program()
    program.load(_ARCH)
    program.jump_if(native.audit, then="native", otherwise="foreign")
    program.label("native")
    program.load(_NR)
    if native.audit == _NATIVE["x86_64"].audit:
        program.jump_at_least(_X32_BIT, then="deny", otherwise="native calls")
        program.label("native calls")
    program.jump_if(native.io_uring_setup, then="deny", otherwise="native socket")
    program.label("native socket")
    program.jump_if(native.socket, then="domain", otherwise="allow")
    program.label("foreign")
    program.jump_if(_I386.audit, then="i386", otherwise="allow")
    program.label("i386")
    program.load(_NR)
    # socketcall multiplexes every socket call behind a pointer the filter cannot read: 32-bit programs lose it.
    program.jump_if(_I386_SOCKETCALL, then="deny", otherwise="i386 uring")
    program.label("i386 uring")
    program.jump_if(_I386.io_uring_setup, then="deny", otherwise="i386 socket")
    program.label("i386 socket")
    program.jump_if(_I386.socket, then="domain", otherwise="allow")
    program.label("domain")
    program.load(_ARG0)
    program.jump_if(_AF_UNIX, then="deny", otherwise="allow")
    program.label("allow")
    program.ret(_ALLOW)
    program.label("deny")
    program.ret(_ERRNO | errno.EPERM)
    return program.assemble()


class _Program:
    """A classic BPF program with named jump targets, assembled into `struct sock_filter` records."""

    def __init__(self) -> None:
        self._steps: list[tuple[int, int, str | None, str | None]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._steps)

    def load(self, offset: int) -> None:
        self._steps.append((_LD_W_ABS, offset, None, None))

    def jump_if(self, value: int, *, then: str, otherwise: str) -> None:
        self._steps.append((_JEQ_K, value, then, otherwise))

    def jump_at_least(self, value: int, *, then: str, otherwise: str) -> None:
        self._steps.append((_JGE_K, value, then, otherwise))

    def ret(self, value: int) -> None:
        self._steps.append((_RET_K, value, None, None))

    def assemble(self) -> bytes:
        records: list[bytes] = []
        for index, (code, k, then, otherwise) in enumerate(self._steps):
            jt = self._offset(index, then)
            jf = self._offset(index, otherwise)
            records.append(struct.pack("=HBBI", code, jt, jf, k))
        return b"".join(records)

    def _offset(self, index: int, label: str | None) -> int:
        if label is None:
            return 0
        distance = self._labels[label] - index - 1
        if not 0 <= distance <= 255:
            raise ValueError(f"seccomp jump to {label!r} out of range")
        return distance


APPLY_AND_EXEC: Final = (
    "import ctypes,os,sys\n"
    "f=bytes.fromhex(sys.argv[1])\n"
    "class P(ctypes.Structure):_fields_=[('n',ctypes.c_ushort),('f',ctypes.c_char_p)]\n"
    "c=ctypes.CDLL(None,use_errno=True)\n"
    "p=P(len(f)//8,f)\n"
    "if c.prctl(38,1,0,0,0) or c.prctl(22,2,ctypes.byref(p),0,0):\n"
    " sys.exit('mcp-subagents sandbox: cannot block Unix sockets: '+os.strerror(ctypes.get_errno()))\n"
    "os.execv(sys.argv[2],sys.argv[2:])\n"
)
"""Python code that puts the filter (hex, argv[1]) on itself and becomes the command (argv[2:]); it refuses to run
the command when the filter cannot be put on."""
