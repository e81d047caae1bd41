"""Server CPU per turn of one long task, early in it and late in it, measured in this one run.

    python bench/turns.py            # nine tasks of 211 TodoWrite turns: turns 191-210 against turns 1-20
    python bench/turns.py --smoke    # one task of 21 turns: turns 16-20 against turns 1-5 (CI)

`mcp-subagents serve` runs as hosts run it (a stdio subprocess, with the real Anthropic adapter), and the fake
Messages API (`fake_api.py`, script `todo:N`) in a process of its own: each turn the model calls TodoWrite, so a
turn costs the server little besides the model request, whose conversation grows by a tool call and its result.
The server reports each turn's start as a progress notification ("turn N of M"); when one arrives this script
reads the server process's CPU clock (all its threads, nanoseconds: `clock_gettime` on the process's CPU-time
clock), so neither this client nor the fake API counts. The fake answers each request after `LATENCY`: the server
has sent the turn's request and waits when the clock is read, so the reading does not depend on how soon this
script gets the CPU on a busy machine. The CPU of turns A-B is the CPU from the start of turn A to the start of
turn B + 1, divided by the turns; turns 1-20 stand for turn 10, turns 191-210 for turn 200.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Json, StdioServer, fake_api, server_environment, stdio_server

TURN = re.compile(r"turn (\d+) of \d+$")
LATENCY = 0.02


@dataclass(frozen=True, slots=True)
class Plan:
    early: tuple[int, int]
    late: tuple[int, int]
    """First and last turn of each window."""
    tasks: int

    @property
    def turns(self) -> int:
        """TodoWrite turns of each task: the late window ends with the last (the answer comes after it)."""
        return self.late[1]


FULL = Plan(early=(1, 20), late=(191, 210), tasks=9)
SMOKE = Plan(early=(1, 5), late=(16, 20), tasks=1)


def window(turns: tuple[int, int]) -> str:
    return f"turns {turns[0]}-{turns[1]}"


def cpu_clock(pid: int) -> int:
    """The clock id of a process's CPU time (what glibc's `clock_getcpuclockid` returns on Linux)."""
    return ((~pid) << 3) | 2


class TurnClock:
    """The server's CPU time at the start of each turn of the task being watched."""

    def __init__(self, pid: int) -> None:
        self._clock = cpu_clock(pid)
        self.at_turn: dict[int, float] = {}

    def __call__(self, message: Json) -> None:
        if message.get("method") != "notifications/progress":
            return
        found = TURN.match(str(message.get("params", {}).get("message", "")))
        if found:
            self.at_turn[int(found.group(1))] = time.clock_gettime(self._clock)

    def per_turn_ms(self, turns: tuple[int, int]) -> float:
        first, last = turns
        return (self.at_turn[last + 1] - self.at_turn[first]) / (last + 1 - first) * 1000


@dataclass(frozen=True, slots=True)
class LongTask:
    early_ms: float
    late_ms: float
    wall_s: float

    @property
    def ratio(self) -> float:
        return self.late_ms / self.early_ms


async def long_task(server: StdioServer, clock: TurnClock, plan: Plan, number: int) -> LongTask:
    clock.at_turn.clear()
    started = time.monotonic()
    arguments = {"description": f"long {number}", "prompt": f"long {number}", "subagent_type": "general-purpose"}
    await server.call_tool("Task", arguments)
    wall = time.monotonic() - started
    early, late = clock.per_turn_ms(plan.early), clock.per_turn_ms(plan.late)
    return LongTask(early_ms=early, late_ms=late, wall_s=wall)


async def main(plan: Plan) -> None:
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-turns-") as tmp:
        home = Path(tmp)
        async with fake_api(f"todo:{plan.turns}", LATENCY) as url:
            args = ("--max-turns", str(plan.turns + 1))
            async with stdio_server(server_environment(home, api_url=url), args=args) as server:
                clock = TurnClock(server.pid)
                server.on_notification = clock
                await server.request("tools/list")
                await long_task(server, clock, plan, 0)  # warm-up: the SDK's first request, the agent's files
                await server.settle()
                tasks = [await long_task(server, clock, plan, number) for number in range(1, plan.tasks + 1)]
    ratios = [task.ratio for task in tasks]
    each = ", ".join(f"{task.ratio:.2f}" for task in tasks)
    print(
        f"server CPU per turn, {window(plan.late)} / {window(plan.early)}   {statistics.median(ratios):5.2f} "
        f"({min(ratios):.2f}-{max(ratios):.2f})   (median of {len(tasks)} tasks of {plan.turns} TodoWrite turns; "
        f"each: {each})"
    )
    print(
        f"... per turn in {window(plan.early)}; in {window(plan.late)}   "
        f"{statistics.median(task.early_ms for task in tasks):.2f} ms; "
        f"{statistics.median(task.late_ms for task in tasks):.2f} ms   "
        f"(wall per task {statistics.median(task.wall_s for task in tasks):.1f} s, {LATENCY * 1000:.0f} ms a response)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    anyio.run(main, SMOKE if parser.parse_args().smoke else FULL)
