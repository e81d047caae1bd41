"""A warm server of the tests' own: its folder in a private runtime folder under tmp_path (`XDG_RUNTIME_DIR`), never
the machine's, and every warm server started from it stopped at the end."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_subagents.cli.warm_wire import WarmAddress, code_key
from tests.fakes.fake_llm import FakeLLM
from tests.processes import is_running, wait_until_gone
from tests.stdio_raw import RawStdioServer
from tests.support import TEST_API_KEY, server_environment

WARM_MODULE = "mcp_subagents.cli.warm_server"
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True, slots=True)
class WarmPlace:
    runtime: Path
    home: Path

    @property
    def address(self) -> WarmAddress:
        """The folder and the socket's name as the relay makes them. The name is the digest the relay takes of the
        code; the socket found in the folder is the one its warm server made."""
        folder = self.runtime / "mcp-subagents"
        made = sorted(folder.glob("*.sock")) if folder.is_dir() else []
        return WarmAddress(str(folder), made[0].stem if made else code_key())

    def environment(
        self, fake: FakeLLM | None = None, *, work: Path | None = None, key: str = TEST_API_KEY, **variables: str
    ) -> dict[str, str]:
        """A host's environment for a server that may use this place's warm server."""
        place = {"XDG_RUNTIME_DIR": str(self.runtime), "MCP_SUBAGENTS_NO_WARM": "0"}
        return server_environment(self.home, fake=fake, key=key, work=work) | place | variables

    def warm_pids(self) -> list[int]:
        """The warm servers started for this place (by their command line, which names its folder)."""
        folder = self.address.folder.encode()
        found: list[int] = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    words = (entry / "cmdline").read_bytes().split(b"\0")
                    if WARM_MODULE.encode() in words and folder in words and is_running(int(entry.name)):
                        found.append(int(entry.name))
        return found

    def children_of(self, pid: int) -> list[int]:
        """The servers the warm server forked (not the bwrap of its sandbox probe, which may be running)."""
        tasks = Path(f"/proc/{pid}/task")
        children = [int(child) for task in tasks.iterdir() for child in (task / "children").read_text().split()]
        return [child for child in children if _is_python(child)]

    def accepts(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(self.address.socket_path)
            except OSError:
                return False
            return True


@asynccontextmanager
async def warm_place(tmp_path: Path) -> AsyncGenerator[WarmPlace]:
    """A runtime folder of its own, short (a socket's path has at most 107 bytes, and xdist's tmp_path is long;
    with a longer one the relay would use the machine's /tmp/mcp-subagents-<uid>)."""
    runtime = Path(tempfile.mkdtemp(prefix="warm-", dir="/tmp"))
    try:
        async with warm_place_in(WarmPlace(runtime, tmp_path / "home")) as place:
            yield place
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@asynccontextmanager
async def warm_place_in(place: WarmPlace) -> AsyncGenerator[WarmPlace]:
    """`place`, and every warm server started for it killed at the end."""
    _stop_adopting_orphans()
    try:
        yield place
    finally:
        for pid in place.warm_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            await wait_until_gone(pid)


def _stop_adopting_orphans() -> None:
    """An in-process server test may have made this test process a child subreaper (`harden_server_process`): a
    warm server, detached by a double fork, would then be re-parented here rather than to init, and the next
    in-process server's `kill_descendants` would end it. A person's host is no subreaper; the tests' must not be."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


async def wait_until_listening(place: WarmPlace) -> int:
    """The warm server's pid once it accepts connections (it preloads for a few seconds first). Nothing tells a
    test when a detached process is ready but its socket: this looks at it until it answers, for at most 60 s."""
    try:
        with anyio.fail_after(60):
            while True:
                pids = place.warm_pids()
                if pids and place.accepts():
                    return pids[0]
                await anyio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"no warm server listens: {_diagnosis(place)}") from None


def _diagnosis(place: WarmPlace) -> str:
    """What a test that waited in vain saw: the folder, the warm server's log, this process's subreaper state."""
    folder = place.runtime / "mcp-subagents"
    listing = sorted(path.name for path in folder.iterdir()) if folder.is_dir() else "no folder"
    logs = {path.name: path.read_text(errors="replace") for path in folder.glob("*.log")} if folder.is_dir() else {}
    status = Path("/proc/self/status").read_text()
    warm = [line for line in status.splitlines() if line.startswith(("NoNewPrivs", "Seccomp", "SigBlk", "SigIgn"))]
    return f"folder {listing}; logs {logs}; this process {warm}; warm servers {place.warm_pids()}"


async def start_through_relay(environ: dict[str, str], *arguments: str) -> RawStdioServer:
    """`mcp-subagents serve` as a host starts it, initialized (2025 era)."""
    return await RawStdioServer.start(environ, arguments=arguments)


def _is_python(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("python")
    except OSError:
        return False
