"""Big catalogs: cold start and tools/list with 2000 agent files against 10, each figure measured in this one run.

    python bench/catalog.py               # 2000 agent files, 7 rounds of spawns
    python bench/catalog.py --files 5000  # another count of agent files
    python bench/catalog.py --smoke       # 50 agent files, 1 round (CI)

Three ways a server starts, each for the big and the small count, alternating within every round so the machine's
load hits both alike: a project whose state directory kept its last run; two projects started in turn with ONE
state directory (as the default one is shared by all of a person's projects); and the very first start, with the
state directory removed before it, where the wall time and the CPU of the server and its prescan are taken.

The agent files are real ones (the corpus in ../shared/corpus, or the built-in agents when it is absent), copied
under new names into the project's `.claude/agents`. Only 127.0.0.1 is touched; no Task runs.
"""

from __future__ import annotations

import argparse
import os
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
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Plan:
    big: int
    rounds: int
    lists: int
    """tools/list calls timed per server."""


FULL = Plan(big=2000, rounds=7, lists=50)
SMOKE = Plan(big=50, rounds=1, lists=5)


@dataclass(frozen=True, slots=True)
class Start:
    wall: float
    """Seconds from spawn to the tools/list answer."""
    cpu: float
    """CPU seconds of the server and its children (the prescan) until that answer."""
    children_cpu: float
    """The part of `cpu` that its children took."""
    listed: int


@dataclass(frozen=True, slots=True)
class Projects:
    """The projects of one agent-file count."""

    single: dict[str, str]
    """A project with a state directory of its own."""
    pair: tuple[dict[str, str], dict[str, str]]
    """Two projects (other folders, the same files) sharing one state directory."""


def agent_texts() -> list[str]:
    found = sorted(CORPUS.rglob("*.md")) or sorted((ROOT / "agents").glob("*.md"))
    return [path.read_text(encoding="utf-8") for path in found]


