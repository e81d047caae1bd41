"""What the server itself costs: time per model round trip, concurrency, cold start and the first Task, each as
measured in this run.

    python bench/overhead.py            # full counts, under a minute
    python bench/overhead.py --smoke    # the same code paths with tiny counts (CI), a few seconds

Only 127.0.0.1 is touched: the model is `tests/fakes/fake_llm.py` (a dummy key, no internet) or the in-process
`ScriptedModel`. See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

ROOT = Path(__file__).resolve().parent.parent
BARE_SERVER = ROOT / "bench" / "bare_server.py"
# `python bench/overhead.py` puts bench/ on sys.path, not the repository, and the fake LLM lives in tests/.
sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402

from mcp_subagents.cli.warm_wire import warm_address  # noqa: E402
from mcp_subagents.config.settings import Settings  # noqa: E402
from mcp_subagents.mcp.server import build_server  # noqa: E402
from mcp_subagents.models.anthropic import AnthropicModel  # noqa: E402
from mcp_subagents.models.base import Model, ModelRequest, ModelResponse  # noqa: E402
from mcp_subagents.models.scripted import ScriptedModel, tool_call  # noqa: E402
from mcp_subagents.models.scripted import text as scripted_text  # noqa: E402
from mcp_subagents.runtime.service import Subagents  # noqa: E402
from tests.fakes.fake_llm import FakeLLM, Json, Turn, text, tool_use, turn  # noqa: E402

# Hosts speak the 2025-11-25 handshake era; "legacy" also runs real JSON-RPC framing over memory streams, so
# encoding results and progress notifications count as server time.
CLIENT_MODE = "legacy"
PROTOCOL_VERSION = "2025-11-25"
TASK = {"description": "bench", "prompt": "Keep a todo list, then answer.", "subagent_type": "general-purpose"}
TODOS = {"todos": [{"content": "Measure the server", "status": "in_progress", "activeForm": "Measuring the server"}]}
CONCURRENT_TASKS = 10
FAKE_LATENCY = 0.2
# A Task runs until the server hands it over to the background; keep that out of reach of a slow box.
FOREGROUND_DEADLINE = 600.0


@dataclass(frozen=True, slots=True)
class Counts:
    tool_turns: int
    """Tool-use turns per Task in the round-trip figures; each Task adds one final text turn."""
    repeats: int
    """Tasks measured per round-trip figure (after one warm-up)."""
    concurrency_repeats: int
    spawns: int
    """Cold starts measured per server."""
    first_task_spawns: int = 3
    """Servers started to time their first Task after the pause."""


FULL = Counts(tool_turns=20, repeats=20, concurrency_repeats=5, spawns=7)
SMOKE = Counts(tool_turns=3, repeats=3, concurrency_repeats=1, spawns=2, first_task_spawns=1)
FIRST_TASK_PAUSE = 3.0
"""Seconds between the host's tools/list and its first Task: a person typing a request."""


class BenchError(Exception):
    pass


@dataclass(frozen=True, slots=True)
class RoundTrips:
    scripted_ms: float
    http_ms: float
    baseline_ms: float
    overhead_ms: float


@dataclass(frozen=True, slots=True)
class Concurrency:
    one_ms: float
    many_ms: float
    adapter_one_ms: float
    adapter_many_ms: float
    """The same model requests sent by the adapter alone, without the server: the best the server can do here."""

    @property
    def ratio(self) -> float:
        return self.many_ms / self.one_ms

    @property
    def adapter_ratio(self) -> float:
        return self.adapter_many_ms / self.adapter_one_ms


@dataclass(frozen=True, slots=True)
class ColdStart:
    ours_ms: float
    bare_ms: float
    eager_imports: tuple[str, ...]
    """Provider SDKs found imported by a server that has answered tools/list but run no Task."""
    modern_ours_ms: float
    """A 2026-era host (`server/discover`, then `tools/list`), with the answers the last start kept."""
    modern_bare_ms: float

    @property
    def ratio(self) -> float:
        return self.ours_ms / self.bare_ms

    @property
    def modern_ratio(self) -> float:
        return self.modern_ours_ms / self.modern_bare_ms


