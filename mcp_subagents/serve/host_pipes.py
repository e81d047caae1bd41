"""Whether this process is a stdio server a host started: its command serves stdio, on pipes or sockets. Only
`os` and `stat`: the program's entry asks it before anything else is imported."""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def serves_stdio(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """`argv` (with its command) serves MCP on stdio, and stdin is a pipe or socket a host writes to."""
    if not argv or argv[0] != "serve" or any(word in ("-h", "--help", "--version") for word in argv):
        return False
    transport = environ.get("MCP_SUBAGENTS_TRANSPORT", "stdio")
    for index, word in enumerate(argv):
        if word == "--transport" and index + 1 < len(argv):
            transport = argv[index + 1]
        elif word.startswith("--transport="):
            transport = word.removeprefix("--transport=")
    return transport == "stdio" and is_wire(0)


def is_wire(fd: int) -> bool:
    """`fd` is a pipe or a socket: what a host hands its stdio server (not a terminal, not a file)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
