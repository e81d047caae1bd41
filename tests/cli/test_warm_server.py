"""The warm server: a host's later starts are served by a process forked from one that has everything imported,
and that process is the host's own in every way that shows (its environment, folder, stdin, stdout, stderr, exit
status and signals). Real `mcp-subagents serve` subprocesses over pipes, as hosts start them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process

from mcp_subagents.cli.warm_wire import warm_address
from tests.cli.warm_support import WarmPlace, start_through_relay, wait_until_listening, warm_place
from tests.fakes.fake_llm import FakeLLM, text, turn
from tests.processes import is_running, wait_until_gone
from tests.stdio_raw import RawStdioServer
from tests.support import write_agent

pytestmark = pytest.mark.anyio

TASK = {"description": "d", "prompt": "say hi", "subagent_type": "greeter"}


def environ_of(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode().split("=", 1) for pair in pairs if b"=" in pair)


async def served_by(place: WarmPlace, warm: int) -> int:
    """The one server the warm server forked, while a session is open (it answered `initialize`)."""
    children = place.children_of(warm)
    assert len(children) == 1
    return children[0]


async def test_the_first_start_serves_itself_and_leaves_a_warm_server_that_serves_the_next_as_its_own(
    tmp_path: Path, fake: FakeLLM
) -> None:
    async with warm_place(tmp_path) as place:
        first_project, second_project = tmp_path / "one", tmp_path / "two"
        write_agent(first_project / ".claude" / "agents", "greeter", body="You greet.")
        write_agent(second_project / ".claude" / "agents", "greeter", body="You greet warmly.")
        first = await start_through_relay(place.environment(fake, work=first_project))
        assert not place.warm_pids() or not place.children_of(place.warm_pids()[0])  # nobody served it but itself
        fake.push(turn(text("hello from the first")))
        assert "hello from the first" in await first.call_tool("Task", TASK)
        await first.close()
        assert first.process.returncode == 0

        warm = await wait_until_listening(place)
        second = await start_through_relay(place.environment(fake, work=second_project, key="second-key"))
        server = await served_by(place, warm)
        assert "ANTHROPIC_API_KEY" not in environ_of(warm)  # the warm server never held a host's secrets
        fake.push(turn(text("hello from the second")))
        assert "hello from the second" in await second.call_tool("Task", TASK)
        assert fake.requests[-1]["headers"]["x-api-key"] == "second-key"  # the host's environment
        assert "You greet warmly." in json.dumps(fake.requests[-1]["body"]["system"])  # the host's folder
        await second.close()
        assert second.process.returncode == 0
        await wait_until_gone(server)
        assert is_running(warm)  # it stays for the next host


async def test_two_hosts_at_once_each_get_a_server_with_their_own_environment_and_folder(
    tmp_path: Path, fake: FakeLLM
) -> None:
    async with warm_place(tmp_path) as place:
        await (await start_through_relay(place.environment(fake, work=tmp_path / "w"))).close()
        warm = await wait_until_listening(place)
        sessions: dict[str, RawStdioServer] = {}
        for name in ("left", "right"):
            project = tmp_path / name
            write_agent(project / ".claude" / "agents", "greeter", body=f"You are {name}.")
            sessions[name] = await start_through_relay(place.environment(fake, work=project, key=f"{name}-key"))
        assert len(place.children_of(warm)) == 2
        for name, session in sessions.items():
            fake.push(turn(text(f"done {name}")))
            assert f"done {name}" in await session.call_tool("Task", TASK)
            assert fake.requests[-1]["headers"]["x-api-key"] == f"{name}-key"
            assert f"You are {name}." in json.dumps(fake.requests[-1]["body"]["system"])
        for session in sessions.values():
            await session.close()


async def test_a_hosts_sigterm_or_sigkill_of_the_relay_ends_its_server(tmp_path: Path) -> None:
    async with warm_place(tmp_path) as place:
        await (await start_through_relay(place.environment(work=tmp_path / "w"))).close()
        warm = await wait_until_listening(place)
        for signum in (signal.SIGTERM, signal.SIGKILL):
            session = await start_through_relay(place.environment(work=tmp_path / "w"))
            server = await served_by(place, warm)
            session.process.send_signal(signum)
            with anyio.fail_after(10):
                await session.process.wait()
            await wait_until_gone(server)
            if signum == signal.SIGTERM:
                assert session.process.returncode == 0  # a clean shutdown, as a cold server's SIGTERM
        assert is_running(warm)


async def test_the_servers_exit_status_and_stderr_reach_the_host(tmp_path: Path) -> None:
    async with warm_place(tmp_path) as place:
        await (await start_through_relay(place.environment(work=tmp_path / "w"))).close()
        await wait_until_listening(place)
        process = await open_process_with_stderr(place, "--max-concurrent", "none")
        with anyio.fail_after(30):
            await process.wait()
        assert process.stderr is not None
        said = b"".join([chunk async for chunk in process.stderr]).decode()
        assert process.returncode == 2
        assert "--max-concurrent" in said


async def open_process_with_stderr(place: WarmPlace, *arguments: str) -> Process:
    command = [sys.executable, "-m", "mcp_subagents", "serve", *arguments]
    return await anyio.open_process(command, env=place.environment(work=place.home / "w"), stderr=subprocess.PIPE)


async def test_a_killed_warm_server_loses_no_session_and_the_next_start_brings_a_new_one(tmp_path: Path) -> None:
    async with warm_place(tmp_path) as place:
        await (await start_through_relay(place.environment(work=tmp_path / "w"))).close()
        warm = await wait_until_listening(place)
        session = await start_through_relay(place.environment(work=tmp_path / "w"))
        await served_by(place, warm)
        os.kill(warm, signal.SIGKILL)
        await wait_until_gone(warm)
        listed = await session.request("tools/list", {})
        assert "Task" in {tool["name"] for tool in listed["tools"]}  # the session goes on without it
        await session.close()
        assert session.process.returncode == 0
        await (await start_through_relay(place.environment(work=tmp_path / "w"))).close()  # cold, starts one
        assert await wait_until_listening(place) != warm


async def test_an_idle_warm_server_leaves_and_no_warm_starts_none(tmp_path: Path) -> None:
    async with warm_place(tmp_path) as place:
        cold = await start_through_relay(place.environment(work=tmp_path / "w"), "--no-warm")
        await cold.close()
        assert place.warm_pids() == []
        quick = place.environment(work=tmp_path / "w", MCP_SUBAGENTS_WARM_IDLE="0.5")
        await (await start_through_relay(quick)).close()
        warm = await wait_until_listening(place)
        await (await start_through_relay(quick)).close()  # served, then half a second without anyone
        await wait_until_gone(warm)
        assert not Path(place.address.socket_path).exists()
        assert not is_running(warm)


def test_a_runtime_folder_too_long_for_a_socket_falls_back_to_the_users_tmp_folder(tmp_path: Path) -> None:
    """A Unix socket's path has at most 107 bytes: a warm server in a deeper runtime folder could never listen."""
    deep = tmp_path / ("d" * 100)
    deep.mkdir(mode=0o700)
    address = warm_address({"XDG_RUNTIME_DIR": str(deep)})
    assert address is not None and address.folder == f"/tmp/mcp-subagents-{os.getuid()}"
    assert len(os.fsencode(address.socket_path)) <= 107
    near = Path(tempfile.mkdtemp(prefix="w-", dir="/tmp"))
    try:
        assert (near_address := warm_address({"XDG_RUNTIME_DIR": str(near)})) is not None
        assert near_address.folder == str(near / "mcp-subagents")
    finally:
        shutil.rmtree(near, ignore_errors=True)


