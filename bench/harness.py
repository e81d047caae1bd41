"""What the speed benchmarks share: the fake Messages API in its own process, and `mcp-subagents serve` spawned over
stdio and driven with raw newline-delimited JSON-RPC, so the client costs next to nothing and the server's own CPU
time can be read from /proc.

Only 127.0.0.1 is touched; the key is a dummy.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

ROOT = Path(__file__).resolve().parent.parent
FAKE_API = ROOT / "bench" / "fake_api.py"
LIGHT_API = ROOT / "bench" / "light_api.py"
PROTOCOL_VERSION = "2025-11-25"
BENCH_KEY = "sk-bench-key"

Json = dict[str, Any]

if TYPE_CHECKING:
    from mcp_subagents.runtime.service import Subagents


class BenchError(Exception):
    pass


# ---- the fake API, on its own core as a remote API would be ---------------------------------------------------------


@asynccontextmanager
async def fake_api(
    script: str, latency_s: float, *, answer_bytes: int = 0, light: bool = False, log: Path | None = None
) -> AsyncGenerator[str]:
    """The fake Messages API in a child process, answering every request by `script` (see fake_api.py) after
    `latency_s`; yields its base URL. It stops when this block ends. `light`: the minimal server of light_api.py
    (`todo:N` scripts only), which leaves the cores to the server under test. `log`: a file the fake appends each
    request's body to, one JSON line each."""
    if light:
        command = [sys.executable, str(LIGHT_API), script.removeprefix("todo:"), str(latency_s)]
    else:
        command = [sys.executable, str(FAKE_API), script, str(latency_s), str(answer_bytes)]
        command += [] if log is None else ["--log", str(log)]
    async with await anyio.open_process(command, stderr=None) as process:
        assert process.stdout is not None and process.stdin is not None
        with anyio.fail_after(30):
            url = (await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 200)).decode()
        try:
            yield url
        finally:
            with anyio.CancelScope(shield=True):
                await process.stdin.aclose()
                with anyio.move_on_after(10):
                    await process.wait()


# ---- the server over stdio ------------------------------------------------------------------------------------------


def in_process_app(root: Path, url: str, *, max_concurrent: int, **settings: Any) -> Subagents:
    """The server's runtime in this process, on `root`, with the Messages API at `url`; Task runs without asking."""
    from mcp_subagents.config.settings import Settings
    from mcp_subagents.runtime.service import Subagents

    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    configured = Settings(
        cwd=work,
        state_dir=root / "state",
        user_agents_dir=root / "none",
        max_concurrent=max_concurrent,
        permission_mode="bypassPermissions",
        **settings,
    )
    return Subagents(configured, environ={"ANTHROPIC_API_KEY": BENCH_KEY, "ANTHROPIC_BASE_URL": url})


def our_command() -> list[str]:
    """`mcp-subagents serve` as hosts start it: the console script of this Python's environment, else `-m`."""
    script = Path(sys.executable).with_name("mcp-subagents")
    return [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "mcp_subagents", "serve"]


def server_environment(home: Path, *, api_url: str = "http://127.0.0.1:9", **extra: str) -> dict[str, str]:
    """A bare host-like environment: HOME, the project folder and state dir under `home`, a provider configured."""
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "MCP_SUBAGENTS_CWD": str(work),
        "MCP_SUBAGENTS_STATE_DIR": str(home / "state"),
        "MCP_SUBAGENTS_NO_WARM": "1",  # a process of its own; bench/host.py and overhead.py measure the warm server
        "ANTHROPIC_API_KEY": BENCH_KEY,
        "ANTHROPIC_BASE_URL": api_url,
        **extra,
    }


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of a running process, all its threads (also those that have exited), from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # After the command name: state is field 3 of stat(5); utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def model_process_pids(server_pid: int) -> list[int]:
    """The running model processes a server started (children whose command line runs the model worker)."""
    found: list[int] = []
    try:
        children = Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()
    except OSError:
        return found
    for child in children:
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"mcp_subagents.models.worker" in command:
            found.append(int(child))
    return found


