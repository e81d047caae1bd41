"""What listing a task's changed files costs, measured in this one run.

    python bench/changes.py            # projects of 1,000 and 10,000 files, 15 Tasks each
    python bench/changes.py --smoke    # a project of 300 files, 3 Tasks (CI)

The list comes from two sources (agent/file_changes.py): the content of each file a Write, Edit or Bash redirect is
about to change, remembered before the call, and two scans of the project (size, modification time, inode of each
file) when a run that may write some other way (Bash, an MCP tool, a hook) starts and ends. Three figures:

- a whole Task (one Write, one Bash command, an answer) from the in-memory MCP client, in a project of N files over
  the same Task in an empty project, the two alternating on two servers; first with a model that answers at once,
  so the Task is the server alone and the scans weigh as much as they ever can, then with `LATENCY` a response,
  where the first scan runs while the model answers (a real model takes seconds);
- the watch alone: start (first scan) and finish (second scan, comparison, line counts) for a project of N files;
- one Write of a 200 KiB file through the Write tool, with the watch remembering the file first, over the Write
  alone, alternating.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/changes.py` puts bench/ on sys.path, not the repository

from mcp import Client  # noqa: E402

from mcp_subagents.agent.file_changes import ChangeWatch  # noqa: E402
from mcp_subagents.config.settings import Settings  # noqa: E402
from mcp_subagents.mcp.server import build_server  # noqa: E402
from mcp_subagents.models.base import ModelRequest, ModelResponse  # noqa: E402
from mcp_subagents.models.scripted import FunctionModel, ScriptedModel, text, tool_call  # noqa: E402
from mcp_subagents.runtime.service import Subagents  # noqa: E402
from mcp_subagents.tools.base import ToolContext  # noqa: E402
from mcp_subagents.tools.files import WRITE  # noqa: E402


@dataclass(frozen=True, slots=True)
class Plan:
    sizes: tuple[int, ...]
    tasks: int
    watches: int
    writes: int


FULL = Plan(sizes=(1_000, 10_000), tasks=15, watches=15, writes=200)
SMOKE = Plan(sizes=(300,), tasks=3, watches=3, writes=10)
LATENCY = 0.1
"""A model response's delay in the second round of Tasks: the first scan runs while the model answers."""
NAMES = itertools.count()
WRITTEN = "line of text\n" * 16_000  # about 200 KiB


def project(folder: Path, files: int) -> Path:
    """`files` small files in folders of 100, as a source tree has them."""
    folder.mkdir(parents=True)
    for index in range(files):
        sub = folder / f"pkg{index // 100}"
        sub.mkdir(exist_ok=True)
        (sub / f"module{index}.py").write_text(f"VALUE = {index}\n")
    return folder.resolve()


@asynccontextmanager
async def served(work: Path, state: Path, model: ScriptedModel, latency: float) -> AsyncGenerator[Client]:
    async def answer(request: ModelRequest) -> ModelResponse:
        await anyio.sleep(latency)
        return await model.request(request)

    settings = Settings(cwd=work, state_dir=state, permission_mode="bypassPermissions", sandbox="off")
    app = Subagents(settings, model=FunctionModel(answer), environ={})
    async with app.running(), Client(build_server(app), mode="legacy") as client:
        yield client


async def timed_task(client: Client, model: ScriptedModel, work: Path) -> float:
    number = next(NAMES)  # new files each time: rewriting a file with the same text changes nothing
    write = tool_call("Write", {"file_path": str(work / f"new{number}.txt"), "content": "one\ntwo\n"})
    bash = tool_call("Bash", {"command": f"echo {number} > out{number}.txt"})
    model.extend(write, bash, text("done"))
    task = {"description": "change", "prompt": "Change two files.", "subagent_type": "general-purpose"}
    started = time.perf_counter()
    result = await client.call_tool("Task", task)
    elapsed = time.perf_counter() - started
    if result.is_error or "[Files the task changed (2)" not in str(result.content):
        raise SystemExit(f"the Task did not list its two files: {result.content}")
    return elapsed


