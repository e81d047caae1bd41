"""The search tools against ripgrep on a 20k-file tree, and Read's first 2000 lines of a 50 MB file against a 1 MB one,
each figure measured in this one run, and the search tools with the event loop kept busy (as other subagents keep
it) against the same idle. (The harness for the search figures' own round: today's figures only.)

    python bench/search.py              # 20,000 files, 9 runs each
    python bench/search.py --repeat 3   # the same three times, then each ratio's median and spread
    python bench/search.py --smoke      # 2,000 files, 2 runs each (CI)

The tree also holds a pattern with many matches (two lines of every file), where the tools' own work shows. The
tools run as a subagent runs them (`Tool.validate` then `Tool.run` with a ToolContext on the tree), without a
sandbox; `rg` runs as a plain subprocess with the flags that give the same files or lines (not the same order: the
tools sort newest first, rg does not sort). Glob's goal row compares with `rg --files -g`, which on this tree lists
the same files but lets its glob decide a file before any .gitignore is read (`-g` overrides ignore files, so Glob
cannot use it); the row after it gives rg Glob's own flags, where it reads them. Wall-time medians, alternating
tool and rg. With head_limit 0 and many matches, Grep still parses, checks and sorts every line rg prints, but
answers one page: what one tool result holds (about 100,000 characters; the model is given no more), where rg
prints everything.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_subagents.cli.commands import THREAD_SWITCH_INTERVAL
from mcp_subagents.core.subprocesses import find_ripgrep
from mcp_subagents.tools import builtin_tools
from mcp_subagents.tools.base import ToolContext
from mcp_subagents.tools.glob_match import ripgrep_name_filter
from mcp_subagents.tools.ripgrep import WALK_OPTIONS_WITHOUT_HIDDEN

NEEDLE = "needle_in_the_tree"
MANY = "^line [12] of"
"""Matches two lines of every file: the tree with many matches, where the tools' own work shows."""
EXTENSIONS = (".py", ".ts", ".md", ".txt", ".json")


@dataclass(frozen=True, slots=True)
class Plan:
    files: int
    runs: int


FULL = Plan(files=20_000, runs=9)
SMOKE = Plan(files=2_000, runs=2)


