"""Memory a finished task keeps for the life of the process, measured in this one run: by RSS, and by tracemalloc.

    python bench/memory.py            # 1200 tasks, each a Read of a 98 KiB file and an answer
    python bench/memory.py --smoke    # 40 tasks (CI)
    python bench/memory.py --show     # also where what is kept was allocated, and which objects there are more of

Each task is a Task call as a host makes it (foreground, with progress), through the real Anthropic adapter against
the fake Messages API in its own process (127.0.0.1, dummy key); ten run at a time.

By RSS: `mcp-subagents serve` runs as hosts run it, a stdio subprocess, so only the server's memory counts. Its
VmRSS (/proc/PID/status) is read after its first Task (which imports the provider SDK and opens the connection) and
then every 100 tasks. Two figures: the growth over the first 1000 tasks after that first one, divided by them (a
fresh server: caches that fill to a bounded size and the allocator's arenas growing to what ten tasks at once need
count too), and the same over the 1000 tasks after the first 200 (the steady state), with the slope of its samples.
Nothing is collected or trimmed in the server from outside: that is what the person sees.

In this process: the same tasks from an in-memory MCP client, after a full collection: the growth of RSS, of RSS
after `malloc_trim(0)` (what the allocator could hand back: the difference is free memory kept in its arenas), and
of what tracemalloc counts as allocated. Tracing starts before the warm-up: an entry that a bounded cache replaces
during the measured tasks is then counted as freed, and a table that grows once (the interned strings') is not
counted as memory those tasks kept.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import statistics
import sys
import tempfile
import tracemalloc
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, StdioServer, fake_api, in_process_app, server_environment, stdio_server

sys.path.insert(0, str(ROOT))

from mcp import Client

from mcp_subagents.mcp.server import build_server

FILE_BYTES = 98 * 1024
LINE = "memory benchmark line, long enough to look like code or prose in a file.\n"


@dataclass(frozen=True, slots=True)
class Plan:
    warm_up: int
    """Tasks after the first before the steady-state figure starts."""
    tasks: int
    sample_every: int
    traced_tasks: int
    """Tasks (after as many for the warm-up) in this process, under tracemalloc."""
    concurrency: int = 10


FULL = Plan(warm_up=200, tasks=1000, sample_every=100, traced_tasks=200)
SMOKE = Plan(warm_up=10, tasks=30, sample_every=10, traced_tasks=10)


def task_arguments(target: Path, number: int) -> dict[str, object]:
    return {"description": f"read {number}", "prompt": f"read {target}", "subagent_type": "general-purpose"}


def big_file(home: Path) -> Path:
    target = home / "work" / "big.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(LINE * (FILE_BYTES // len(LINE)), encoding="utf-8")
    return target


# ---- by RSS, in the server process ----------------------------------------------------------------------------------


def rss_kib(pid: int | str = "self") -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/PID/status")


async def stdio_tasks(server: StdioServer, target: Path, first: int, count: int, concurrency: int) -> None:
    for start in range(first, first + count, concurrency):
        async with anyio.create_task_group() as group:
            for number in range(start, min(first + count, start + concurrency)):
                group.start_soon(server.call_tool, "Task", task_arguments(target, number))


async def rss_samples(url: str, plan: Plan) -> dict[int, int]:
    """The server's RSS in KiB after its first task, and then every `sample_every` tasks, by finished tasks."""
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-memory-") as tmp:
        home = Path(tmp)
        target = big_file(home)
        async with stdio_server(server_environment(home, api_url=url)) as server:
            await server.request("tools/list")
            await stdio_tasks(server, target, 0, 1, 1)
            samples = {1: rss_kib(server.pid)}
            done, last = 1, 1 + plan.warm_up + plan.tasks
            while done < last:
                count = min(plan.sample_every, last - done)
                await stdio_tasks(server, target, done, count, plan.concurrency)
                done += count
                samples[done] = rss_kib(server.pid)
    return samples


def growth(samples: dict[int, int], first: int, tasks: int) -> float:
    """KiB per task from `first` finished tasks to `first + tasks`."""
    return (samples[first + tasks] - samples[first]) / tasks


def slope(samples: list[tuple[int, int]]) -> float:
    """Least-squares KiB per task."""
    done = [float(count) for count, _ in samples]
    kib = [float(rss) for _, rss in samples]
    return statistics.linear_regression(done, kib).slope