async def task_ratio(tmp: Path, files: int, tasks: int, latency: float) -> tuple[float, float, list[float]]:
    """(median ms in the project of `files` files, median ms in an empty one, each pair's ratio)."""
    big, empty = tmp / f"big{files}", tmp / f"empty{files}"
    if not big.exists():
        project(big, files)
        project(empty, 0)
    big_model, empty_model = ScriptedModel(), ScriptedModel()
    async with (
        served(big, tmp / f"state-big{files}", big_model, latency) as big_client,
        served(empty, tmp / f"state-empty{files}", empty_model, latency) as empty_client,
    ):
        await timed_task(big_client, big_model, big)  # warm-up: the task engine, the first scan's page cache
        await timed_task(empty_client, empty_model, empty)
        pairs: list[tuple[float, float]] = []
        for _ in range(tasks):
            pairs.append(
                (
                    await timed_task(big_client, big_model, big),
                    await timed_task(empty_client, empty_model, empty),
                )
            )
    return (
        statistics.median(a for a, _ in pairs) * 1000,
        statistics.median(b for _, b in pairs) * 1000,
        [a / b for a, b in pairs],
    )


async def watch_ms(folder: Path, runs: int) -> float:
    """Median ms of one watch's start and finish over `folder`, with one file changed in between."""
    times: list[float] = []
    for run in range(runs):
        started = time.perf_counter()
        watch = ChangeWatch(root=folder, allowed=(folder,), scan=True, unseen_writes=True)
        watch.start()
        await watch.first_scan_done()
        (folder / "pkg0" / "module0.py").write_text(f"VALUE = {run}\n")
        changes = await watch.finish()
        times.append(time.perf_counter() - started)
        assert changes.count == 1, changes
    return statistics.median(times) * 1000


async def write_ratio(tmp: Path, writes: int) -> tuple[float, float]:
    """Median µs of a Write with the watch remembering the file first, and of a Write alone (alternating)."""
    folder = project(tmp / "writes", 0)
    context = ToolContext(cwd=folder, allowed_roots=(folder,), env={})
    arguments = WRITE.validate({"file_path": str(folder / "big.txt"), "content": WRITTEN})
    await WRITE.run(context, arguments)
    watched: list[float] = []
    alone: list[float] = []
    for _ in range(writes):
        watch = ChangeWatch(root=folder, allowed=(folder,), scan=False)
        watch.start()
        started = time.perf_counter()
        await watch.before_call("Write", {"file_path": str(folder / "big.txt")}, folder)
        await WRITE.run(context, arguments)
        watched.append(time.perf_counter() - started)
        started = time.perf_counter()
        await WRITE.run(context, arguments)
        alone.append(time.perf_counter() - started)
    return statistics.median(watched) * 1e6, statistics.median(alone) * 1e6


async def main(plan: Plan) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-changes-") as tmp:
        root = Path(tmp)
        for latency in (0.0, LATENCY):
            for files in plan.sizes:
                big_ms, empty_ms, ratios = await task_ratio(root, files, plan.tasks, latency)
                spread = f"{min(ratios):.2f}-{max(ratios):.2f}"
                model = f"{latency * 1000:.0f} ms a model response" if latency else "instant model"
                print(
                    f"Task in a project of {files:,} files / in an empty one, {model}   "
                    f"{statistics.median(ratios):5.2f} ({spread})   ({big_ms:.1f} ms / {empty_ms:.1f} ms, "
                    f"{big_ms - empty_ms:+.1f} ms; medians of {plan.tasks} alternating pairs; Write + Bash + answer)"
                )
        for files in plan.sizes:
            print(
                f"watch start + finish, {files:,} files   {await watch_ms(root / f'big{files}', plan.watches):7.1f} ms"
                f"   (median of {plan.watches}: two scans, one file changed)"
            )
        watched, alone = await write_ratio(root, plan.writes)
        print(
            f"Write of 200 KiB, remembered first / alone   {watched / alone:5.2f}   "
            f"({watched:.0f} µs / {alone:.0f} µs, medians of {plan.writes} alternating)"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    anyio.run(main, SMOKE if parser.parse_args().smoke else FULL)
