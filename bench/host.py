"""Our server inside a real Claude Code (`claude -p`, 2.1.328 as .ci/run installs it), each figure measured in this
one run: whether Claude Code's first model request already lists our Task, idle and under load; `claude -p` with one
Task against the same work done by Claude Code's own Agent tool; and our server configured but unused against not
configured.

    python bench/host.py          # about ten minutes: 5 runs per load, 5 pairs of each kind
    python bench/host.py --smoke  # CI: one run of each kind, under a minute

Claude Code runs with a scratch HOME and the fake Messages API (bench/fake_api.py, script `host`, in a process of
its own) as its provider, and so does our server (`python -m mcp_subagents serve` over stdio, as a host config
starts it). The person's warm server (`cli.warm_server`) is started before the measured runs, as any earlier start
on the machine would have left it; a run's CPU includes what the warm server spent on it (its own CPU and its forked
server's, read from /proc before and after). The same pairs are then run cold (`--no-warm`). Every `claude -p` runs
under bench/whole_run.py, which times the process and adds up the CPU of it and all it started. Skipped, with the
reason, when Claude Code is not installed. Only 127.0.0.1 is touched.
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
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import Process

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_api import HOST_AGENT, HOST_TASK, HOST_TEXT, MAIN_DONE, OUR_TASK, is_main_request
from harness import BENCH_KEY, ROOT, fake_api

from mcp_subagents.cli.warm_wire import code_key, warm_address

Json = dict[str, Any]

CLAUDE = Path(os.environ.get("MCP_SUBAGENTS_CLAUDE") or ROOT / ".ci-node" / "node_modules" / ".bin" / "claude")
WHOLE_RUN = ROOT / "bench" / "whole_run.py"
STDIO_TIMER = ROOT / "bench" / "stdio_timer.py"
NULL_SERVER = ROOT / "bench" / "null_server.py"
NULL = Path("null server")
"""In place of a state directory: the do-nothing server (bench/null_server.py) configured instead of ours."""
RUN_TIMEOUT_S = 240
STILL_CONNECTING = "MCP servers are still connecting"
"""Claude Code's note, in the first request, on servers whose tools it did not wait for."""
CONNECTED = re.compile(r'MCP server "subagents": Successfully connected \(transport: stdio\) in (\d+)ms')
NULL_CONNECTED = 'MCP server "nothing": Successfully connected'
STARTING = re.compile(r'^(\S+) \[DEBUG\] MCP server "subagents": Starting connection', re.MULTILINE)
FIRST_REQUEST = re.compile(r"^(\S+) \[DEBUG\] \[API REQUEST\] /v1/messages", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Plan:
    listing_runs: int
    """`claude -p` runs per load, for the first-request figure."""
    busy_loops: tuple[int, ...]
    """The loads: how many `while True: pass` processes run beside Claude Code."""
    pairs: int
    """Alternated pairs for each `claude -p` ratio."""
    relay_runs: int
    """Runs through bench/stdio_timer.py, for the spawn to tools/list time."""


FULL = Plan(listing_runs=5, busy_loops=(0, 2, 10), pairs=5, relay_runs=3)
SMOKE = Plan(listing_runs=1, busy_loops=(0,), pairs=1, relay_runs=1)


# ---- what the first request says ------------------------------------------------------------------------------------


def task_listing(body: Json) -> str:
    """How a request of Claude Code's main conversation offers our Task: `listed` (in `tools`, callable),
    `deferred` (named for ToolSearch only), `connecting` (Claude Code did not wait for our server: its note names
    it among the servers still connecting), or `absent`."""
    for tool in body.get("tools", []):
        if tool.get("name") == OUR_TASK:
            return "deferred" if tool.get("defer_loading") else "listed"
    words = "\n".join(_texts(body.get("system"))) + "\n" + "\n".join(_texts(body.get("messages")))
    if "subagents" in still_connecting(words):
        return "connecting"
    return "deferred" if re.search(rf"\b{OUR_TASK}\b", words) else "absent"


def still_connecting(words: str) -> list[str]:
    """The servers Claude Code's note lists as still connecting: the lines after the note, to the first blank."""
    note = words.find(STILL_CONNECTING)
    if note < 0:
        return []
    listed = words[words.index(":", note) + 1 :].lstrip("\n").split("\n\n", 1)[0]
    return [line.strip() for line in listed.splitlines() if line.strip()]


def _texts(part: Any) -> list[str]:
    """Every text block (or string) in a system prompt, a message list or a message's content."""
    if isinstance(part, str):
        return [part]
    if isinstance(part, list):
        return [text for item in cast(list[Any], part) for text in _texts(item)]
    if isinstance(part, dict):
        item = cast(Json, part)
        return _texts(item.get("text")) + _texts(item.get("content"))
    return []


def first_main_request(requests: Sequence[Json]) -> Json | None:
    return next((body for body in requests if is_main_request(body)), None)


def tool_calls(requests: Sequence[Json]) -> list[str]:
    """The tools Claude Code's main model called, in order (its requests grow by one tool turn each)."""
    main = [body for body in requests if is_main_request(body)]
    if not main:
        return []
    return [
        block["name"]
        for message in main[-1]["messages"]
        if message["role"] == "assistant" and not isinstance(message["content"], str)
        for block in message["content"]
        if block.get("type") == "tool_use"
    ]


# ---- one `claude -p` ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    wall_s: float
    cpu_s: float
    """Claude Code and everything it started (our server, its subagents' tools), until the last of it ended."""
    result: str
    requests: list[Json]
    connect_ms: float | None
    """Spawn to connected, as Claude Code's debug log says (None: not connected before Claude Code was done)."""
    request_after_ms: float | None
    """From our server's spawn to Claude Code's first model request, by the debug log's timestamps."""
    load: str
    null_connected: bool = False
    """The do-nothing server, when it was configured, connected (Claude Code's debug log)."""

    @property
    def listing(self) -> str:
        body = first_main_request(self.requests)
        return "no request" if body is None else task_listing(body)


def debug_log_figures(log: str) -> tuple[float | None, float | None]:
    """From Claude Code's debug log: our server's spawn to connected, and to Claude Code's first model request."""
    connected, starting, request = CONNECTED.search(log), STARTING.search(log), FIRST_REQUEST.search(log)
    request_after_ms = None
    if starting and request:
        elapsed = datetime.fromisoformat(request.group(1)) - datetime.fromisoformat(starting.group(1))
        request_after_ms = elapsed.total_seconds() * 1000
    return (float(connected.group(1)) if connected else None), request_after_ms


def machine_load() -> str:
    """The 1-minute load average, and the processes runnable at this moment (/proc/loadavg)."""
    fields = Path("/proc/loadavg").read_text().split()
    return f"load {fields[0]}, {fields[3].split('/')[0]} runnable"


def autogroups() -> bool:
    """Whether the kernel shares the CPU between sessions first, then between the processes of each."""
    switch = Path("/proc/sys/kernel/sched_autogroup_enabled")
    return switch.exists() and switch.read_text().strip() == "1"


@dataclass(eq=False)
class Host:
    """A scratch HOME with a trusted project, and the fake API (which appends every request to `log`)."""

    root: Path
    url: str
    log: Path
    runs: int = 0
    home: Path = field(init=False)
    project: Path = field(init=False)
    notes: Path = field(init=False)
    warm_state: Path = field(init=False)

    def __post_init__(self) -> None:
        self.home, self.project, self.warm_state = self.root / "home", self.root / "project", self.root / "state"
        for folder in (self.home / ".claude", self.project, self.warm_state):
            folder.mkdir(parents=True, exist_ok=True)
        self.notes = self.project / "notes.txt"
        self.notes.write_text("hello\n", encoding="utf-8")
        trusted = {"hasCompletedOnboarding": True, "projects": {str(self.project): {"hasTrustDialogAccepted": True}}}
        (self.home / ".claude.json").write_text(json.dumps(trusted), encoding="utf-8")

    def configure(self, state: Path | None, relay_log: Path | None, *, cold: bool = False) -> None:
        """Our server over stdio with `state` as its state directory, or no server at all (state None), where
        `claude mcp add` puts it by default: the project's entry in ~/.claude.json. (A server given with
        `--mcp-config` instead is waited for before the first request; one in the config files is not.)"""
        servers: Json = {}
        if state == NULL:
            servers["nothing"] = {"type": "stdio", "command": sys.executable, "args": [str(NULL_SERVER)], "env": {}}
        elif state is not None:
            command = [sys.executable, "-m", "mcp_subagents", "serve", *(["--no-warm"] if cold else [])]
            if relay_log is not None:
                command = [sys.executable, str(STDIO_TIMER), str(relay_log), *command]
            env = {
                "HOME": str(self.home),
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "MCP_SUBAGENTS_STATE_DIR": str(state),
                "ANTHROPIC_API_KEY": BENCH_KEY,
                "ANTHROPIC_BASE_URL": self.url,
            }
            servers["subagents"] = {"type": "stdio", "command": command[0], "args": command[1:], "env": env}
        user_config = self.home / ".claude.json"
        settings: Json = json.loads(user_config.read_text(encoding="utf-8"))
        settings["projects"][str(self.project)].update(hasTrustDialogAccepted=True, mcpServers=servers)
        user_config.write_text(json.dumps(settings), encoding="utf-8")

    def environment(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": BENCH_KEY,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }

    async def run(self, marker: str, *, state: Path | None, relay_log: Path | None = None, cold: bool = False) -> Run:
        """One `claude -p` whose main model does what `marker` says (fake_api.py), our server configured with
        `state` as its state directory, or not configured (None), or the do-nothing server instead (NULL); `cold`:
        a server of its own (`--no-warm`)."""
        self.runs += 1
        self.configure(state, relay_log, cold=cold)
        warm_before = warm_server_cpu()
        debug = self.root / f"debug-{self.runs}.log"
        measured, output = self.root / f"measured-{self.runs}.json", self.root / f"output-{self.runs}.json"
        prompt = f"{marker}: delegate this; the notes file: {self.notes}"
        claude = [str(CLAUDE), "-p", prompt, "--allowedTools", f"{OUR_TASK},Read", "--output-format", "json"]
        claude += ["--debug-file", str(debug)]
        measuring = [sys.executable, str(WHOLE_RUN), str(measured), *claude]
        await whole_run(measuring, self.project, self.environment(), output)
        figures: Json = json.loads(measured.read_text(encoding="utf-8"))
        if figures["returncode"] != 0:
            raise SystemExit(f"claude -p failed ({figures}):\n{output.read_text(encoding='utf-8')[-3000:]}")
        log = debug.read_text(encoding="utf-8") if debug.exists() else ""
        connect_ms, request_after_ms = debug_log_figures(log)
        await warm_servers_idle()
        return Run(
            wall_s=figures["wall_s"],
            cpu_s=figures["cpu_s"] + warm_server_cpu() - warm_before,
            result=str(json.loads(output.read_text(encoding="utf-8")).get("result", "")),
            requests=self.take_requests(),
            connect_ms=connect_ms,
            request_after_ms=request_after_ms,
            load=machine_load(),
            null_connected=NULL_CONNECTED in log,
        )

    def take_requests(self) -> list[Json]:
        """The request bodies the fake received since the last call (the runs are one after the other)."""
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        self.log.write_text("", encoding="utf-8")
        return [json.loads(line) for line in lines]

    def fresh_state(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="state-", dir=self.root))


async def whole_run(command: list[str], cwd: Path, env: dict[str, str], output: Path) -> None:
    """`command` (bench/whole_run.py, which makes itself a process group) with its output (stdout and stderr) in
    `output`; all of the group is killed if it outlasts RUN_TIMEOUT_S."""
    with output.open("wb") as sink:
        process = await anyio.open_process(
            command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink
        )
        try:
            with anyio.fail_after(RUN_TIMEOUT_S):
                await process.wait()
        finally:
            if process.returncode is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:  # not yet a group of its own
                    process.kill()
                with anyio.CancelScope(shield=True):
                    await process.wait()


# ---- the warm server ------------------------------------------------------------------------------------------------

WARM_SERVER_MODULE = "mcp_subagents.cli.warm_server"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def warm_servers() -> list[int]:
    """The warm servers of this code on this machine: the one the bench starts, not those other people's work
    started beside it (same user, another checkout or a test's folder), whose CPU is none of a run's."""
    key = code_key().encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                words = (entry / "cmdline").read_bytes().split(b"\0")
                if WARM_SERVER_MODULE.encode() in words and key in words:
                    found.append(int(entry.name))
    return found


def warm_server_cpu() -> float:
    """User + system CPU seconds of the warm servers and of the servers they forked and reaped (/proc's utime,
    stime, cutime and cstime): what a run spent there, by difference, is part of the run's CPU."""
    total = 0
    for pid in warm_servers():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15])
    return total / _CLOCK_TICKS