@dataclass(frozen=True, slots=True)
class FirstTask:
    first_ms: float
    """The first Task, sent FIRST_TASK_PAUSE seconds after tools/list."""
    later_ms: float
    """The Task right after it, on the same server."""
    at_once_ms: float
    """A cold server's first Task sent right after tools/list, as Claude Code does."""
    at_once_later_ms: float
    warm_ms: float
    """The same from a server the warm server forked (a later start)."""
    warm_later_ms: float

    @property
    def ratio(self) -> float:
        return self.first_ms / self.later_ms

    @property
    def at_once_ratio(self) -> float:
        return self.at_once_ms / self.at_once_later_ms

    @property
    def warm_ratio(self) -> float:
        return self.warm_ms / self.warm_later_ms


# ---- the server in memory ------------------------------------------------------------------------------------------


def bench_settings(tmp: Path) -> Settings:
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    return Settings(
        cwd=work.resolve(),
        state_dir=tmp / "state",
        user_agents_dir=tmp / "user-agents",
        foreground_deadline=FOREGROUND_DEADLINE,
    )


@asynccontextmanager
async def served(model: Model, tmp: Path) -> AsyncGenerator[Client]:
    app = Subagents(bench_settings(tmp), model=model, environ={})
    async with app.running(), Client(build_server(app), mode=CLIENT_MODE) as client:
        yield client


async def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def run_task(client: Client) -> None:
    # A progress callback makes the client send a token, so the server reports progress as it would to a host.
    result = await client.call_tool("Task", TASK, progress_callback=_ignore_progress)
    if result.is_error:
        raise BenchError("Task failed: " + "".join(getattr(block, "text", "") for block in result.content))


async def timed_task(client: Client) -> float:
    started = time.perf_counter()
    await run_task(client)
    return time.perf_counter() - started


async def timed_concurrent_tasks(client: Client, count: int) -> float:
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(run_task, client)
    return time.perf_counter() - started


def fake_script(tool_turns: int) -> Callable[[Json], Turn]:
    """The fake's answer as a function of the request, so it suits any number of Tasks at once."""

    def step(body: Json) -> Turn:
        done = sum(1 for message in body.get("messages", []) if message.get("role") == "assistant")
        return turn(tool_use("TodoWrite", TODOS)) if done < tool_turns else turn(text("done"))

    return step


async def replay(model: Model, requests: Sequence[ModelRequest]) -> None:
    for request in requests:
        await model.request(request)


async def timed_replays(model: Model, requests: Sequence[ModelRequest], count: int) -> float:
    """Seconds for `count` concurrent replays of the requests one Task made, straight to the model."""
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(replay, model, requests)
    return time.perf_counter() - started