def write_agents(folder: Path, count: int, texts: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        name = f"agent-{number:04d}"
        text = re.sub(r"^name:.*$", f"name: {name}", texts[number % len(texts)], count=1, flags=re.MULTILINE)
        (folder / f"{name}.md").write_text(text, encoding="utf-8")


def project(home: Path, name: str, count: int, texts: list[str], state: Path) -> dict[str, str]:
    env = server_environment(home)
    work = home / name
    write_agents(work / ".claude" / "agents", count, texts)
    return env | {"MCP_SUBAGENTS_CWD": str(work), "MCP_SUBAGENTS_STATE_DIR": str(state)}


def projects(root: Path, count: int, texts: list[str]) -> Projects:
    home = root / f"home-{count}"
    single = project(home, "single", count, texts, home / "state-single")
    shared = home / "state-shared"
    return Projects(single, (project(home, "a", count, texts, shared), project(home, "b", count, texts, shared)))


def cpu_with_children(pid: int) -> tuple[float, float]:
    """User + system CPU of a running process, and that of its children: those it has waited for (cutime, cstime)
    and those still running, with theirs."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    # After the command name: utime, stime, cutime, cstime are fields 14-17 of stat(5).
    own = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    children = (int(fields[13]) + int(fields[14])) / _CLOCK_TICKS
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            running = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
        except OSError:
            continue
        for child in running:
            try:
                children += sum(cpu_with_children(int(child)))
            except OSError:  # it exited meanwhile: counted in cutime once waited for
                continue
    return own, children


async def start(env: dict[str, str]) -> Start:
    """Spawn a server and time it to its tools/list answer."""
    started = time.perf_counter()
    async with stdio_server(env) as server:
        listed = await server.request("tools/list")
        elapsed = time.perf_counter() - started
        own, children = cpu_with_children(server.pid)
    enum = listed["tools"][0]["inputSchema"]["properties"]["subagent_type"]["enum"]
    return Start(elapsed, own + children, children, len(enum))


async def tools_list_ms(env: dict[str, str], calls: int) -> tuple[float, float]:
    """Median wall time of a tools/list call on a warm server, and the server's CPU per call."""
    async with stdio_server(env) as server:
        await server.request("tools/list")
        await server.settle()  # the warm-up after the first listing (the SDK's import) would count as the calls' CPU
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


Runs = dict[str, dict[int, list[Start]]]


async def one_round(sizes: dict[int, Projects], runs: Runs) -> None:
    for count, group in sizes.items():  # each count in turn: the machine's load hits both alike
        runs["single"][count].append(await start(group.single))
        for env in group.pair:  # A, B, A, B... over the rounds: each finds the other's run in the state directory
            runs["alternating"][count].append(await start(env))
        _fresh_state(group.single)  # as on the very first start: nothing kept from an earlier run
        runs["first"][count].append(await start(group.single))


async def main(plan: Plan) -> None:
    texts = agent_texts()
    runs: Runs = {kind: {SMALL: [], plan.big: []} for kind in ("single", "alternating", "first")}
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-catalog-") as tmp:
        sizes = {SMALL: projects(Path(tmp), SMALL, texts), plan.big: projects(Path(tmp), plan.big, texts)}
        # Warm-up (disk cache, .pyc files, each project's first run), and a check that every agent is listed.
        for count, group in sizes.items():
            for env in (group.single, *group.pair):
                listed = (await start(env)).listed
                if listed < count:
                    raise SystemExit(f"only {listed} of {count} agents were listed")
        for _ in range(plan.rounds):
            await one_round(sizes, runs)
        list_small = await tools_list_ms(sizes[SMALL].single, plan.lists)
        list_big = await tools_list_ms(sizes[plan.big].single, plan.lists)

    report(plan, runs)
    print(
        f"tools/list on a warm server, {plan.big} / {SMALL}          ratio {list_big[0] / list_small[0]:.2f}   "
        f"({list_big[0]:.1f} ms vs {list_small[0]:.1f} ms; server CPU {list_big[1]:.1f} vs {list_small[1]:.1f} ms)"
    )


def ratio(big: list[Start], small: list[Start], *, cpu: bool = False) -> str:
    a = statistics.median(start.cpu if cpu else start.wall for start in big)
    b = statistics.median(start.cpu if cpu else start.wall for start in small)
    return f"{a / b:.2f}   ({a * 1000:.0f} ms against {b * 1000:.0f} ms; medians of {len(big)}, {len(small)})"


def report(plan: Plan, runs: Runs) -> None:
    def both(kind: str, *, cpu: bool = False) -> str:
        return ratio(runs[kind][plan.big], runs[kind][SMALL], cpu=cpu)

    print(f"cold start to tools/list, {plan.big} agent files / {SMALL}, one project   ratio {both('single')}")
    print(f"  two projects alternating in one state directory      ratio {both('alternating')}")
    print(f"  the same, CPU of the server                          ratio {both('alternating', cpu=True)}")
    print(f"  CPU of the server, a project's later start           ratio {both('single', cpu=True)}")
    # The prescan runs only while a core is free, for many files: a run may hold starts of both kinds, whose
    # figures differ (CPU traded for wall time), so each kind is given apart.
    small = runs["first"][SMALL]
    for prescanned in (False, True):
        big = [start for start in runs["first"][plan.big] if (start.children_cpu > 0) == prescanned]
        if big:
            kind = "with a prescan" if prescanned else "parsed by the server"
            print(f"  first start (nothing in the state dir), {kind}:")
            print(f"    wall                                               ratio {ratio(big, small)}")
            print(f"    CPU of the server and its children                 ratio {ratio(big, small, cpu=True)}")
    if any(start.children_cpu > 0 for start in small):
        print(f"  (a prescan ran for the {SMALL}-file project too)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="small counts, for CI")
    parser.add_argument("--files", type=int, help="agent files of the big projects (default 2000)")
    arguments = parser.parse_args()
    chosen = SMOKE if arguments.smoke else FULL
    if arguments.files is not None:
        chosen = Plan(big=arguments.files, rounds=chosen.rounds, lists=chosen.lists)
    anyio.run(main, chosen)
