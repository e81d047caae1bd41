"""The relay a host starts: it costs every configured host its start, used or not, so it imports almost nothing;
and the digest in its socket's name keeps a changed install from ever being served by a warm server that runs the
code from before."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import mcp_subagents
from mcp_subagents.cli import warm_wire
from mcp_subagents.cli.warm_wire import Hello, MessageReader, WireError, code_key, send_message
from tests.cli.warm_support import WARM_MODULE, WarmPlace, start_through_relay, wait_until_listening, warm_place
from tests.stdio_raw import RawStdioServer

pytestmark = pytest.mark.anyio

HEAVY = frozenset(
    {"typing", "pathlib", "json", "hashlib", "socket", "signal", "enum", "re", "dataclasses", "inspect"}
    | {"asyncio", "anyio", "pydantic", "mcp", "anthropic", "mcp_subagents.cli.commands"}
)
"""What the relay once imported, or what the server it stands for needs: none of it may load before it relays."""


def imported(stderr: bytes) -> set[str]:
    """The modules `-X importtime` (PYTHONPROFILEIMPORTTIME) said were imported."""
    lines = stderr.decode(errors="replace").splitlines()
    return {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")}


async def test_the_relay_attaches_on_a_few_standard_modules(tmp_path: Path) -> None:
    async with warm_place(tmp_path) as place:
        environ = place.environment(work=tmp_path / "w")
        await (await start_through_relay(environ)).close()
        warm = await wait_until_listening(place)
        # Without coverage's start-up hook (under pytest --cov it imports half the standard library first).
        profiled = {name: value for name, value in environ.items() if name != "COVERAGE_PROCESS_CONFIG"}
        profiled["PYTHONPROFILEIMPORTTIME"] = "1"
        session = await RawStdioServer.start(profiled, stderr=subprocess.PIPE)
        assert len(place.children_of(warm)) == 1  # served by the warm server: the imports below are the relay's
        await session.close()
        assert session.process.stderr is not None
        said = b"".join([chunk async for chunk in session.process.stderr])
    modules = imported(said)
    assert "mcp_subagents.cli.warm_relay" in modules
    assert not modules & HEAVY, sorted(modules & HEAVY)


def install_a_copy(tmp_path: Path) -> Path:
    """The package copied to a folder of its own (as another install of it), for PYTHONPATH."""
    installed = tmp_path / "site"
    shutil.copytree(Path(mcp_subagents.__file__).parent, installed / "mcp_subagents")
    return installed


async def test_a_changed_install_is_never_served_by_the_warm_server_of_the_code_before(tmp_path: Path) -> None:
    installed = install_a_copy(tmp_path)
    async with warm_place(tmp_path) as place:
        # PYTHONSAFEPATH: `python -m` would otherwise import the checkout the tests run in, not the copy
        environ = place.environment(work=tmp_path / "w", PYTHONPATH=str(installed), PYTHONSAFEPATH="1")
        await (await start_through_relay(environ)).close()
        before = await wait_until_listening(place)
        upgraded = installed / "mcp_subagents" / "cli" / "serve.py"  # a module only the server runs
        upgraded.write_text(upgraded.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        session = await start_through_relay(environ)
        assert place.children_of(before) == []  # it served itself, from the new code
        await session.close()
        assert session.process.returncode == 0
        after = await second_warm_server(place, besides=before)
        session = await start_through_relay(environ)
        assert len(place.children_of(after)) == 1 and place.children_of(before) == []
        await session.close()


async def test_a_warm_server_whose_own_code_is_not_the_one_its_relay_found_does_not_serve(tmp_path: Path) -> None:
    """A relay run with `python -m` in a checkout imports the checkout, the warm server it starts (in `/`) what
    PYTHONPATH names: it must not listen for the checkout's relays."""
    installed = install_a_copy(tmp_path)
    (installed / "mcp_subagents" / "cli" / "serve.py").write_text("# another version\n", encoding="utf-8")
    async with warm_place(tmp_path) as place:
        environ = place.environment(work=tmp_path / "w", PYTHONPATH=str(installed))
        address = place.address  # the key of the checkout's code, as its relay names it
        Path(address.folder).mkdir(mode=0o700)
        command = [sys.executable, "-P", "-m", WARM_MODULE, address.folder, address.key]
        with anyio.fail_after(60):
            done = await anyio.run_process(command, env=environ, cwd="/", check=False)
        assert done.returncode == 0
        assert list(Path(address.folder).iterdir()) == []  # no lock taken, no log, no socket


async def second_warm_server(place: WarmPlace, *, besides: int) -> int:
    """The warm server the new code's first start left, once it listens beside the old one."""
    folder = Path(place.address.folder)
    with anyio.fail_after(60):
        while True:
            others = [pid for pid in place.warm_pids() if pid != besides]
            if others and len(list(folder.glob("*.sock"))) == 2 and _log_says_serving(folder, times=2):
                return others[0]
            await anyio.sleep(0.05)


def _log_says_serving(folder: Path, *, times: int) -> bool:
    logs = [path.read_text(encoding="utf-8", errors="replace") for path in folder.glob("*.log")]
    return sum("serving on" in log for log in logs) >= times


def test_the_code_key_follows_every_file_of_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key is taken from the package the relay runs from: a file edited, added or removed changes it."""
    package = tmp_path / "mcp_subagents"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    module = package / "cli" / "warm_wire.py"
    module.write_text("# the relay\n", encoding="utf-8")
    monkeypatch.setattr(warm_wire, "__file__", str(module))
    keys = [warm_wire.code_key()]
    module.write_text("# the relay, edited\n", encoding="utf-8")
    keys.append(warm_wire.code_key())
    stamp = module.stat()
    os.utime(module, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))  # the same size, touched
    keys.append(warm_wire.code_key())
    (package / "cli" / "added.py").write_text("", encoding="utf-8")
    keys.append(warm_wire.code_key())
    (package / "cli" / "added.py").unlink()
    assert warm_wire.code_key() == keys[-2]
    assert len(set(keys)) == len(keys)
    monkeypatch.undo()
    assert code_key() not in keys


def test_the_hello_carries_the_process_exactly_and_refuses_what_no_process_has() -> None:
    environ = {"PATH": "/usr/bin", "EMPTY": "", "WITH_EQUALS": "a=b", "BYTES": "caf\udce9"}
    hello = Hello(["mcp-subagents", "serve", "", "é"], environ, "/tmp/a folder", 0o027)
    again = Hello.decode(hello.encode())
    assert (again.argv, again.environ, again.cwd, again.umask) == (hello.argv, environ, hello.cwd, 0o027)
    for broken in (
        Hello(["x\0y"], {}, "/", 0),
        Hello(["x"], {"A\0": "b"}, "/", 0),
        Hello(["x"], {"A=B": "c"}, "/", 0),
    ):
        with pytest.raises(WireError):
            broken.encode()
    for raw in (b"", b"not a hello", b"mcp-subagents-hello-1\x0018\x00/\x005\x00x", b"mcp-subagents-hello-1\x00-1"):
        with pytest.raises(WireError):
            Hello.decode(raw)
    with pytest.raises(WireError):
        Hello.decode(Hello(["x"], {}, "/", 0).encode() + b"\0NO_EQUALS")


def test_messages_come_through_and_a_line_that_is_not_one_ends_them() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        send_message(ours, {"started": 4321})
        send_message(ours, {"exit": -2})
        ours.sendall(b"exit now\n")
        reader = MessageReader(theirs)
        assert [reader.next(), reader.next(), reader.next()] == [{"started": 4321}, {"exit": -2}, None]
