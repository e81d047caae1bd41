"""Big catalogs: cold start and tools/list with 2000 agent files against 10, each figure measured in this one run.

    python bench/catalog.py            # 2000 agent files, 7 spawns each way
    python bench/catalog.py --smoke    # 200 agent files, 2 spawns each way (CI)

The agent files are real ones (the corpus in ../shared/corpus, or the built-in agents when it is absent), copied
under new names into the project's `.claude/agents`. Only 127.0.0.1 is touched; no Task runs.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT, server_environment, stdio_server

CORPUS = ROOT.parent / "shared" / "corpus"
SMALL = 10


@dataclass(frozen=True, slots=True)
class Plan:
    big: int
    spawns: int
    lists: int
    """tools/list calls timed per server."""


FULL = Plan(big=2000, spawns=7, lists=50)
SMOKE = Plan(big=200, spawns=2, lists=5)


def agent_texts() -> list[str]:
    found = sorted(CORPUS.rglob("*.md")) or sorted((ROOT / "agents").glob("*.md"))
    return [path.read_text(encoding="utf-8") for path in found]


def write_agents(folder: Path, count: int, texts: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        name = f"agent-{number:04d}"
        text = re.sub(r"^name:.*$", f"name: {name}", texts[number % len(texts)], count=1, flags=re.MULTILINE)
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def project(root: Path, count: int, texts: list[str]) -> dict[str, str]:
    env = server_environment(root)
    write_agents(Path(env["MCP_SUBAGENTS_CWD"]) / ".claude" / "agents", count, texts)
    return env


async def time_to_tools_list(env: dict[str, str]) -> tuple[float, int]:
    """Seconds from spawn to the tools/list answer, and how many agents it listed."""
    started = time.perf_counter()
    async with stdio_server(env) as server:
        listed = await server.request("tools/list")
        elapsed = time.perf_counter() - started
    enum = listed["tools"][0]["inputSchema"]["properties"]["subagent_type"]["enum"]
    return elapsed, len(enum)


async def tools_list_ms(env: dict[str, str], calls: int) -> tuple[float, float]:
    """Median wall time of a tools/list call on a warm server, and the server's CPU per call."""
    async with stdio_server(env) as server:
        await server.request("tools/list")
        times: list[float] = []
        cpu = server.cpu_seconds()
        for _ in range(calls):
            started = time.perf_counter()
            await server.request("tools/list")
            times.append(time.perf_counter() - started)
        cpu = server.cpu_seconds() - cpu
    return statistics.median(times) * 1000, cpu / calls * 1000


def _fresh_state(env: dict[str, str]) -> None:
    shutil.rmtree(env["MCP_SUBAGENTS_STATE_DIR"], ignore_errors=True)


async def main(plan: Plan) -> None:
    texts = agent_texts()
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-catalog-") as tmp:
        small = project(Path(tmp) / "small", SMALL, texts)
        big = project(Path(tmp) / "big", plan.big, texts)
        # Warm-up (disk cache, .pyc files), and a check that every agent is listed.
        for env, count in ((small, SMALL), (big, plan.big)):
            _, listed = await time_to_tools_list(env)
            if listed < count:
                raise SystemExit(f"only {listed} of {count} agents were listed")
        later: dict[int, list[float]] = {SMALL: [], plan.big: []}
        first: dict[int, list[float]] = {SMALL: [], plan.big: []}
        for _ in range(plan.spawns):
            for env, count in ((small, SMALL), (big, plan.big)):  # alternating: machine load hits both alike
                later[count].append((await time_to_tools_list(env))[0])
                _fresh_state(env)  # as on the very first start: nothing kept from an earlier run
                first[count].append((await time_to_tools_list(env))[0])
        list_small = await tools_list_ms(small, plan.lists)
        list_big = await tools_list_ms(big, plan.lists)

    def ratio(runs: dict[int, list[float]]) -> str:
        a, b = statistics.median(runs[plan.big]), statistics.median(runs[SMALL])
        return f"{a / b:.2f}   ({plan.big}: {a * 1000:.0f} ms, {SMALL}: {b * 1000:.0f} ms; median of {plan.spawns})"

    print(f"cold start to tools/list, {plan.big} agent files / {SMALL}   ratio {ratio(later)}")
    print(f"  the same, first start (nothing in the state dir)   ratio {ratio(first)}")
    print(
        f"tools/list on a warm server, {plan.big} / {SMALL}          ratio {list_big[0] / list_small[0]:.2f}   "
        f"({list_big[0]:.1f} ms vs {list_small[0]:.1f} ms; server CPU {list_big[1]:.1f} vs {list_small[1]:.1f} ms)"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    anyio.run(main, SMOKE if parser.parse_args().smoke else FULL)