class Recording:
    """Passes requests to a model and keeps them, so the baseline can replay the very same payloads."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.requests: list[ModelRequest] = []

    @property
    def provider(self) -> str:
        return self.model.provider

    async def request(self, request: ModelRequest, /) -> ModelResponse:
        self.requests.append(request)
        return await self.model.request(request)


# ---- 1. time per model round trip ----------------------------------------------------------------------------------


async def scripted_round_trip_ms(counts: Counts, tmp: Path) -> float:
    model = ScriptedModel()
    per_round_trip: list[float] = []
    async with served(model, tmp) as client:
        for index in range(counts.repeats + 1):
            model.extend(*(tool_call("TodoWrite", TODOS) for _ in range(counts.tool_turns)), scripted_text("done"))
            elapsed = await timed_task(client)
            if index:  # the first Task is a warm-up
                per_round_trip.append(elapsed / (counts.tool_turns + 1))
    return _ms(statistics.median(per_round_trip))


async def http_round_trip_ms(fake: FakeLLM, counts: Counts, tmp: Path) -> tuple[float, float, float]:
    """Medians of (server per round trip, direct adapter calls per round trip, their paired difference)."""
    fake.default = fake_script(counts.tool_turns)
    anthropic = AnthropicModel(api_key="test", base_url=fake.url, max_retries=0)
    recording = Recording(anthropic)
    served_rt: list[float] = []
    direct_rt: list[float] = []
    async with aclosing(anthropic), served(recording, tmp) as client:
        for index in range(counts.repeats + 1):
            recording.requests.clear()
            # The fake keeps every request body; a heap that keeps growing would slow later Tasks (GC passes).
            fake.requests.clear()
            elapsed = await timed_task(client)
            round_trips = len(recording.requests)
            if round_trips != counts.tool_turns + 1:
                raise BenchError(f"expected {counts.tool_turns + 1} model requests, the Task made {round_trips}")
            direct = await timed_replays(anthropic, recording.requests, 1)
            if index:
                served_rt.append(elapsed / round_trips)
                direct_rt.append(direct / round_trips)
    overhead = [s - d for s, d in zip(served_rt, direct_rt, strict=True)]
    return _ms(statistics.median(served_rt)), _ms(statistics.median(direct_rt)), _ms(statistics.median(overhead))


async def measure_round_trips(fake: FakeLLM, counts: Counts, tmp: Path) -> RoundTrips:
    scripted = await scripted_round_trip_ms(counts, tmp / "scripted")
    http, baseline, overhead = await http_round_trip_ms(fake, counts, tmp / "http")
    return RoundTrips(scripted_ms=scripted, http_ms=http, baseline_ms=baseline, overhead_ms=overhead)


# ---- 2. concurrency ------------------------------------------------------------------------------------------------


async def measure_concurrency(fake: FakeLLM, counts: Counts, tmp: Path) -> Concurrency:
    fake.default = fake_script(tool_turns=1)
    fake.latency = FAKE_LATENCY
    anthropic = AnthropicModel(api_key="test", base_url=fake.url, max_retries=0)
    recording = Recording(anthropic)
    one: list[float] = []
    many: list[float] = []
    adapter_one: list[float] = []
    adapter_many: list[float] = []
    try:
        async with aclosing(anthropic), served(recording, tmp) as client:
            # Warm-up: imports, and the HTTP connections that ten requests at once need.
            await timed_concurrent_tasks(client, CONCURRENT_TASKS)
            for _ in range(counts.concurrency_repeats):
                recording.requests.clear()
                fake.requests.clear()
                one.append(await timed_task(client))
                requests = list(recording.requests)
                many.append(await timed_concurrent_tasks(client, CONCURRENT_TASKS))
                adapter_one.append(await timed_replays(anthropic, requests, 1))
                adapter_many.append(await timed_replays(anthropic, requests, CONCURRENT_TASKS))
    finally:
        fake.latency = 0.0
    return Concurrency(
        one_ms=_ms(statistics.median(one)),
        many_ms=_ms(statistics.median(many)),
        adapter_one_ms=_ms(statistics.median(adapter_one)),
        adapter_many_ms=_ms(statistics.median(adapter_many)),
    )


# ---- 3. cold start over stdio --------------------------------------------------------------------------------------


def _request(request_id: int, method: str, params: Json | None = None) -> Json:
    message: Json = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


INITIALIZE = _request(
    1,
    "initialize",
    {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
)
INITIALIZED: Json = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = _request(2, "tools/list")
MODERN_META: Json = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN_OPENING = [
    _request(1, "server/discover", {"_meta": MODERN_META}),
    _request(2, "tools/list", {"_meta": MODERN_META}),
]


def server_environment(tmp: Path) -> dict[str, str]:
    work = tmp / "work"
    work.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(tmp),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "MCP_SUBAGENTS_CWD": str(work),
        "MCP_SUBAGENTS_STATE_DIR": str(tmp / "state"),
        "MCP_SUBAGENTS_NO_WARM": "1",  # cold starts: the warm server has a figure of its own
        # A configured provider, as in a host's config; nothing listens there and no Task runs.
        "ANTHROPIC_API_KEY": "test",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
    }


async def _send(stream: ByteSendStream, *messages: Json) -> None:
    await stream.send(b"".join(json.dumps(message).encode() + b"\n" for message in messages))


async def _response(reader: BufferedByteReceiveStream, request_id: int) -> Json:
    while True:
        message: Json = json.loads(await reader.receive_until(b"\n", 16 * 1024 * 1024))
        if message.get("id") == request_id:
            if "result" not in message:
                raise BenchError(f"request {request_id} failed: {message}")
            return message


async def _collect(stream: ByteReceiveStream, into: bytearray) -> None:
    async for chunk in stream:
        into += chunk


async def time_to_tools_list(command: list[str], env: dict[str, str], *, modern: bool = False) -> tuple[float, str]:
    """Spawn a stdio server; seconds from spawn to the tools/list answer, and what it wrote to stderr until then
    (the server goes on to import the provider SDK in the background once it has answered)."""
    stderr = bytearray()
    answered: float | None = None
    before_answer = 0
    started = time.perf_counter()
    process = await anyio.open_process(command, env=env, cwd=env["HOME"])
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_collect, process.stderr, stderr)
            with anyio.fail_after(60):
                reader = BufferedByteReceiveStream(process.stdout)
                await (_list_tools_modern if modern else _list_tools)(process.stdin, reader)
            answered = time.perf_counter()
            before_answer = len(stderr)
            await process.stdin.aclose()  # a stdio server exits at end of input
            with anyio.fail_after(10):
                await process.wait()
    except* (anyio.EndOfStream, anyio.IncompleteRead, TimeoutError, BenchError) as failure:
        why = "; ".join(str(exc) or type(exc).__name__ for exc in failure.exceptions)
        tail = stderr.decode(errors="replace")[-2000:]
        raise BenchError(f"{' '.join(command)} gave no tools/list answer ({why}):\n{tail}") from None
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert answered is not None  # the task group re-raises whatever stopped the handshake
    return answered - started, stderr[:before_answer].decode(errors="replace")


async def _list_tools(stdin: ByteSendStream, stdout: BufferedByteReceiveStream) -> None:
    await _send(stdin, INITIALIZE)
    await _response(stdout, 1)
    await _send(stdin, INITIALIZED, LIST_TOOLS)
    await _response(stdout, 2)


async def _list_tools_modern(stdin: ByteSendStream, stdout: BufferedByteReceiveStream) -> None:
    """As Claude Code opens a 2026-era session: discover, then list the tools."""
    discover, list_tools = MODERN_OPENING
    await _send(stdin, discover)
    await _response(stdout, 1)
    await _send(stdin, list_tools)
    await _response(stdout, 2)


def _imported_modules(importtime_log: str) -> set[str]:
    # Lines look like "import time:       123 |        456 |   anthropic._client".
    return {m.group(1).strip() for m in re.finditer(r"^import time:.*\|(.*)$", importtime_log, re.MULTILINE)}


def our_command() -> list[str]:
    """`mcp-subagents serve` as hosts start it: the console script of this Python's environment, else `-m`."""
    script = Path(sys.executable).with_name("mcp-subagents")
    return [str(script), "serve"] if script.is_file() else [sys.executable, "-m", "mcp_subagents", "serve"]


