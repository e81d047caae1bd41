"""Memory a finished task keeps for the life of the process, measured with tracemalloc in this one run.

    python bench/memory.py            # 200 tasks that each Read a 98 KiB file, then answer
    python bench/memory.py --smoke    # 20 tasks (CI)

Each task is a Task call from an in-memory MCP client, as a host makes it, and runs through the real Anthropic
adapter against the fake Messages API in its own process (127.0.0.1, dummy key). The figure is the growth of
Python's allocated memory from before the tasks to after they all finished (and a full collection), divided by the
number of tasks: what the server (and the client, whose results are dropped) holds per finished task.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, fake_api, in_process_app

sys.path.insert(0, str(ROOT))

from mcp import Client

from mcp_subagents.mcp.server import build_server

FILE_BYTES = 98 * 1024


@dataclass(frozen=True, slots=True)
class Plan:
    tasks: int
    concurrency: int


FULL = Plan(tasks=200, concurrency=10)
SMOKE = Plan(tasks=30, concurrency=10)


async def run_tasks(client: Client, target: Path, count: int, first: int, concurrency: int) -> None:
    """`count` Task calls through the MCP server, as a host makes them (foreground, with progress)."""

    async def one(number: int) -> None:
        arguments = {"description": f"read {number}", "prompt": f"read {target}", "subagent_type": "general-purpose"}
        result = await client.call_tool("Task", arguments, progress_callback=_ignore_progress)
        if result.is_error:
            raise SystemExit(f"Task failed: {result.content}")

    for start in range(first, first + count, concurrency):
        async with anyio.create_task_group() as group:
            for number in range(start, min(first + count, start + concurrency)):
                group.start_soon(one, number)


async def _ignore_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


def traced_kib() -> float:
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / 1024


async def main(plan: Plan, show: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-memory-") as tmp:
        root = Path(tmp)
        target = root / "work" / "big.txt"
        target.parent.mkdir(parents=True)
        line = "memory benchmark line, long enough to look like code or prose in a file.\n"
        target.write_text(line * (FILE_BYTES // len(line)), encoding="utf-8")
        async with fake_api("read", 0.0) as url:
            app = in_process_app(root, url, max_concurrent=plan.concurrency, watch_interval=0)
            async with app.running(), Client(build_server(app), mode="legacy") as client:
                # Warm-up: imports, connections, and the caches that grow to a steady size on the way. Traced
                # already: an entry a bounded cache replaces later is then counted as freed, and a table that
                # grows (the interned strings') as the difference, not as new memory of the measured tasks.
                tracemalloc.start(25)
                await run_tasks(client, target, plan.tasks, 0, plan.concurrency)
                before = traced_kib()
                snapshot = tracemalloc.take_snapshot() if show else None
                await run_tasks(client, target, plan.tasks, 1000, plan.concurrency)
                after = traced_kib()
                if snapshot is not None:
                    for stat in tracemalloc.take_snapshot().compare_to(snapshot, "traceback")[:12]:
                        print(f"{stat.size_diff / plan.tasks:8.0f} B per task, allocated at:")
                        for frame in stat.traceback.format()[-8:]:
                            print("   ", frame)
                tracemalloc.stop()
                states = Counter(record.state for record in app.tasks._records.values())  # pyright: ignore[reportPrivateUsage]
    per_task = (after - before) / plan.tasks
    print(
        f"memory kept per finished task             {per_task:6.1f} KiB   ({plan.tasks} tasks that read a "
        f"{FILE_BYTES // 1024} KiB file; {after - before:.0f} KiB in all; tasks known: {dict(states)})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    parser.add_argument("--show", action="store_true", help="print where the kept memory was allocated")
    arguments = parser.parse_args()
    anyio.run(main, SMOKE if arguments.smoke else FULL, arguments.show)
