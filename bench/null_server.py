"""The cheapest stdio MCP server this bench could write: `json` and `sys` only, one tool that does nothing. Configured
in Claude Code in place of ours (bench/host.py), it measures what any one more MCP server costs Claude Code itself
(spawning it, the handshake, listing its tools): the floor under our configured-but-unused figure.

It answers the 2026-07-28 era's `server/discover` (tools only, nothing to subscribe to) as Claude Code 2.1.328 opens
with it, a 2025-era `initialize` (echoing the host's protocol version), `tools/list` and `ping`; any other request
gets "method not found".
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # not `typing`'s: this server imports json and sys only
if TYPE_CHECKING:
    from typing import Any

TOOL: dict[str, Any] = {
    "name": "Nothing",
    "description": "Does nothing.",
    "inputSchema": {"type": "object", "properties": {}},
}


DISCOVERED: dict[str, Any] = {
    "capabilities": {"tools": {}},
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "ttlMs": 0,
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "null", "version": "1"}},
}


def answer(method: Any, params: Any) -> dict[str, Any]:
    if method == "server/discover":
        return {"result": DISCOVERED}
    if method == "initialize":
        try:
            version = str(params["protocolVersion"])
        except (KeyError, TypeError):
            version = "2025-06-18"
        info: dict[str, Any] = {"protocolVersion": version, "capabilities": {"tools": {}}}
        return {"result": {**info, "serverInfo": {"name": "null", "version": "1"}}}
    if method == "tools/list":
        return {"result": {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "tools": [TOOL]}}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": f"method not found: {method}"}}


def main() -> None:
    for line in sys.stdin:
        try:
            request: Any = json.loads(line)
            identifier, method = request["id"], request["method"]  # a notification has no id: nothing to answer
        except (ValueError, KeyError, TypeError):
            continue
        reply = {"jsonrpc": "2.0", "id": identifier, **answer(method, request.get("params"))}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
