"""A 2026-era host's first requests (`server/discover`, `subscriptions/listen`, `resources/list`, `tools/list`)
answered before the server has loaded, from the last start's answers: a real `mcp-subagents serve` subprocess over
its pipes, as Claude Code drives it. What was answered early is checked against the loaded server: a tool list that
changed since is announced on the host's listen stream, and the cache is rewritten."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_subagents.core.state import EARLY_ANSWERS_FILE
from mcp_subagents.serve.early_answers import AnswerCache, params_digest
from tests.stdio_raw import RawStdioServer
from tests.support import server_environment

pytestmark = pytest.mark.anyio

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}},
}
OPENING = [
    {"jsonrpc": "2.0", "id": "probe", "method": "server/discover", "params": {"_meta": META}},
    {
        "jsonrpc": "2.0",
        "id": "listen:0",
        "method": "subscriptions/listen",
        "params": {"_meta": META, "notifications": {"toolsListChanged": True}},
    },
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
]


async def open_like_a_host(environ: dict[str, str]) -> tuple[RawStdioServer, list[dict[str, Any]]]:
    """Start the server and send the opening requests at once, as Claude Code does; read until the tool list."""
    process = await anyio.open_process([sys.executable, "-m", "mcp_subagents", "serve"], env=environ)
    server = RawStdioServer(process)
    for message in OPENING:
        await server.send(message)
    received: list[dict[str, Any]] = []
    with anyio.fail_after(60):
        while not any(message.get("id") == 1 for message in received):
            received.append(await server.next_message())
    return server, received


def task_description(tools_list: dict[str, Any]) -> str:
    return next(tool["description"] for tool in tools_list["result"]["tools"] if tool["name"] == "Task")


async def test_the_second_start_answers_from_the_first_and_tells_the_host_when_the_tools_changed(
    tmp_path: Path,
) -> None:
    environ = server_environment(tmp_path, work=tmp_path / "work")
    cache_file = Path(environ["MCP_SUBAGENTS_STATE_DIR"]) / EARLY_ANSWERS_FILE

    first, received = await open_like_a_host(environ)
    await first.close()
    assert cache_file.stat().st_mode & 0o777 == 0o600
    [answers] = json.loads(cache_file.read_text(encoding="utf-8")).values()
    assert set(answers) == {"server/discover", "subscriptions/listen", "tools/list"}
    real = task_description(received[-1])

    # Make the kept tool list differ from what the server now lists, as an agent file added since would.
    [(key, answers)] = json.loads(cache_file.read_text(encoding="utf-8")).items()
    tools = answers["tools/list"]["result"]["tools"]
    next(tool for tool in tools if tool["name"] == "Task")["description"] = "what the last start listed"
    AnswerCache(cache_file, key).store("tools/list", answers["tools/list"]["params"], answers["tools/list"]["result"])

    second, received = await open_like_a_host(environ)
    with anyio.fail_after(60):
        changed = await second.next_message()
        await second.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}})
        again = await second.next_message()
    await second.close()

    kinds = [message.get("method") or message.get("id") for message in received]
    assert kinds == ["probe", "notifications/subscriptions/acknowledged", 1]  # one acknowledgement, not two
    assert task_description(received[-1]) == "what the last start listed"  # answered before the server loaded
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen:0"
    assert again["id"] == 2 and task_description(again) == real
    [answers] = json.loads(cache_file.read_text(encoding="utf-8")).values()
    assert next(t for t in answers["tools/list"]["result"]["tools"] if t["name"] == "Task")["description"] == real


async def test_a_2025_session_is_the_sdks_from_its_initialize(tmp_path: Path) -> None:
    environ = server_environment(tmp_path, work=tmp_path / "work")
    written: list[bytes] = []
    for _ in range(2):  # the second start has a cache, which a 2025-era session never gets answers from
        server = await RawStdioServer.start(environ)
        listed = await server.request("tools/list", {})
        await server.close()
        written += server.stdout_lines
        assert "Task" in [tool["name"] for tool in listed["tools"]]
    assert all(b'"resultType"' not in line for line in written)  # no 2026-era answer reached it


def test_only_a_private_cache_file_of_this_user_is_believed(tmp_path: Path) -> None:
    cache = AnswerCache(tmp_path / EARLY_ANSWERS_FILE, "key")
    cache.store("tools/list", params_digest({}), {"tools": []})
    assert cache.load()["tools/list"]["result"] == {"tools": []}

    cache.path.chmod(0o644)  # as a repository's checkout would leave a file it ships
    assert cache.load() == {}
    cache.path.unlink()
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(json.dumps({"key": {"tools/list": {"params": params_digest({}), "result": {}}}}))
    elsewhere.chmod(0o600)
    cache.path.symlink_to(elsewhere)
    assert cache.load() == {}
    cache.store("tools/list", params_digest({}), {"tools": ["ours"]})  # replaces the link, never writes through it
    assert not cache.path.is_symlink() and json.loads(elsewhere.read_text())["key"]["tools/list"]["result"] == {}

    cache.path.write_text("{not json")
    cache.path.chmod(0o600)
    assert cache.load() == {}


def test_the_cache_keeps_a_bounded_number_of_configurations(tmp_path: Path) -> None:
    path = tmp_path / EARLY_ANSWERS_FILE
    for number in range(20):
        AnswerCache(path, f"configuration {number}").store("tools/list", "digest", {"n": number})
    kept = json.loads(path.read_text())
    assert list(kept) == [f"configuration {number}" for number in range(4, 20)]  # the newest 16
