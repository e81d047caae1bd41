"""The version of mcp-subagents (read by the build from here, shown by `--version` and in the server's info)."""

__version__ = "0.1.0"
