"""Attacks on the warm server: another user attaching to it (to get a server that runs as its owner, with their
environment's keys), and a folder planted where its socket will be (to catch the relay's hello: the host's
environment and descriptors). Each would have worked against a socket in a shared folder, or without the peer
check."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.cli.warm_support import WarmPlace, start_through_relay, wait_until_listening, warm_place, warm_place_in
from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.stdio_raw import RawStdioServer

pytestmark = pytest.mark.anyio

NOBODY = 65534
SETPRIV = shutil.which("setpriv")
SYSTEM_PYTHON = "/usr/bin/python3"
as_root_with_setpriv = pytest.mark.skipif(
    os.geteuid() != 0 or SETPRIV is None or not Path(SYSTEM_PYTHON).exists(),
    reason="needs root, setpriv and /usr/bin/python3 to act as another user",
)

ATTACKER = r"""
import json, os, socket, struct, sys
path = sys.argv[1]
read_end, write_end = os.pipe()
out_read, out_write = os.pipe()
hello = "\0".join(["mcp-subagents-hello-1", "18", "/", "2", "x", "serve", "PATH=/usr/bin"]).encode()
connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    connection.connect(path)
except OSError as exc:
    print("connect refused:", exc.strerror)
    sys.exit(0)
try:
    socket.send_fds(connection, [struct.pack("!I", len(hello))], [read_end, out_write, 2])
    connection.sendall(hello)
    reply = connection.recv(100)
except OSError:  # the server closed the connection
    reply = b""
os.close(out_write)
os.write(write_end, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode() + b"\n")
os.close(write_end)
print("reply:", reply.decode() or "none", "| served:", os.read(out_read, 100).decode() or "nothing")
"""


@pytest.fixture
def shared_runtime() -> Iterator[Path]:
    """A runtime folder another user may pass through (as /run/user/<uid> is not, but a careless setup might be)."""
    runtime = Path(tempfile.mkdtemp(prefix="warm-attack-", dir="/tmp"))
    runtime.chmod(0o711)
    try:
        yield runtime
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@as_root_with_setpriv
async def test_another_user_can_neither_reach_nor_use_the_warm_server(shared_runtime: Path, tmp_path: Path) -> None:
    place = WarmPlace(shared_runtime, tmp_path / "home")
    async with warm_place_in(place):
        await (await start_through_relay(place.environment(work=tmp_path / "w"))).close()
        warm = await wait_until_listening(place)
        socket_path = Path(place.address.socket_path)
        assert stat.S_IMODE(os.stat(place.address.folder).st_mode) == 0o700
        said = await attack_as_nobody_with(socket_path)
        assert "connect refused" in said  # the folder is its owner's alone

        # Even with the folder and the socket opened to everyone, the kernel's word on who connected decides.
        os.chmod(place.address.folder, 0o711)
        socket_path.chmod(0o666)
        said = await attack_as_nobody_with(socket_path)
        assert "reply: none | served: nothing" in said, said
        assert place.children_of(warm) == []
        assert "refused a connection from another user" in Path(place.address.log_path).read_text()


async def attack_as_nobody_with(socket_path: Path) -> str:
    script = ATTACKER.replace("sys.argv[1]", repr(str(socket_path)))
    done = await anyio.run_process(
        [SETPRIV or "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", SYSTEM_PYTHON, "-c", script],
        check=False,
    )
    return done.stdout.decode() + done.stderr.decode()


@pytest.mark.parametrize("planted", ["other owner", "link", "open to all"])
async def test_a_planted_socket_folder_is_not_used_and_the_server_serves_itself(
    tmp_path: Path, fake: FakeLLM, planted: str
) -> None:
    if planted == "other owner" and os.geteuid() != 0:
        pytest.skip("making a folder another user's needs root")
    async with warm_place(tmp_path) as place:
        folder = Path(place.address.folder)
        decoy = tmp_path / "decoy"
        if planted == "link":
            decoy.mkdir(mode=0o700)
            folder.symlink_to(decoy)
        else:
            folder.mkdir(mode=0o700)
            folder.chmod(0o777)
            if planted == "other owner":
                os.chown(folder, NOBODY, NOBODY)
        session = await start_through_relay(place.environment(fake, work=tmp_path / "w"))
        fake.push(turn(text("served all the same")))
        task = {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}
        answer = await session.call_tool("Task", task)
        assert "served all the same" in answer
        await session.close()
        assert place.warm_pids() == []  # no warm server was started there
        target = decoy if planted == "link" else folder
        assert list(target.iterdir()) == []  # and nothing was put in it


def test_each_forked_server_tags_its_commands_apart_from_its_siblings() -> None:
    """Commands run outside the sandbox carry a tag whose prefix names their server, and a server ending kills
    what carries its tags: servers forked from one warm server must not share the prefix (they did, as it was
    drawn when the module was imported)."""
    from mcp_subagents.core.processes import new_tag

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write_end, new_tag().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    sibling = os.read(read_end, 100).decode()
    os.close(read_end)
    os.close(write_end)
    assert sibling.split("-")[0] != new_tag().split("-")[0]


async def test_a_warm_server_that_found_no_working_bubblewrap_leaves_no_later_host_unconfined(tmp_path: Path) -> None:
    """The warm server's probe answer reaches its forks. Were it kept whatever the host's PATH finds, a host whose
    bubblewrap works would get the warm server's "cannot run" and its Bash commands would run unconfined."""
    broken = fake_bwrap(tmp_path / "broken", "echo 'no user namespaces' >&2; exit 1")
    working = fake_bwrap(tmp_path / "working", "exit 0")
    async with warm_place(tmp_path) as place:
        first = place.environment(work=tmp_path / "w", PATH=f"{broken.parent}:/usr/bin:/bin")
        await (await start_through_relay(first)).close()
        await wait_until_listening(place)
        host = {**first, "PATH": f"{working.parent}:/usr/bin:/bin", "MCP_SUBAGENTS_LOG_LEVEL": "INFO"}
        session = await RawStdioServer.start(host, stderr=subprocess.PIPE)
        await session.request("tools/list", {})  # the warm-up sets the sandbox up
        assert session.process.stderr is not None
        said = BufferedByteReceiveStream(session.process.stderr)
        line = ""
        with anyio.fail_after(30):
            while "Bash sandbox" not in line:
                line = (await said.receive_until(b"\n", 1 << 16)).decode()
        await session.close()
    assert "Bash sandbox on" in line, line


def fake_bwrap(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True)
    binary = folder / "bwrap"
    binary.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    binary.chmod(0o755)
    return binary
