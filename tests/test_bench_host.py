"""bench/host.py reads Claude Code's first model request right: our Task listed, only named for ToolSearch, or our
server named among those still connecting (Claude Code 2.1.328's words, from a run under load)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

BENCH = Path(__file__).resolve().parent.parent / "bench"

NOTE = (
    "The following deferred tools are now available via ToolSearch. ...:\nCronCreate\nWebSearch\n{deferred}\n"
    "The following MCP servers are still connecting — their tools (typically named mcp__<server>__*) are not yet "
    "available but will appear shortly:\n{connecting}\n\nIf the user's request might be served by one of these "
    "servers (even if they didn't name it explicitly), call ToolSearch with a relevant keyword.\n\n"
    "Available agent types for the Agent tool:\n- general-purpose: ..."
)


def bench_host() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_host", BENCH / "host.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look their module up
    path = list(sys.path)
    try:
        spec.loader.exec_module(module)  # puts bench/ on sys.path for its own imports
    finally:
        sys.path[:] = path
    return module


def first_request(tools: list[dict[str, Any]], environment: str) -> dict[str, Any]:
    """A main-conversation request as Claude Code 2.1.328 sends it: the environment is a system message."""
    return {
        "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328; cc_entrypoint=sdk-cli;"}],
        "tools": [{"name": "Agent"}, {"name": "ToolSearch"}, *tools],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "HOST-TASK: delegate this"}]},
            {"role": "system", "content": [{"type": "text", "text": environment}]},
        ],
    }


def test_the_first_request_is_read_as_listing_our_task_or_not() -> None:
    host = bench_host()
    plain = NOTE.split("The following MCP")[0]
    listed = first_request([{"name": "mcp__subagents__Task"}], plain + "mcp__subagents__TaskOutput\n")
    deferred = first_request([{"name": "mcp__subagents__Task", "defer_loading": True}], plain)
    named = first_request([], plain + "mcp__subagents__Task\n")
    connecting = first_request([], NOTE.format(deferred="", connecting="subagents"))
    others_connecting = first_request([], NOTE.format(deferred="mcp__subagents__TaskOutput", connecting="files"))

    assert host.task_listing(listed) == "listed"
    assert host.task_listing(deferred) == "deferred"
    assert host.task_listing(named) == "deferred"
    assert host.task_listing(connecting) == "connecting"
    # Our TaskOutput among the deferred tools is not our Task; another server still connecting is not ours.
    assert host.task_listing(others_connecting) == "absent"
    assert host.still_connecting(NOTE.format(deferred="", connecting="files\nsubagents")) == ["files", "subagents"]