def make_tree(root: Path, files: int) -> None:
    """`files` small files in folders of 100, two levels deep; one file in 40 holds the needle, every file MANY."""
    chooser = random.Random(15)
    for number in range(files):
        folder = root / f"pkg{number // 1000:02d}" / f"mod{number // 100 % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"line {n} of file {number}: {'x' * chooser.randint(10, 70)}" for n in range(chooser.randint(5, 60))]
        if number % 40 == 0:
            lines.insert(len(lines) // 2, f"here is the {NEEDLE} of file {number}")
        (folder / f"file{number:05d}{EXTENSIONS[number % len(EXTENSIONS)]}").write_text("\n".join(lines) + "\n")


def make_big_file(path: Path, size: int) -> None:
    line = "a line of a big log file, as a subagent might be asked to read one\n"
    with path.open("w", encoding="utf-8") as out:
        for _ in range(size // len(line)):
            out.write(line)


async def timed(action: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await action()
    return time.perf_counter() - started


def rg(*args: str, cwd: Path) -> Callable[[], Awaitable[Any]]:
    command = [find_ripgrep(), *args]

    async def run() -> None:
        await anyio.run_process(command, cwd=cwd, check=False, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    return run


def tool(name: str, arguments: dict[str, Any], ctx: ToolContext) -> Callable[[], Awaitable[Any]]:
    chosen = builtin_tools()[name]
    validated = chosen.validate(arguments)

    async def run() -> str:
        return await chosen.run(ctx, validated)

    return run


@dataclass(frozen=True, slots=True)
class Ratio:
    value: float
    text: str


async def ratio(ours: Callable[[], Awaitable[Any]], theirs: Callable[[], Awaitable[Any]], runs: int) -> Ratio:
    await ours()
    await theirs()  # warm the disk cache for both
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        a.append(await timed(ours))
        b.append(await timed(theirs))
    ratios = [x / y for x, y in zip(a, b, strict=True)]
    value = statistics.median(a) / statistics.median(b)
    return Ratio(
        value,
        f"{value:5.2f}   (tool {statistics.median(a) * 1000:.0f} ms, baseline {statistics.median(b) * 1000:.0f} ms; "
        f"paired ratios {min(ratios):.2f}-{max(ratios):.2f})",
    )


BUSY_SLICE = 20_000
"""Additions per slice of the busy task: about 2 ms of CPU between checkpoints, as other subagents' turns take."""


async def keep_busy(stop: anyio.Event) -> None:
    """Other subagents' work on the event loop: CPU in slices, a checkpoint between them."""
    while not stop.is_set():
        total = 0
        for number in range(BUSY_SLICE):
            total += number
        await anyio.lowlevel.checkpoint()


PYTHON_DEFAULT_SWITCH_INTERVAL = 0.005


def at_switch_interval(interval: float, action: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """`action` with the interpreter's thread switch interval at `interval` (the server sets its own, below)."""

    async def run() -> None:
        served = sys.getswitchinterval()
        sys.setswitchinterval(interval)
        try:
            await action()
        finally:
            sys.setswitchinterval(served)

    return run


def while_busy(action: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def run() -> None:
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(keep_busy, stop)
            await action()
            stop.set()

    return run


async def main(plan: Plan, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-search-") as tmp:
        root = Path(tmp) / "tree"
        make_tree(root, plan.files)
        ctx = ToolContext(cwd=root, allowed_roots=(root,), env=dict(os.environ))
        rows = [
            (
                "Glob **/*.py / rg --files -g '*.py'",
                tool("Glob", {"pattern": "**/*.py"}, ctx),
                ("--files", "-g", "*.py"),
            ),
            (
                "... / rg with the flags Glob gives it",
                tool("Glob", {"pattern": "**/*.py"}, ctx),
                ("--files", "--null", *WALK_OPTIONS_WITHOUT_HIDDEN, *ripgrep_name_filter("**/*.py")),
            ),
            (
                "Grep files_with_matches / rg -l",
                tool("Grep", {"pattern": NEEDLE, "head_limit": 0}, ctx),
                ("-l", NEEDLE),
            ),
            (
                "Grep count / rg -c",
                tool("Grep", {"pattern": NEEDLE, "output_mode": "count", "head_limit": 0}, ctx),
                ("-c", NEEDLE),
            ),
            (
                "Grep content / rg -n",
                tool("Grep", {"pattern": NEEDLE, "output_mode": "content", "head_limit": 0}, ctx),
                ("-n", NEEDLE),
            ),
            (
                "many: Grep files_with_matches / rg -l",
                tool("Grep", {"pattern": MANY, "head_limit": 0}, ctx),
                ("-l", MANY),
            ),
            (
                "many: Grep count / rg -c",
                tool("Grep", {"pattern": MANY, "output_mode": "count", "head_limit": 0}, ctx),
                ("-c", MANY),
            ),
            (
                "many: Grep content / rg -n",
                tool("Grep", {"pattern": MANY, "output_mode": "content", "head_limit": 0}, ctx),
                ("-n", MANY),
            ),
            (
                "many: Grep content -C 2 / rg -n -C 2",
                tool("Grep", {"pattern": MANY, "output_mode": "content", "-C": 2, "head_limit": 0}, ctx),
                ("-n", "-C", "2", MANY),
            ),
            (
                "many: Grep content, default head_limit / rg -n",
                tool("Grep", {"pattern": MANY, "output_mode": "content"}, ctx),
                ("-n", MANY),
            ),
        ]
        small, big = Path(tmp) / "small.log", Path(tmp) / "big.log"
        make_big_file(small, 1024 * 1024)
        make_big_file(big, 50 * 1024 * 1024 if plan is FULL else 10 * 1024 * 1024)
        files_ctx = ToolContext(cwd=Path(tmp), allowed_roots=(Path(tmp),), env=dict(os.environ))
        read_big = tool("Read", {"file_path": str(big), "limit": 2000}, files_ctx)
        read_small = tool("Read", {"file_path": str(small), "limit": 2000}, files_ctx)
        read_label = f"Read 2000 lines of {big.stat().st_size // (1024 * 1024)} MB / of 1 MB"
        glob_all = tool("Glob", {"pattern": "**/*.py"}, ctx)
        count_many = tool("Grep", {"pattern": MANY, "output_mode": "count", "head_limit": 0}, ctx)
        busy_rows = [
            ("Glob, event loop busy / idle", while_busy(glob_all), glob_all),
            ("many: Grep count, event loop busy / idle", while_busy(count_many), count_many),
            ("Read 2000 lines of 1 MB, event loop busy / idle", while_busy(read_small), read_small),
            (
                "... with Python's default switch interval, 5 ms",
                at_switch_interval(PYTHON_DEFAULT_SWITCH_INTERVAL, while_busy(read_small)),
                read_small,
            ),
        ]
        figures: dict[str, list[float]] = {}
        gc.freeze()  # as the server does after start-up: what was built so far stays out of full collections
        for round_number in range(1, repeats + 1):
            print(f"{plan.files} files; the tools without a sandbox; median of {plan.runs}, alternating", end="")
            print(f"; round {round_number} of {repeats}" if repeats > 1 else "")
            for label, ours, flags in rows:
                measured = await ratio(ours, rg(*flags, cwd=root), plan.runs)
                figures.setdefault(label, []).append(measured.value)
                print(f"{label:<48} ratio {measured.text}")
            measured = await ratio(read_big, read_small, plan.runs)
            figures.setdefault(read_label, []).append(measured.value)
            print(f"{read_label:<48} ratio {measured.text}")
            for label, busy, idle in busy_rows:
                measured = await ratio(busy, idle, plan.runs)
                figures.setdefault(label, []).append(measured.value)
                print(f"{label:<48} ratio {measured.text}")
        if repeats > 1:
            print(f"\nover the {repeats} rounds: median (min-max) of the ratios")
            for label, values in figures.items():
                print(f"{label:<48} {statistics.median(values):5.2f} ({min(values):.2f}-{max(values):.2f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    parser.add_argument("--repeat", type=int, default=1, help="measure everything this many times, for the spread")
    options = parser.parse_args()
    sys.setswitchinterval(THREAD_SWITCH_INTERVAL)  # as `mcp-subagents serve` runs
    anyio.run(main, SMOKE if options.smoke else FULL, options.repeat)