async def warm_servers_idle() -> None:
    """Wait (at most 10 s) until the servers the warm servers forked have ended and been reaped, so their CPU
    is in the warm servers' figures."""
    with anyio.move_on_after(10):
        while True:
            if not any(_children(pid) for pid in warm_servers()):
                return
            await anyio.sleep(0.02)


def _children(pid: int) -> list[str]:
    try:
        return [
            child for task in Path(f"/proc/{pid}/task").iterdir() for child in (task / "children").read_text().split()
        ]
    except OSError:
        return []


async def start_warm_server(host: Host) -> None:
    """Start the warm server as a person's first start would, outside bench/whole_run.py (a subreaper, which
    would adopt it and end it with the run): one server start with our settings whose stdin closes at once."""
    host.configure(host.warm_state, None)
    environment = {**host.environment(), "MCP_SUBAGENTS_STATE_DIR": str(host.warm_state)}
    command = [sys.executable, "-m", "mcp_subagents", "serve"]
    process = await anyio.open_process(command, env=environment, stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    async with process:  # stdin and stdout pipes, as a host's: an empty stdin ends that first server at once
        assert process.stdin is not None
        await process.stdin.aclose()
        await process.wait()
    with anyio.fail_after(60):
        while True:
            if warm_servers() and _serving(environment):
                return
            await anyio.sleep(0.05)


def _serving(environment: dict[str, str]) -> bool:
    """The warm server for this code listens (it preloads first): its log says so."""
    address = warm_address(environment)
    if address is None:
        raise SystemExit(f"no private folder for the warm server: {environment}")
    with contextlib.suppress(OSError):
        return "serving on" in Path(address.log_path).read_text(encoding="utf-8", errors="replace")
    return False


BUSY_LOOP = [sys.executable, "-c", "while True: pass"]


@dataclass(eq=False)
class BusyLoops:
    """Processes that each keep a core busy. Another engineer's clean-up may end them: `keep_up` starts again
    those that ended, and counts them."""

    loops: list[Process]
    restarted: int = 0

    async def keep_up(self) -> None:
        for number, loop in enumerate(self.loops):
            if loop.returncode is not None:
                self.loops[number] = await anyio.open_process(BUSY_LOOP)
                self.restarted += 1


@asynccontextmanager
async def busy_loops(count: int) -> AsyncGenerator[BusyLoops]:
    """`count` busy loops, until this block ends."""
    load = BusyLoops([await anyio.open_process(BUSY_LOOP) for _ in range(count)])
    try:
        yield load
    finally:
        for loop in load.loops:
            with contextlib.suppress(ProcessLookupError):
                loop.kill()
            with anyio.CancelScope(shield=True):
                await loop.wait()


# ---- the figures ----------------------------------------------------------------------------------------------------


def _load_name(loops: int) -> str:
    return {0: "idle (no load of ours)", 2: "two busy loops"}.get(loops, f"{loops} busy loops")


async def first_request_figure(host: Host, plan: Plan) -> dict[int, list[float]]:
    """Figure 1: runs whose first model request lists our Task, per load; even runs with the warm state
    directory, odd ones with a fresh one. The main model then calls the Task (after ToolSearch when it was not
    listed). Returns Claude Code's connect times per load, for figure 4."""
    connect: dict[int, list[float]] = {}
    for loops in plan.busy_loops:
        outcomes: list[tuple[str, Run]] = []
        async with busy_loops(loops) as load:
            for number in range(plan.listing_runs):
                kind = "warm" if number % 2 == 0 else "fresh"
                state = host.warm_state if kind == "warm" else host.fresh_state()
                await load.keep_up()
                outcomes.append((kind, await host.run(HOST_TASK, state=state)))
        listed = sum(1 for _, run in outcomes if run.listing == "listed")
        name = _load_name(loops)
        print(f"first request lists {OUR_TASK}, {name}: {listed} of {len(outcomes)}   ({_by_kind(outcomes)})")
        for kind, run in outcomes:
            searched = tool_calls(run.requests).count("ToolSearch")
            outcome = "then the Task ran" if run.result == MAIN_DONE else "the Task never ran"
            connected = "never connected" if run.connect_ms is None else f"connected in {run.connect_ms:.0f} ms"
            sent = "" if run.request_after_ms is None else f", first request after {run.request_after_ms:.0f} ms"
            print(f"    {kind:5} {run.listing:10} ToolSearch x{searched}, {outcome}; {connected}{sent}; ", end="")
            print(f"whole run {run.wall_s:.1f} s; {run.load}")
        if load.restarted:
            print(f"  ({load.restarted} busy loops ended by something else were started again between runs)")
        connect[loops] = [run.connect_ms for _, run in outcomes if run.connect_ms is not None]
        print(f"  Claude Code's connect time for our server, {name}: {_spread(connect[loops])}")
    return connect


def _by_kind(outcomes: Sequence[tuple[str, Run]]) -> str:
    """How many of the warm and of the fresh state directory's runs were listed."""
    counts: list[str] = []
    for kind in ("warm", "fresh"):
        runs = [run for k, run in outcomes if k == kind]
        if runs:
            counts.append(f"{kind} {sum(1 for run in runs if run.listing == 'listed')} of {len(runs)}")
    return ", ".join(counts)


def _spread(values: Sequence[float], unit: str = "ms", digits: int = 0) -> str:
    if not values:
        return "none measured"
    median, low, high = statistics.median(values), min(values), max(values)
    return f"median {median:.{digits}f} {unit} ({low:.{digits}f}-{high:.{digits}f}, {len(values)} runs)"


@dataclass(frozen=True, slots=True)
class Pairs:
    ours: list[Run]
    theirs: list[Run]

    def ratios(self, figure: str) -> list[float]:
        return [getattr(a, figure) / getattr(b, figure) for a, b in zip(self.ours, self.theirs, strict=True)]

    def line(self, figure: str) -> str:
        ours, theirs = (statistics.median(getattr(run, figure) for run in runs) for runs in (self.ours, self.theirs))
        each = ", ".join(f"{ratio:.2f}" for ratio in self.ratios(figure))
        name = "wall" if figure == "wall_s" else "CPU"
        return (
            f"{name} {statistics.median(self.ratios(figure)):.2f}  ({ours:.2f} s against {theirs:.2f} s, "
            f"+{ours - theirs:.2f} s; each pair: {each})"
        )


async def alternated(host: Host, pairs: int, ours: tuple[str, Path | None], theirs: tuple[str, Path | None]) -> Pairs:
    """`pairs` runs of each, alternating which goes first."""
    mine: list[Run] = []
    other: list[Run] = []
    for number in range(pairs):
        order = [(ours, mine), (theirs, other)]
        for (marker, state), into in order if number % 2 == 0 else reversed(order):
            into.append(await host.run(marker, state=state))
    return Pairs(mine, other)


def _check_delegated(runs: Sequence[Run], tool: str) -> None:
    for run in runs:
        called = tool_calls(run.requests)
        if run.result != MAIN_DONE or tool not in called:
            raise SystemExit(f"a run did not delegate through {tool}: result {run.result!r}, tools called {called}")


async def task_against_agent(host: Host, plan: Plan) -> list[float]:
    """Figure 2: one Task of ours against Claude Code's own Agent doing the same work (one Read, then the same
    answer); the Agent runs without our server configured, as a person compares it. Returns Claude Code's connect
    times, for figure 4."""
    pairs = await alternated(host, plan.pairs, (HOST_TASK, host.warm_state), (HOST_AGENT, None))
    _check_delegated(pairs.ours, OUR_TASK)
    _check_delegated(pairs.theirs, "Agent")
    print(f"claude -p with one Task / with Claude Code's native Agent (no server configured), {plan.pairs} pairs:")
    print(f"  {pairs.line('wall_s')}")
    print(f"  {pairs.line('cpu_s')}")
    searched = [tool_calls(run.requests).count("ToolSearch") for run in pairs.ours]
    print(f"  ToolSearch calls before the Task, each run: {searched}; {', '.join(run.load for run in pairs.ours)}")
    return [run.connect_ms for run in pairs.ours if run.connect_ms is not None]


async def cold_task_against_agent(host: Host, plan: Plan) -> None:
    """Figure 2 without the warm server (`--no-warm`): what every start cost before it, and what a first start
    on a machine still costs."""
    mine: list[Run] = []
    other: list[Run] = []
    for number in range(plan.pairs):
        ours = (mine, HOST_TASK, host.warm_state, True)
        theirs = (other, HOST_AGENT, None, False)
        for into, marker, state, cold in (ours, theirs) if number % 2 == 0 else (theirs, ours):
            into.append(await host.run(marker, state=state, cold=cold))
    pairs = Pairs(mine, other)
    _check_delegated(pairs.ours, OUR_TASK)
    print(f"the same, our server cold (--no-warm: a server of its own, as every start was before), {plan.pairs} pairs:")
    print(f"  {pairs.line('wall_s')}")
    print(f"  {pairs.line('cpu_s')}")


async def configured_against_not(host: Host, plan: Plan) -> None:
    """Figure 3: our server configured but never called, against no server; the main model answers at once. The
    do-nothing server (bench/null_server.py) configured instead, in the same rotation, is the floor: what any
    one more server costs Claude Code."""
    kinds: list[tuple[str, Path | None]] = [("ours", host.warm_state), ("none", None), ("null", NULL)]
    runs: dict[str, list[Run]] = {name: [] for name, _ in kinds}
    for number in range(plan.pairs):
        rotated = kinds[number % 3 :] + kinds[: number % 3]
        for name, state in rotated:
            runs[name].append(await host.run(HOST_TEXT, state=state))
    ours, floor = Pairs(runs["ours"], runs["none"]), Pairs(runs["null"], runs["none"])
    print(f"claude -p with our server configured but unused / without it, {plan.pairs} runs of each:")
    print(f"  {ours.line('wall_s')}")
    print(f"  {ours.line('cpu_s')}")
    connected = sum(1 for run in ours.ours if run.connect_ms is not None)
    print(f"  our server connected before Claude Code was done in {connected} of {plan.pairs} runs")
    print(f"  {', '.join(run.load for run in ours.ours)}")
    print("the floor: a do-nothing server (bench/null_server.py, json and sys only) configured instead / without:")
    print(f"  {floor.line('wall_s')}")
    print(f"  {floor.line('cpu_s')}")
    connected = sum(1 for run in floor.ours if run.null_connected)
    print(f"  the do-nothing server connected before Claude Code was done in {connected} of {plan.pairs} runs")
    beside = Pairs(runs["ours"], runs["null"])
    print(f"  ours / the do-nothing server: {beside.line('wall_s')}; {beside.line('cpu_s')}")


async def relay_runs(host: Host, plan: Plan) -> list[Json]:
    """Task runs with bench/stdio_timer.py between Claude Code and our server (warm state directory, no load of
    ours): the server's spawn to its first answer and to its tools/list answer, for figure 4."""
    relay_log = host.root / "relay.jsonl"
    for _ in range(plan.relay_runs):
        await host.run(HOST_TASK, state=host.warm_state, relay_log=relay_log)
    lines = relay_log.read_text(encoding="utf-8").splitlines() if relay_log.exists() else []
    return [json.loads(line) for line in lines]


def spawn_to_tools_list(relayed: list[Json], connect: list[float]) -> None:
    """Figure 4: our server's spawn to its answers as Claude Code saw them."""
    print("our server, spawn to its answers as Claude Code saw them, no load of ours:")
    print(f"  spawn to connected (Claude Code's debug log, the Task runs above): {_spread(connect)}")
    first = [entry["first_answer_s"] * 1000 for entry in relayed]
    tools = [entry["tools_list_s"] * 1000 for entry in relayed]
    print(f"  through a relay: spawn to the first answer {_spread(first)}; to the tools/list answer {_spread(tools)}")


async def main(plan: Plan) -> None:
    version = (await anyio.run_process([str(CLAUDE), "--version"], check=False)).stdout.decode().strip()
    print(f"Claude Code {version} at {CLAUDE}; at the start: {machine_load()}, {os.cpu_count()} cores")
    if autogroups():
        print("  autogroup scheduling is on: the busy loops run in this session, the way work started from the same")
        print("  terminal competes with Claude Code; other sessions' load gets one share of the CPU per session")
    with tempfile.TemporaryDirectory(prefix="mcp-subagents-host-") as tmp:
        log = Path(tmp) / "requests.jsonl"
        async with fake_api("host", 0.0, log=log) as url:
            host = Host(Path(tmp), url, log)
            await host.run(HOST_TASK, state=host.warm_state, cold=True)  # warm-up: disk caches, .pyc, state dir
            await host.run(HOST_AGENT, state=None)
            await start_warm_server(host)
            idle_connect = await task_against_agent(host, plan)
            await configured_against_not(host, plan)
            await cold_task_against_agent(host, plan)
            relayed = await relay_runs(host, plan)
            by_load = await first_request_figure(host, plan)  # the loaded runs last: others' figures stay clean
            spawn_to_tools_list(relayed, idle_connect + by_load.get(0, []))
    print(f"at the end: {machine_load()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="one run of each kind, for CI")
    smoke = parser.parse_args().smoke
    if not CLAUDE.is_file():
        print(f"skipped: Claude Code is not installed at {CLAUDE} (.ci/run installs it; or set MCP_SUBAGENTS_CLAUDE)")
        sys.exit(0)
    anyio.run(main, SMOKE if smoke else FULL)