async def measure_cold_start(counts: Counts, tmp: Path) -> ColdStart:
    env = server_environment(tmp)
    ours = our_command()
    bare = [sys.executable, str(BARE_SERVER)]
    # The import-time run comes first and untimed: it also warms the disk cache for both servers' modules.
    _, log = await time_to_tools_list(ours, {**env, "PYTHONPROFILEIMPORTTIME": "1"})
    modules = _imported_modules(log)
    if "mcp_subagents.mcp.server" not in modules:
        raise BenchError("the import-time log names no mcp_subagents.mcp.server import; cannot check eager imports")
    ours_s: list[float] = []
    bare_s: list[float] = []
    for _ in range(counts.spawns):
        # Alternate, so drift in the machine's load hits both sides alike.
        ours_s.append((await time_to_tools_list(ours, env))[0])
        bare_s.append((await time_to_tools_list(bare, env))[0])
    await time_to_tools_list(ours, env, modern=True)  # untimed: the start that keeps its answers for the next
    modern_ours: list[float] = []
    modern_bare: list[float] = []
    for _ in range(counts.spawns):
        modern_ours.append((await time_to_tools_list(ours, env, modern=True))[0])
        modern_bare.append((await time_to_tools_list(bare, env, modern=True))[0])
    return ColdStart(
        ours_ms=_ms(statistics.median(ours_s)),
        bare_ms=_ms(statistics.median(bare_s)),
        eager_imports=tuple(sdk for sdk in ("anthropic", "openai") if sdk in modules),
        modern_ours_ms=_ms(statistics.median(modern_ours)),
        modern_bare_ms=_ms(statistics.median(modern_bare)),
    )