async def test_a_forked_server_keeps_the_warm_servers_sandbox_probe_only_where_its_path_finds_the_same_bwrap(
    tmp_path: Path, fake: FakeLLM
) -> None:
    """The warm server probes bubblewrap before it forks; a host whose PATH leads to another bwrap gets its own."""
    shared, other = counting_bwrap(tmp_path / "shared"), counting_bwrap(tmp_path / "other")
    async with warm_place(tmp_path) as place:
        first_path = place.environment(fake, work=tmp_path / "w", PATH=f"{shared.parent}:/usr/bin:/bin")
        await (await start_through_relay(first_path)).close()  # never lists the tools: no probe of its own
        await wait_until_listening(place)
        assert probes(shared) == 1  # the warm server's, with the PATH it was started with
        for environ in (first_path, {**first_path, "PATH": f"{other.parent}:/usr/bin:/bin"}):
            session = await start_through_relay(environ)
            await session.request("tools/list", {})
            fake.push(turn(text("done")))
            assert "done" in await session.call_tool("Task", GENERAL_TASK)  # a run waits for the sandbox first
            await session.close()
        assert probes(shared) == 1  # the same binary: the warm server's answer
        assert probes(other) == 1  # another one: probed in the forked server


GENERAL_TASK = {"description": "d", "prompt": "say done", "subagent_type": "general-purpose"}


def counting_bwrap(folder: Path) -> Path:
    """A `bwrap` that notes each run in `runs` beside it and succeeds."""
    folder.mkdir(parents=True)
    binary = folder / "bwrap"
    binary.write_text(f'#!/bin/sh\necho run >> "{folder / "runs"}"\nexit 0\n', encoding="utf-8")
    binary.chmod(0o755)
    return binary


def probes(binary: Path) -> int:
    noted = binary.parent / "runs"
    return len(noted.read_text().split()) if noted.exists() else 0
