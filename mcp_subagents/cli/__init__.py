"""The command line: `mcp-subagents serve|run|agents|tasks|dashboard`, terminal output, `agents validate`.

May use: every other folder.
"""

from .entry import main

__all__ = ["main"]