# ---- 4. the first Task after start-up ------------------------------------------------------------------------------


def _task_call(request_id: int) -> Json:
    return _request(request_id, "tools/call", {"name": "Task", "arguments": TASK})


async def time_first_and_later_task(
    fake: FakeLLM, command: list[str], env: dict[str, str], pause: float = FIRST_TASK_PAUSE
) -> tuple[float, float]:
    """Spawn a stdio server, list its tools, pause as a person would (or not, as Claude Code does not), then time
    its first Task and the next one."""
    fake.reset()
    fake.push(turn(text("first")), turn(text("second")))
    process = await anyio.open_process(command, env=env, cwd=env["HOME"])
    assert process.stdin is not None and process.stdout is not None
    stdout = BufferedByteReceiveStream(process.stdout)
    try:
        with anyio.fail_after(120):
            await _list_tools(process.stdin, stdout)
            await anyio.sleep(pause)  # the pause is what is measured against, not a wait for a state
            timings: list[float] = []
            for request_id in (3, 4):
                started = time.perf_counter()
                await _send(process.stdin, _task_call(request_id))
                answer = await _response(stdout, request_id)
                timings.append(time.perf_counter() - started)
                if answer["result"].get("isError"):
                    raise BenchError(f"Task failed: {answer['result']}")
            await process.stdin.aclose()
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return timings[0], timings[1]


async def measure_first_task(fake: FakeLLM, counts: Counts, tmp: Path) -> FirstTask:
    env = {**server_environment(tmp), "ANTHROPIC_BASE_URL": fake.url}
    paused = await _first_and_later(fake, env, counts.first_task_spawns, FIRST_TASK_PAUSE)
    at_once = await _first_and_later(fake, env, counts.first_task_spawns, 0.0)
    runtime = tmp / "run"  # a warm server of this bench's own, ended below
    runtime.mkdir(mode=0o700, exist_ok=True)
    warm_env = {**env, "MCP_SUBAGENTS_NO_WARM": "0", "XDG_RUNTIME_DIR": str(runtime)}
    warm = await _started_warm_server(warm_env)
    try:
        warm_at_once = await _first_and_later(fake, warm_env, counts.first_task_spawns, 0.0)
    finally:
        os.kill(warm, signal.SIGTERM)
    return FirstTask(*paused, *at_once, *warm_at_once)


async def _first_and_later(fake: FakeLLM, env: dict[str, str], spawns: int, pause: float) -> tuple[float, float]:
    firsts: list[float] = []
    laters: list[float] = []
    for _ in range(spawns):
        first, later = await time_first_and_later_task(fake, our_command(), env, pause)
        firsts.append(first)
        laters.append(later)
    return _ms(statistics.median(firsts)), _ms(statistics.median(laters))


