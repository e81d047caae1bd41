"""The vocabulary every layer shares, importing nothing of ours: messages and tool calls, errors, JSON values,
Claude Code's names (tools, model aliases, effort levels, modes), redaction, the scrubbed environment, state paths,
principals, processes and the one subprocess runner, well-formed text, glob roots, the points where hooks and
permission checks meet the loop.

May use: the standard library and pydantic; no other folder of this package.
"""