# ---- in this process: RSS after a collection and after trimming, and tracemalloc ------------------------------------


@dataclass(frozen=True, slots=True)
class Reading:
    rss: int
    trimmed: int
    traced: int
    """KiB."""


def read_memory() -> Reading:
    gc.collect()
    rss = rss_kib()
    _malloc_trim()
    return Reading(rss=rss, trimmed=rss_kib(), traced=tracemalloc.get_traced_memory()[0] // 1024)


def _malloc_trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the trimmed figure is then the untrimmed one
        pass


async def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def client_tasks(client: Client, target: Path, first: int, count: int, concurrency: int) -> None:
    async def one(number: int) -> None:
        arguments = task_arguments(target, number)
        result = await client.call_tool("Task", arguments, progress_callback=_ignore_progress)
        if result.is_error:
            raise SystemExit(f"Task failed: {result.content}")

    for start in range(first, first + count, concurrency):
        async with anyio.create_task_group() as group:
            for number in range(start, min(first + count, start + concurrency)):
                group.start_soon(one, number)


async def in_process(url: str, plan: Plan, show: bool) -> tuple[Reading, Reading]:
    """Readings after the warm-up and after the measured tasks; with `show`, where the difference was allocated."""
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-memory-") as tmp:
        root = Path(tmp)
        target = big_file(root)
        app = in_process_app(root, url, max_concurrent=plan.concurrency, watch_interval=0)
        async with app.running(), Client(build_server(app), mode="legacy") as client:
            tracemalloc.start(25 if show else 1)
            await client_tasks(client, target, 0, plan.traced_tasks, plan.concurrency)
            before = read_memory()
            snapshot, objects = (tracemalloc.take_snapshot(), _object_counts()) if show else (None, Counter[str]())
            await client_tasks(client, target, plan.traced_tasks, plan.traced_tasks, plan.concurrency)
            after = read_memory()
            if snapshot is not None:
                _show(snapshot, objects, plan.traced_tasks)
            tracemalloc.stop()
    return before, after


def _object_counts() -> Counter[str]:
    return Counter(type(item).__qualname__ for item in gc.get_objects())


def _show(snapshot: tracemalloc.Snapshot, objects: Counter[str], tasks: int) -> None:
    for stat in tracemalloc.take_snapshot().compare_to(snapshot, "traceback")[:12]:
        print(f"{stat.size_diff / tasks:8.0f} B per task, allocated at:")
        for frame in stat.traceback.format()[-8:]:
            print("   ", frame)
    grown = _object_counts()
    grown.subtract(objects)
    print("objects tracked by the collector, more per 100 tasks:")
    for name, more in grown.most_common(15):
        print(f"    {more * 100 / tasks:8.1f}  {name}")


async def main(plan: Plan, show: bool) -> None:
    async with fake_api("read", 0.0) as url:
        samples = await rss_samples(url, plan)
        before, after = await in_process(url, plan, show)
    steady = 1 + plan.warm_up
    fitted = slope([(done, rss) for done, rss in samples.items() if done >= steady])
    print(
        f"memory kept per finished task, by RSS       {growth(samples, 1, plan.tasks):6.2f} KiB   (server process, "
        f"{plan.tasks} tasks that read a {FILE_BYTES // 1024} KiB file, after its first Task: "
        f"{samples[1] / 1024:.1f} -> {samples[1 + plan.tasks] / 1024:.1f} MiB)"
    )
    print(
        f"... the {plan.tasks} after the first {steady}               {growth(samples, steady, plan.tasks):6.2f} KiB   "
        f"(slope of the samples {fitted:.2f} KiB a task)"
    )
    print(f"... RSS every {plan.sample_every} tasks, MiB: {' '.join(f'{rss / 1024:.1f}' for rss in samples.values())}")
    tasks = plan.traced_tasks

    def per_task(field: str) -> str:
        return f"{(getattr(after, field) - getattr(before, field)) / tasks:.2f}"

    print(
        f"... in this process: RSS; after malloc_trim; tracemalloc   {per_task('rss')}; {per_task('trimmed')}; "
        f"{per_task('traced')} KiB   ({tasks} tasks after {tasks}, after a full collection)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    parser.add_argument("--show", action="store_true", help="print where the kept memory was allocated")
    arguments = parser.parse_args()
    anyio.run(main, SMOKE if arguments.smoke else FULL, arguments.show)
