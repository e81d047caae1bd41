"""Server CPU per model round trip, many concurrent Tasks against their ideal time, and garbage-collector pauses,
each measured in this one run.

    python bench/concurrency.py            # full counts, a few minutes
    python bench/concurrency.py --smoke    # the same code paths with small counts (CI)

`mcp-subagents serve` runs as hosts run it (a stdio subprocess, driven with raw JSON-RPC that asks for progress),
and the Messages API runs in a process of its own, as a remote API would: the tests' fake for the CPU figures
(its events arrive one by one, as a real stream's do), and for many Tasks at once the minimal one of light_api.py,
which leaves the cores to the server (the tests' fake needs nearly as much CPU as the server). The server's CPU
time is read from /proc, so neither the client nor the API counts. Only 127.0.0.1 is touched; the key is a dummy.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import BENCH_KEY, ROOT, StdioServer, fake_api, server_environment, stdio_server, task_arguments

sys.path.insert(0, str(ROOT))

from mcp_subagents.config.settings import default_model_processes

TOOL_TURNS = 3
"""Round-trip figure: Tasks of three TodoWrite turns and an answer (four model round trips)."""
WIDE_TOOL_TURNS = 2
"""Concurrency figure: Tasks of three turns (two TodoWrite turns and the answer), as the issue states it."""
LATENCY = 0.2


@dataclass(frozen=True, slots=True)
class Plan:
    round_trip_tasks: int
    round_trip_repeats: int
    wide: tuple[int, ...]
    """How many Tasks run at once in the concurrency figures."""
    wide_repeats: int
    gc_tasks: int


FULL = Plan(round_trip_tasks=60, round_trip_repeats=5, wide=(50, 200), wide_repeats=5, gc_tasks=150)
SMOKE = Plan(round_trip_tasks=10, round_trip_repeats=1, wide=(10,), wide_repeats=1, gc_tasks=10)


# ---- 1. server CPU per round trip ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoundTrips:
    server_ms: list[float]
    """The server process's CPU per round trip."""
    total_ms: list[float]
    """The server's and its model processes' CPU per round trip."""


async def cpu_per_round_trip(root: Path, plan: Plan, processes: int) -> RoundTrips:
    """CPU milliseconds per model round trip, once per repeat (10 Tasks at a time, latency 0), with `processes`
    model processes allowed (`--model-processes`)."""
    server_ms: list[float] = []
    total_ms: list[float] = []
    round_trips = plan.round_trip_tasks * (TOOL_TURNS + 1)
    async with fake_api(f"todo:{TOOL_TURNS}", 0.0) as url:
        env = server_environment(root, api_url=url)
        args = ("--max-concurrent", "50", "--model-processes", str(processes))
        async with stdio_server(env, args=args) as server:
            await server.call_tool("Task", task_arguments(-1))  # the SDK import and the first connection
            await _run_tasks(server, 0, 10)  # ten at once: the overflow starts the model processes
            await server.settle()
            for _ in range(plan.round_trip_repeats):
                before, before_children = server.cpu_seconds(), server.model_process_cpu_seconds()
                for start in range(0, plan.round_trip_tasks, 10):
                    await _run_tasks(server, start, min(start + 10, plan.round_trip_tasks))
                used = server.cpu_seconds() - before
                children = server.model_process_cpu_seconds() - before_children
                server_ms.append(used / round_trips * 1000)
                total_ms.append((used + children) / round_trips * 1000)
    return RoundTrips(server_ms, total_ms)


async def _run_tasks(server: StdioServer, start: int, stop: int) -> None:
    async with anyio.create_task_group() as group:
        for number in range(start, stop):
            group.start_soon(server.call_tool, "Task", task_arguments(number))


