"""Every malformed JSON-RPC message that carries an id gets an error answer, over stdio and over Streamable HTTP.

Before, 14 of these 27 got no answer over stdio (the host waits forever), and 4 over HTTP (202, as if they were
notifications).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support import http_server, server_environment

from .server import code_under_test

pytestmark = pytest.mark.anyio

# (request, the id the answer must carry): a string or integer id comes back; anything else is answered with null.
MALFORMED: dict[str, tuple[bytes, Any]] = {
    "no method": (b'{"jsonrpc":"2.0","id":1}', 1),
    "method is a number": (b'{"jsonrpc":"2.0","id":2,"method":5}', 2),
    "jsonrpc 1.0": (b'{"jsonrpc":"1.0","id":3,"method":"tools/list"}', 3),
    "no jsonrpc member": (b'{"id":4,"method":"tools/list"}', 4),
    "params is a string": (b'{"jsonrpc":"2.0","id":5,"method":"tools/list","params":"x"}', 5),
    "params is an array": (b'{"jsonrpc":"2.0","id":6,"method":"tools/list","params":[1,2]}', 6),
    "unknown method": (b'{"jsonrpc":"2.0","id":7,"method":"no/such"}', 7),
    "tools/call without params": (b'{"jsonrpc":"2.0","id":8,"method":"tools/call"}', 8),
    "tools/call without a name": (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"arguments":{}}}', 9),
    "tool name is a number": (b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":7}}', 10),
    "arguments are a list": (
        b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"TaskOutput","arguments":[1]}}',
        11,
    ),
    "id is a float": (b'{"jsonrpc":"2.0","id":12.5,"method":"tools/list"}', None),
    "id is a boolean": (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', None),
    "id is an object": (b'{"jsonrpc":"2.0","id":{"a":14},"method":"tools/list"}', None),
    "id is null": (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', None),
    "truncated JSON": (b'{"jsonrpc":"2.0","id":16,"method":"tools/list"', 16),
    "invalid UTF-8": (b'{"jsonrpc":"2.0","id":17,"method":"tools/\xff\xfelist"}', 17),
    "lone surrogate": (
        b'{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"TaskOutput","arguments":'
        b'{"task_id":"\\ud800"}}}',
        18,
    ),
    "nested 100000 deep": (
        b'{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"TaskOutput","arguments":{"task_id":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}}}",
        19,
    ),
    "a batch": (b'[{"jsonrpc":"2.0","id":20,"method":"tools/list"},{"jsonrpc":"2.0","id":21,"method":"ping"}]', 20),
    "an empty batch": (b"[]", None),
    "a bare string": (b'"tools/list"', None),
    "string id, params null": (b'{"jsonrpc":"2.0","id":"s23","method":"tools/call","params":null}', "s23"),
    "_meta is a number": (b'{"jsonrpc":"2.0","id":24,"method":"tools/list","params":{"_meta":5}}', 24),
    "cursor is a number": (b'{"jsonrpc":"2.0","id":25,"method":"tools/list","params":{"cursor":5}}', 25),
    "protocolVersion is a number": (
        b'{"jsonrpc":"2.0","id":26,"method":"initialize","params":{"protocolVersion":5}}',
        26,
    ),
    "id inside params only": (b'{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":{"id":1}}}', 27),
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "attack", "version": "1"}},
}


def environment(tmp_path: Path) -> dict[str, str]:
    return server_environment(tmp_path, work=tmp_path / "work") | code_under_test()


def error_answers(messages: list[dict[str, Any]], request_id: Any) -> list[dict[str, Any]]:
    return [message for message in messages if "error" in message and message.get("id") == request_id]


async def test_over_stdio(tmp_path: Path) -> None:
    process = await anyio.open_process(
        [sys.executable, "-m", "mcp_subagents", "serve"], env=environment(tmp_path), stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    out = BufferedByteReceiveStream(process.stdout)

    async def answers_until(sync_id: str) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while not seen or seen[-1].get("id") != sync_id:
            seen.append(json.loads(await out.receive_until(b"\n", 1 << 24)))
        return seen

    unanswered: list[str] = []
    async with process:
        with anyio.fail_after(60):
            await process.stdin.send(json.dumps(INITIALIZE).encode() + b"\n")
            await answers_until_id(out, 0)
            await process.stdin.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            for number, (name, (raw, request_id)) in enumerate(MALFORMED.items()):
                sync = f"sync-{number}"  # a ping after each: its answer comes after the malformed one's
                await process.stdin.send(
                    raw + b"\n" + json.dumps({"jsonrpc": "2.0", "id": sync, "method": "ping"}).encode() + b"\n"
                )
                if not error_answers(await answers_until(sync), request_id):
                    unanswered.append(name)
            await process.stdin.aclose()
    assert unanswered == []


async def answers_until_id(out: BufferedByteReceiveStream, request_id: Any) -> None:
    while json.loads(await out.receive_until(b"\n", 1 << 24)).get("id") != request_id:
        pass


async def test_over_streamable_http(tmp_path: Path) -> None:
    unanswered: list[str] = []
    async with http_server(tmp_path, "streamable-http", environ=environment(tmp_path)) as url:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx2.AsyncClient(timeout=30) as client:
            first = await client.post(url, headers=headers, json=INITIALIZE)
            headers |= {"mcp-protocol-version": "2025-11-25"}
            if "mcp-session-id" in first.headers:
                headers["mcp-session-id"] = first.headers["mcp-session-id"]
            await client.post(url, headers=headers, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            for name, (raw, request_id) in MALFORMED.items():
                response = await client.post(url, headers=headers, content=raw)
                if not error_answers(_messages(response), request_id):
                    unanswered.append(f"{name} ({response.status_code})")
    assert unanswered == []


def _messages(response: httpx2.Response) -> list[dict[str, Any]]:
    """JSON-RPC messages in a response body: plain JSON (one or a list) or SSE `data:` lines."""
    body = response.text.strip()
    if not body:
        return []
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        return [json.loads(line[5:]) for line in body.splitlines() if line.startswith("data:")]
    parsed = json.loads(body)
    return cast(list[dict[str, Any]], parsed) if isinstance(parsed, list) else [parsed]
