"""Lifecycle benchmark: many background tasks through the queue, and how fast TaskStop kills a task's processes.

    python bench/lifecycle.py            # 100 tasks x 3 turns, 100 ms model latency, concurrency 10
    python bench/lifecycle.py --smoke    # the same code paths with small counts, for CI

Every figure is measured in this one run. Only 127.0.0.1 is touched: the real Anthropic client talks to the
fake Messages API from tests/fakes.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import in_process_app
from mcp import Client

from mcp_subagents.mcp.server import build_server
from mcp_subagents.runtime.service import Subagents
from tests.fakes.fake_llm import FakeLLM, Turn, text, tool_use, turn

TURNS_PER_TASK = 3


@dataclass(frozen=True)
class Plan:
    tasks: int
    concurrency: int
    latency_s: float
    stops: int


FULL = Plan(tasks=100, concurrency=10, latency_s=0.1, stops=5)
SMOKE = Plan(tasks=20, concurrency=10, latency_s=0.05, stops=2)


def three_turns(body: dict[str, Any]) -> Turn:
    """Two TodoWrite calls, then the answer, whatever task asks."""
    answered = sum(1 for message in body["messages"] if message["role"] == "assistant")
    if answered < TURNS_PER_TASK - 1:
        return turn(tool_use("TodoWrite", {"todos": [{"content": "step", "status": "in_progress"}]}))
    prompt = body["messages"][0]["content"][-1]["text"]  # the prompt is the first message's last block
    return turn(text(f"finished {prompt}"))


def serve_fake(latency_s: float) -> None:
    """Child-process mode: a fake API on its own core, as a real remote API would be; stops when stdin closes."""
    with FakeLLM() as fake:
        fake.latency = latency_s
        fake.default = three_turns
        print(fake.url, flush=True)
        sys.stdin.read()


@asynccontextmanager
async def fake_in_child_process(latency_s: float) -> AsyncGenerator[str]:
    command = [sys.executable, __file__, "--serve-fake", str(latency_s)]
    async with await anyio.open_process(command, stderr=None) as process:
        assert process.stdout is not None and process.stdin is not None
        with anyio.fail_after(30):
            url = (await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 200)).decode()
        yield url
        await process.stdin.aclose()


def text_of(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def task_id_in(text: str) -> str:
    found = re.search(r"task_id: (\w+)", text)
    assert found is not None, text
    return found.group(1)


def lifecycle_app(root: Path, url: str, plan: Plan) -> Subagents:
    # The Bash command reports its host pid through a fifo in /tmp: the sandbox would hide both.
    return in_process_app(root, url, max_concurrent=plan.concurrency, sandbox="off")


async def many_background_tasks(client: Client, plan: Plan) -> tuple[float, int]:
    """Wall time until every task finished, and how many finished with their own correct answer."""
    started = time.perf_counter()
    ids: list[str] = []
    for number in range(plan.tasks):
        launched = await client.call_tool(
            "Task",
            {
                "description": f"job {number}",
                "prompt": f"job {number}",
                "subagent_type": "general-purpose",
                "run_in_background": True,
            },
        )
        ids.append(task_id_in(text_of(launched)))
    correct = 0
    for number, task_id in enumerate(ids):
        while "<status>completed</status>" not in (
            body := text_of(await client.call_tool("TaskOutput", {"task_id": task_id, "timeout": 600000}))
        ):
            assert "<status>running</status>" in body or "<status>queued</status>" in body, body
        correct += f"finished job {number}</task_result>" in body
    return time.perf_counter() - started, correct


async def sdk_baseline(url: str, plan: Plan) -> float:
    """Wall time of the same model requests sent straight through the provider adapter: the floor for our server."""
    from mcp_subagents.core.messages import UserMessage
    from mcp_subagents.models.anthropic import AnthropicModel
    from mcp_subagents.models.base import ModelRequest
    from mcp_subagents.tools import builtin_tools

    model = AnthropicModel(api_key="sk-bench-key", base_url=url, max_retries=0)
    tools = tuple(tool.definition() for tool in builtin_tools().values())
    limiter = anyio.Semaphore(plan.concurrency)

    async def one_task(number: int) -> None:
        async with limiter:
            for _ in range(TURNS_PER_TASK):
                prompt = UserMessage(content=f"job {number}")
                await model.request(
                    ModelRequest(model="claude-sonnet-5-5", system="s", messages=(prompt,), tools=tools)
                )

    await one_task(-1)
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for number in range(plan.tasks):
            group.start_soon(one_task, number)
    await model.aclose()
    return time.perf_counter() - started


async def stop_to_gone(client: Client, fake: FakeLLM, root: Path) -> float:
    """Seconds from calling TaskStop to the task's Bash process having exited."""
    fifo = root / f"pid-{time.monotonic_ns()}"
    os.mkfifo(fifo)
    fake.push(turn(tool_use("Bash", {"command": f"sleep 1000 & echo $! > '{fifo}'; wait"})))
    launched = await client.call_tool(
        "Task",
        {"description": "sleep", "prompt": "sleep", "subagent_type": "general-purpose", "run_in_background": True},
    )
    task_id = task_id_in(text_of(launched))
    with anyio.fail_after(30):
        pid = int(await anyio.to_thread.run_sync(fifo.read_text))
    pidfd = os.pidfd_open(pid)
    try:
        started = time.perf_counter()
        await client.call_tool("TaskStop", {"task_id": task_id})
        with anyio.fail_after(10):
            await anyio.wait_readable(pidfd)  # readable once the process has exited
        return time.perf_counter() - started
    finally:
        os.close(pidfd)


async def main(plan: Plan) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        async with fake_in_child_process(plan.latency_s) as url:
            baseline = await sdk_baseline(url, plan)
            app = lifecycle_app(root / "many", url, plan)
            async with app.running(), Client(build_server(app)) as client:
                await client.call_tool(
                    "Task", {"description": "warm-up", "prompt": "warm-up", "subagent_type": "general-purpose"}
                )  # the one-time SDK import
                wall, correct = await many_background_tasks(client, plan)
        with FakeLLM() as fake:
            app = lifecycle_app(root / "stops", fake.url, plan)
            async with app.running(), Client(build_server(app)) as client:
                stops = [await stop_to_gone(client, fake, root) for _ in range(plan.stops)]
    ideal = plan.tasks / plan.concurrency * TURNS_PER_TASK * plan.latency_s
    print(
        f"{plan.tasks} background tasks x {TURNS_PER_TASK} turns, latency {plan.latency_s * 1000:.0f} ms, "
        f"concurrency {plan.concurrency}"
    )
    print(f"  completed with the right answer   {correct} of {plan.tasks} (lost: {plan.tasks - correct})")
    print(f"  wall time / ideal                 ratio {wall / ideal:.2f}   (wall {wall:.2f} s, ideal {ideal:.2f} s)")
    print(
        f"  wall time / same requests sent    ratio {wall / baseline:.2f}   (adapter alone, no server: "
        f"{baseline:.2f} s)"
    )
    print(
        f"TaskStop to Bash process gone       median {statistics.median(stops) * 1000:.0f} ms "
        f"(max {max(stops) * 1000:.0f} ms, {len(stops)} runs)"
    )
    if correct != plan.tasks:
        raise SystemExit("some tasks were lost or answered wrongly")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    parser.add_argument("--serve-fake", type=float, metavar="LATENCY", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve_fake is not None:
        serve_fake(arguments.serve_fake)
    else:
        anyio.run(main, SMOKE if arguments.smoke else FULL)