async def adapter_cpu_per_request(requests: int, provider: str = "anthropic") -> float:
    """The floor: CPU milliseconds per request of one provider's adapter alone (SDK and HTTP), in this process."""
    from mcp_subagents.core.messages import UserMessage
    from mcp_subagents.models.anthropic import AnthropicModel
    from mcp_subagents.models.base import Model, ModelRequest
    from mcp_subagents.models.openai import OpenAIModel
    from mcp_subagents.tools import builtin_tools

    tools = tuple(tool.definition() for tool in builtin_tools().values())
    model_id = "claude-sonnet-5-5" if provider == "anthropic" else "gpt-5"
    request = ModelRequest(model=model_id, system="s", messages=(UserMessage(content="job 1"),), tools=tools)
    async with fake_api("todo:0", 0.0) as url:
        model: Model
        if provider == "anthropic":
            model = AnthropicModel(api_key=BENCH_KEY, base_url=url, max_retries=0)
        else:
            model = OpenAIModel(api_key=BENCH_KEY, base_url=f"{url}/v1", max_retries=0)
        for _ in range(20):
            await model.request(request)
        started = time.process_time()
        for _ in range(requests):
            await model.request(request)
        used = time.process_time() - started
        await model.aclose()
    return used / requests * 1000


# ---- 2. many Tasks at once -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Wide:
    tasks: int
    processes: int
    ratios: list[float]
    cpu_ratios: list[float]
    """Server CPU during the run over the ideal wall time: above 1, one core cannot keep up."""
    total_cpu_ratios: list[float]
    """The same with the model processes' CPU added."""


async def wide(root: Path, tasks: int, repeats: int, processes: int) -> Wide:
    ideal = (WIDE_TOOL_TURNS + 1) * LATENCY
    ratios: list[float] = []
    cpu_ratios: list[float] = []
    total_cpu_ratios: list[float] = []
    async with fake_api(f"todo:{WIDE_TOOL_TURNS}", LATENCY, light=True) as url:
        env = server_environment(root, api_url=url)
        args = ("--max-concurrent", str(tasks), "--model-processes", str(processes))
        async with stdio_server(env, args=args) as server:
            # Warm-up: the SDK import, the model processes, and as many connections as the run needs.
            await _run_tasks(server, 0, tasks)
            await server.settle()
            await _run_tasks(server, 0, tasks)  # the connections of the model processes
            for _ in range(repeats):
                before, before_children = server.cpu_seconds(), server.model_process_cpu_seconds()
                started = time.perf_counter()
                await _run_tasks(server, 0, tasks)
                ratios.append((time.perf_counter() - started) / ideal)
                used = server.cpu_seconds() - before
                cpu_ratios.append(used / ideal)
                total_cpu_ratios.append((used + server.model_process_cpu_seconds() - before_children) / ideal)
    return Wide(tasks, processes, ratios, cpu_ratios, total_cpu_ratios)


# ---- 3. garbage-collector pauses -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pauses:
    full_collections: int
    longest_ms: float
    total_ms: float
    round_trips: int


