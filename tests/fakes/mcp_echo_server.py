"""A small real MCP server (the SDK's MCPServer over stdio) that agents start in the tests.

It records its life in the file named by ECHO_LOG: `started pid=N` when it starts, `called <tool>(...)` per call.
`spawn` starts a grandchild that would outlive a careless client, and reports both pids through a fifo.
"""

from __future__ import annotations

import os
import subprocess
import sys

from mcp.server import MCPServer

server = MCPServer("echosrv")
LOG = os.environ.get("ECHO_LOG")


def _log(line: str) -> None:
    if LOG:
        with open(LOG, "a", encoding="utf-8") as out:
            out.write(line + "\n")


@server.tool()
def shout(text: str) -> str:
    """Upper-cases the text."""
    _log(f"called shout({text})")
    return f"SHOUTED:{text.upper()}"


@server.tool()
def environment(name: str) -> str:
    """The value of an environment variable in the server's process, or <unset>."""
    return os.environ.get(name, "<unset>")


@server.tool()
def spawn(fifo: str) -> str:
    """Starts a long sleep and writes "<server pid> <sleep pid>" into the fifo."""
    child = subprocess.Popen(["sleep", "1000"])
    with open(fifo, "w", encoding="utf-8") as out:
        out.write(f"{os.getpid()} {child.pid}")
    return "spawned"


@server.tool()
def broken() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    _log(f"started pid={os.getpid()} args={sys.argv[1:]}")
    server.run("stdio")