@dataclass(eq=False)
class StdioServer:
    """One spawned server and a JSON-RPC client for it that can have many requests in flight."""

    process: Process
    _stdin: ByteSendStream
    _pending: dict[int, anyio.Event] = field(default_factory=lambda: {})
    _answers: dict[int, Json] = field(default_factory=lambda: {})
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    notifications: int = 0
    on_notification: Callable[[Json], None] | None = None
    """Called with each notification as it arrives (bench/turns.py reads the server's CPU at each turn's)."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.pid)

    def model_process_cpu_seconds(self) -> float:
        """CPU of the server's model processes (`--model-processes`) that run now."""
        return sum(process_cpu_seconds(pid) for pid in model_process_pids(self.pid))

    async def settle(self) -> None:
        """Wait until the server and its model processes use no CPU (a model process still starting imports the
        provider SDK for a few seconds, which the measured runs must not pay). /proc offers no event for that, so
        this reads the CPU times every 0.2 s, for at most a minute."""
        with anyio.fail_after(60):
            last = -1.0
            while True:
                now = self.cpu_seconds() + self.model_process_cpu_seconds()
                if now - last < 0.005:
                    return
                last = now
                await anyio.sleep(0.2)

    async def request(self, method: str, params: Json | None = None) -> Json:
        """The result of one request; raises BenchError for a JSON-RPC error."""
        request_id = next(self._ids)
        message: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        done = self._pending[request_id] = anyio.Event()
        await self.send(message)
        await done.wait()
        answer = self._answers.pop(request_id)
        if "result" not in answer:
            raise BenchError(f"{method} failed: {answer}")
        result: Json = answer["result"]
        return result

    async def send(self, message: Json) -> None:
        await self._stdin.send(json.dumps(message).encode() + b"\n")

    async def call_tool(self, name: str, arguments: Json, *, progress: bool = True) -> str:
        """A tools/call's text; raises BenchError when it is an error. `progress` sends a progress token, as hosts
        that show progress do, so the server pays for its notifications."""
        params: Json = {"name": name, "arguments": arguments}
        if progress:
            params["_meta"] = {"progressToken": f"p{next(self._ids)}"}
        result = await self.request("tools/call", params)
        text = "".join(block.get("text", "") for block in result.get("content", []))
        if result.get("isError"):
            raise BenchError(f"{name} failed: {text}")
        return text

    async def read_answers(self, stdout: BufferedByteReceiveStream) -> None:
        while True:
            try:
                line = await stdout.receive_until(b"\n", 64 * 1024 * 1024)
            except (anyio.EndOfStream, anyio.IncompleteRead):
                for event in self._pending.values():  # wake the waiters: they fail on the missing answer
                    event.set()
                return
            message: Json = json.loads(line)
            request_id = message.get("id")
            if "method" in message:
                self.notifications += 1
                if self.on_notification is not None:
                    self.on_notification(message)
                if request_id is not None:  # a request from the server (roots, elicitation): not used here
                    await self.send({"jsonrpc": "2.0", "id": request_id, "result": {}})
                continue
            if isinstance(request_id, int) and (waiter := self._pending.pop(request_id, None)) is not None:
                self._answers[request_id] = message
                waiter.set()


async def _collect(stream: Any, into: bytearray) -> None:
    async for chunk in stream:
        into += chunk


@asynccontextmanager
async def stdio_server(
    env: Mapping[str, str], *, args: tuple[str, ...] = (), command: list[str] | None = None
) -> AsyncGenerator[StdioServer]:
    """Spawn the server and initialize it (protocol 2025-11-25). On failure, the server's stderr is in the error."""
    stderr = bytearray()
    process = await anyio.open_process([*(command or our_command()), *args], env=dict(env), cwd=env["HOME"])
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    server = StdioServer(process, process.stdin)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_collect, process.stderr, stderr)
            group.start_soon(server.read_answers, BufferedByteReceiveStream(process.stdout))
            with anyio.fail_after(60):
                await server.request(
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSION,
                        "capabilities": {},
                        "clientInfo": {"name": "bench", "version": "0"},
                    },
                )
            await server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield server
            await process.stdin.aclose()  # a stdio server exits at the end of its input
            with anyio.fail_after(30):
                await process.wait()
            group.cancel_scope.cancel()
    except* (KeyError, TimeoutError, BenchError) as failure:
        why = "; ".join(str(exc) or type(exc).__name__ for exc in failure.exceptions)
        tail = stderr.decode(errors="replace")[-3000:]
        raise BenchError(f"the server failed ({why}):\n{tail}") from None
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()


TASK = {"description": "bench", "prompt": "bench", "subagent_type": "general-purpose"}


def task_arguments(number: int) -> Json:
    return {**TASK, "description": f"job {number}", "prompt": f"job {number}"}