async def _started_warm_server(env: dict[str, str]) -> int:
    """A first start that leaves the warm server (stdin closed at once); its pid once it listens."""
    process = await anyio.open_process(our_command(), env=env, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    async with process:
        assert process.stdin is not None
        await process.stdin.aclose()
        await process.wait()
    address = warm_address(env)
    assert address is not None
    with anyio.fail_after(60):
        while True:  # a detached process says it is ready only through its socket and log
            if _says_serving(address.log_path):
                return int(_warm_pid(Path(address.folder)))
            await anyio.sleep(0.05)


def _says_serving(log: str) -> bool:
    with contextlib.suppress(OSError):
        return "serving on" in Path(log).read_text(encoding="utf-8")
    return False


def _warm_pid(folder: Path) -> int:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                words = (entry / "cmdline").read_bytes().split(b"\0")
                if b"mcp_subagents.cli.warm_server" in words and str(folder).encode() in words:
                    return int(entry.name)
    raise BenchError(f"the warm server of {folder} is not running")


# ---- report --------------------------------------------------------------------------------------------------------


def _ms(seconds: float) -> float:
    return seconds * 1000


def _row(label: str, kind: str, value: str, note: str = "") -> str:
    return f"{label:<46}{kind:<8}{value:>8}   {note}".rstrip()


def report(counts: Counts, trips: RoundTrips, concurrency: Concurrency, cold: ColdStart, first: FirstTask) -> str:
    tasks = f"({counts.repeats} Tasks of {counts.tool_turns} TodoWrite turns + 1 answer)"
    eager = ", ".join(cold.eager_imports) or "none (good)"
    return "\n".join(
        [
            _row("round trip, scripted model (server only)", "median", f"{trips.scripted_ms:.2f} ms", tasks),
            _row(
                "round trip, anthropic adapter + fake HTTP",
                "median",
                f"{trips.http_ms:.2f} ms",
                f"(SDK+HTTP baseline {trips.baseline_ms:.2f} ms; server overhead {trips.overhead_ms:.2f} ms)",
            ),
            _row(
                f"{CONCURRENT_TASKS} concurrent Task / 1 Task ({FAKE_LATENCY * 1000:.0f} ms latency)",
                "ratio",
                f"{concurrency.ratio:.2f}",
                f"({CONCURRENT_TASKS}: {concurrency.many_ms:.0f} ms, 1: {concurrency.one_ms:.0f} ms; "
                f"same requests without the server: ratio {concurrency.adapter_ratio:.2f})",
            ),
            _row(
                "cold start to tools/list / bare server",
                "ratio",
                f"{cold.ratio:.2f}",
                f"(ours {cold.ours_ms:.0f} ms, bare {cold.bare_ms:.0f} ms; median of {counts.spawns} each)",
            ),
            _row(
                "2026-era host: cold start to tools/list / bare",
                "ratio",
                f"{cold.modern_ratio:.2f}",
                f"(ours {cold.modern_ours_ms:.0f} ms with the last start's answers, bare {cold.modern_bare_ms:.0f} ms)",
            ),
            _row("provider SDKs imported before tools/list answers", "", eager),
            _row(
                f"first Task {FIRST_TASK_PAUSE:g} s after tools/list / next Task",
                "ratio",
                f"{first.ratio:.2f}",
                f"(first {first.first_ms:.0f} ms, next {first.later_ms:.0f} ms; median of {counts.first_task_spawns})",
            ),
            _row(
                "first Task right after tools/list / next, cold",
                "ratio",
                f"{first.at_once_ratio:.2f}",
                f"(first {first.at_once_ms:.0f} ms, next {first.at_once_later_ms:.0f} ms)",
            ),
            _row(
                "... from the warm server (a later start)",
                "ratio",
                f"{first.warm_ratio:.2f}",
                f"(first {first.warm_ms:.0f} ms, next {first.warm_later_ms:.0f} ms)",
            ),
        ]
    )


async def main(counts: Counts) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-bench-") as tmp_name, FakeLLM() as fake:
        tmp = Path(tmp_name)
        print("measuring round trips ...", flush=True)
        trips = await measure_round_trips(fake, counts, tmp / "round-trips")
        print("measuring concurrency ...", flush=True)
        concurrency = await measure_concurrency(fake, counts, tmp / "concurrency")
        print("measuring cold start ...", flush=True)
        cold = await measure_cold_start(counts, tmp / "cold-start")
        print("measuring the first Task after start-up ...", flush=True)
        first = await measure_first_task(fake, counts, tmp / "first-task")
    print()
    print(report(counts, trips, concurrency, cold, first))


def parse_args(argv: list[str] | None = None) -> Counts:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny counts, for CI: same code paths, a few seconds")
    return SMOKE if parser.parse_args(argv).smoke else FULL


if __name__ == "__main__":
    anyio.run(main, parse_args())