class PauseClock:
    """Times every collection of the oldest generation through `gc.callbacks`."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append(time.perf_counter() - self._started)


async def gc_pauses(root: Path, tasks: int) -> tuple[Pauses, Pauses]:
    """Full-collection pauses over the same Tasks run in this process, with what the imports created frozen (as the
    server does it) and unfrozen (as before)."""
    from mcp import Client

    from mcp_subagents.config.settings import Settings
    from mcp_subagents.mcp.server import build_server
    from mcp_subagents.runtime.service import Subagents

    async with fake_api(f"todo:{TOOL_TURNS}", 0.0) as url:
        (root / "work").mkdir(parents=True, exist_ok=True)
        work, state = root / "work", root / "state"
        settings = Settings(
            cwd=work, state_dir=state, user_agents_dir=root / "none", watch_interval=0, model_processes=0
        )
        app = Subagents(settings, environ={"ANTHROPIC_API_KEY": BENCH_KEY, "ANTHROPIC_BASE_URL": url})
        async with app.running(), Client(build_server(app), mode="legacy") as client:

            async def run(count: int) -> None:
                for start in range(0, count, 10):
                    async with anyio.create_task_group() as group:
                        for number in range(start, min(start + 10, count)):
                            group.start_soon(client.call_tool, "Task", task_arguments(number))

            await run(10)  # imports the SDK, which freezes what exists then (models/providers.py)
            frozen = await _timed_pauses(run, tasks)
            gc.unfreeze()
            unfrozen = await _timed_pauses(run, tasks)
    return frozen, unfrozen


async def _timed_pauses(run: Callable[[int], Awaitable[object]], tasks: int) -> Pauses:
    clock = PauseClock()
    gc.callbacks.append(clock)
    try:
        await run(tasks)
    finally:
        gc.callbacks.remove(clock)
    pauses = [pause * 1000 for pause in clock.pauses]
    return Pauses(
        full_collections=len(pauses),
        longest_ms=max(pauses, default=0.0),
        total_ms=sum(pauses),
        round_trips=tasks * (TOOL_TURNS + 1),
    )


# ---- report ----------------------------------------------------------------------------------------------------------


def spread(values: list[float], unit: str = "", digits: int = 2) -> str:
    median = statistics.median(values)
    if len(values) == 1:
        return f"{median:.{digits}f}{unit}"
    return f"{median:.{digits}f}{unit} (min {min(values):.{digits}f}, max {max(values):.{digits}f}, {len(values)} runs)"


async def main(plan: Plan) -> None:
    spread_to = max(1, default_model_processes())
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-concurrency-") as tmp:
        root = Path(tmp)
        print("measuring CPU per round trip ...", flush=True)
        one_process = await cpu_per_round_trip(root / "cpu-0", plan, 0)
        spread_cpu = await cpu_per_round_trip(root / "cpu-spread", plan, spread_to)
        floor = await adapter_cpu_per_request(200 if plan is FULL else 20)
        openai_floor = await adapter_cpu_per_request(200 if plan is FULL else 20, "openai")
        results: list[Wide] = []
        for tasks in plan.wide:
            for processes in (spread_to, 0):
                print(f"measuring {tasks} Tasks at once, {processes} model process(es) ...", flush=True)
                results.append(await wide(root / f"wide-{tasks}-{processes}", tasks, plan.wide_repeats, processes))
        print("measuring garbage-collector pauses ...", flush=True)
        frozen, unfrozen = await gc_pauses(root / "gc", plan.gc_tasks)
    print()
    print(
        f"server CPU per model round trip, {spread_to} model process(es)   {spread(spread_cpu.server_ms, ' ms')}   "
        f"(goal <= 5 ms; with the model processes' CPU: {spread(spread_cpu.total_ms, ' ms')})"
    )
    print(
        f"server CPU per model round trip, no model process   {spread(one_process.server_ms, ' ms')}   "
        f"(the adapter alone: {floor:.2f} ms, ratio {statistics.median(one_process.server_ms) / floor:.2f})"
    )
    print(f"CPU per request of the adapter alone: Anthropic {floor:.2f} ms, OpenAI {openai_floor:.2f} ms")
    for result in results:
        print(
            f"{result.tasks} Tasks at once (3 turns, {LATENCY * 1000:.0f} ms), {result.processes} model process(es): "
            f"wall/ideal {spread(result.ratios)}   (CPU / ideal: server {spread(result.cpu_ratios)}, "
            f"with the model processes {spread(result.total_cpu_ratios)})"
        )
    for label, pauses in (("frozen (as served)", frozen), ("unfrozen (before)", unfrozen)):
        print(
            f"full GC passes, {label:<19}  {pauses.full_collections} in {pauses.round_trips} round trips, "
            f"longest {pauses.longest_ms:.1f} ms, {pauses.total_ms / pauses.round_trips:.3f} ms per round trip"
        )
    if unfrozen.longest_ms:
        print(f"longest full-GC pause, frozen / unfrozen ratio {frozen.longest_ms / unfrozen.longest_ms:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    anyio.run(main, SMOKE if parser.parse_args().smoke else FULL)
